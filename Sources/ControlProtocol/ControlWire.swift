import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The control socket's framing and envelope (documented in docs/control.md).
///
/// One connection carries exactly one exchange: the client writes one request as a single line
/// of compact JSON terminated by `\n`, the server writes one response the same way and closes.
/// JSON never contains a raw newline (the encoder escapes it in strings), so the line is the
/// frame. Every message carries `"version"`; a server refuses a request whose version is newer
/// than its own with `unsupportedVersion`. Requests are limited to `maxRequestBytes`.
public enum ControlWire {
    /// The envelope version this build speaks.
    public static let version = 1
    /// Largest request line the server reads (bytes, newline included).
    public static let maxRequestBytes = 64 * 1024
    /// Largest response line the client reads (bytes, newline included).
    public static let maxResponseBytes = 16 * 1024 * 1024

    /// The framed bytes of a request: compact JSON, sorted keys, `\n`.
    public static func encode(_ request: ControlRequest) -> [UInt8] {
        frame(request)
    }

    /// The framed bytes of a response: compact JSON, sorted keys, `\n`.
    public static func encode(_ response: ControlResponse) -> [UInt8] {
        frame(response)
    }

    static func frame(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own value types cannot fail (no floats, no custom throwing encoders).
        guard let data = try? encoder.encode(value) else { return Array("{}\n".utf8) }
        var bytes = [UInt8](data)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Decodes one request line (without its `\n`). Never throws: a line that is not a request
    /// becomes the error reply to send back.
    public static func decodeRequest(_ line: [UInt8]) -> Result<ControlRequest, ControlErrorReply> {
        struct Version: Decodable { var version: Int? }
        let data = Data(line)
        guard let v = try? JSONDecoder().decode(Version.self, from: data) else {
            return .failure(ControlErrorReply(code: .malformedRequest, message: "request is not a JSON object"))
        }
        guard let version = v.version else {
            return .failure(ControlErrorReply(code: .malformedRequest, message: "request has no \"version\""))
        }
        guard version <= ControlWire.version, version >= 1 else {
            return .failure(ControlErrorReply(
                code: .unsupportedVersion,
                message: "request version \(version) is not supported; this daemon speaks version \(ControlWire.version)"))
        }
        do {
            return .success(try JSONDecoder().decode(ControlRequest.self, from: data))
        } catch {
            return .failure(ControlErrorReply(code: .malformedRequest, message: "malformed request: \(describe(error))"))
        }
    }

    /// Decodes one response line (without its `\n`).
    public static func decodeResponse(_ line: [UInt8]) -> Result<ControlResponse, ControlErrorReply> {
        do {
            return .success(try JSONDecoder().decode(ControlResponse.self, from: Data(line)))
        } catch {
            return .failure(ControlErrorReply(code: .malformedRequest, message: "malformed reply: \(describe(error))"))
        }
    }

    /// A short description of a decoding error (the field path and what was wrong).
    static func describe(_ error: any Error) -> String {
        guard let e = error as? DecodingError else { return "not valid JSON" }
        func path(_ c: DecodingError.Context) -> String {
            let p = c.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return p.isEmpty ? "" : " at \(p)"
        }
        switch e {
        case .keyNotFound(let k, let c): return "missing field \"\(k.stringValue)\"\(path(c))"
        case .typeMismatch(_, let c), .valueNotFound(_, let c): return "wrong type\(path(c))"
        case .dataCorrupted(let c): return c.codingPath.isEmpty ? "not valid JSON" : "bad value\(path(c))"
        @unknown default: return "not valid JSON"
        }
    }
}
