import Core
import Foundation
import Testing

/// `replacingAll` replaces as Foundation's `replacingOccurrences` did, for the needles the code
/// uses (ASCII), on random text with ASCII, accents, emoji and CR LF.
@Suite struct ReplacingTests {
    @Test func agreesWithFoundation() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = ["a", "b", "\\", "\"", "\n", "\r\n", "%i", "%", "i", "é", "👍", "-", "->", ":", "'", "/", "+"]
        let needles = ["\\", "\"", "\n", "%i", "->", ":", "'", "/", "+", "-", "ab", "aa"]
        for _ in 0..<3000 {
            let text = (0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }.joined()
            for n in needles {
                #expect(text.replacingAll(n, with: "<\(n)>") == text.replacingOccurrences(of: n, with: "<\(n)>"), "\(text.debugDescription) \(n)")
            }
        }
        #expect("a\r\nb".replacingAll("\n", with: "\\n") == "a\r\\nb")
        #expect("".replacingAll("x", with: "y") == "" && "abc".replacingAll("", with: "y") == "abc")
    }
}
