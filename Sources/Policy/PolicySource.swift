import Core
/// One rule file's name and text. The name is what errors print (`policies/10-base.rules`).
public struct PolicySource: Sendable, Hashable {
    public var name: String
    public var text: String
    public init(name: String, text: String) {
        self.name = name
        self.text = text
    }
}
