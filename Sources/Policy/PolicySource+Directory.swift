import Core
import Foundation

extension PolicySource {
    /// Reads every `*.rules` file directly in `directory` (not in subdirectories), sorted by the
    /// bytes of their names. Names are given as `directory/file`. This is the module's only I/O, so
    /// that `tunneld` and `tunnelctl` read a policy directory the same way.
    public static func loadDirectory(_ directory: String) throws -> [PolicySource] {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDir) else {
            throw PolicyLoadError(message: "\(directory): no such directory")
        }
        guard isDir.boolValue else { throw PolicyLoadError(message: "\(directory): not a directory") }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw PolicyLoadError(message: "\(directory): cannot list the directory (\(error.localizedDescription))")
        }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        var out: [PolicySource] = []
        for name in names.filter({ $0.hasSuffix(".rules") }).sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            let path = prefix + name
            guard let data = FileManager.default.contents(atPath: path) else {
                throw PolicyLoadError(message: "\(path): cannot read the file")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw PolicyLoadError(message: "\(path): not UTF-8 text")
            }
            out.append(PolicySource(name: path, text: text))
        }
        return out
    }
}

/// A policy directory or file that could not be read.
public struct PolicyLoadError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}
