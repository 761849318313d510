import Core
/// A token of one rule line.
struct PolicyToken: Sendable {
    enum Kind: Sendable, Equatable { case word, comma, string }
    var kind: Kind
    /// The word, or the unescaped string contents.
    var text: String
    /// 1-based byte column of the token's first byte.
    var column: Int
}

/// Splits one line into words, commas and quoted strings; `#` outside a string starts a comment.
/// Strings take `\"` and `\\` escapes.
enum PolicyLexer {
    /// The tokens, the byte length of the line without its comment, or an error (column, message).
    static func tokenize(_ line: ArraySlice<UInt8>) -> Result<(tokens: [PolicyToken], codeEnd: Int), LexError> {
        var tokens: [PolicyToken] = []
        let base = line.startIndex
        var i = base
        let end = line.endIndex
        var codeEnd = end
        while i < end {
            let c = line[i]
            if c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") || c == UInt8(ascii: "\r") {
                i += 1
            } else if c == UInt8(ascii: "#") {
                codeEnd = i
                break
            } else if c == UInt8(ascii: ",") {
                tokens.append(PolicyToken(kind: .comma, text: ",", column: i - base + 1))
                i += 1
            } else if c == UInt8(ascii: "\"") {
                let start = i
                var bytes: [UInt8] = []
                i += 1
                var closed = false
                while i < end {
                    let d = line[i]
                    if d == UInt8(ascii: "\\") && i + 1 < end && (line[i + 1] == UInt8(ascii: "\"") || line[i + 1] == UInt8(ascii: "\\")) {
                        bytes.append(line[i + 1])
                        i += 2
                    } else if d == UInt8(ascii: "\"") {
                        closed = true
                        i += 1
                        break
                    } else {
                        bytes.append(d)
                        i += 1
                    }
                }
                guard closed else {
                    return .failure(LexError(column: start - base + 1, message: "unterminated string; close it with '\"'"))
                }
                tokens.append(PolicyToken(kind: .string, text: String(decoding: bytes, as: UTF8.self), column: start - base + 1))
            } else if c < 0x20 || c == 0x7F {
                return .failure(LexError(column: i - base + 1, message: "control character 0x\(String(c, radix: 16)) in rule text"))
            } else {
                let start = i
                while i < end {
                    let d = line[i]
                    if d == UInt8(ascii: " ") || d == UInt8(ascii: "\t") || d == UInt8(ascii: "\r") || d == UInt8(ascii: ",")
                        || d == UInt8(ascii: "#") || d == UInt8(ascii: "\"") || d < 0x20 || d == 0x7F
                    {
                        break
                    }
                    i += 1
                }
                tokens.append(PolicyToken(kind: .word, text: String(decoding: line[start..<i], as: UTF8.self), column: start - base + 1))
            }
        }
        return .success((tokens, codeEnd - base))
    }

    struct LexError: Error {
        var column: Int
        var message: String
    }
}
