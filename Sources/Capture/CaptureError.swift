import Core
import Runtime

/// What went wrong with a capture file. Messages name the file and say what to do.
public enum CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libpcap could not open or create a file (its message is kept).
    case cannotOpen(path: String, message: String)
    /// A system call failed (the error names the call and the path).
    case system(SystemError)
    /// The BPF expression does not compile (libpcap's message is kept).
    case badFilter(expression: String, message: String)
    /// A capture file is not raw-IP (DLT_RAW), so it was not written by tunneld.
    case unexpectedLinkType(path: String, linkType: Int32)
    /// Writing or flushing a capture file failed (disk full?).
    case writeFailed(path: String, message: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let message):
            return "cannot open capture file \(path): \(message)"
        case .system(let e):
            return "capture: \(e)"
        case .badFilter(let expression, let message):
            return "invalid BPF filter '\(expression)': \(message) (see pcap-filter(7))"
        case .unexpectedLinkType(let path, let linkType):
            return "\(path) has link type \(linkType), not raw IP: it is not a tunneld capture file"
        case .writeFailed(let path, let message):
            return "writing capture file \(path) failed: \(message); check free space in the capture directory"
        }
    }
}
