import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The WireGuard cross-platform configuration protocol on `/var/run/wireguard/<Name>.sock`: the
/// endpoint `UnixSocketServer` serves it through (`endpoint(…)`), so the stock `wg show`, `wg showconf` and `wg set` work
/// against tunneld (https://www.wireguard.com/xplatform/).
///
/// Like wireguard-go: the directory is created 0755 if missing; the socket is 0600 (root or the
/// daemon's user only; `SO_PEERCRED` is checked as well); a stale socket left by a dead process
/// is replaced; one connection may carry several operations; a `get=1` is answered with the
/// snapshot from `get` and `errno=0`; a `set=1` is parsed line by line as it arrives
/// (`UAPIStream`, `UAPIProtocolHandler`; never buffered as text) and handed to `set` only once complete, so a
/// malformed request changes nothing; a bad line's error is answered after the rest of the
/// operation is read (the connection stays usable); a `set=1` over `maxOperationBytes` (64 MiB)
/// is answered `errno=-EMSGSIZE` and the connection closed; an unknown operation closes the
/// connection.
///
/// `@unchecked Sendable`: all stored properties are immutable after `init`; `UnixSocketServer`
/// is thread-safe.
public final class UAPIServer: @unchecked Sendable {
    /// Returns the device state for `get=1`.
    public typealias GetHandler = @Sendable () -> UAPIDeviceSnapshot
    /// Applies a parsed `set=1`; returns nil on success or the error to report.
    public typealias SetHandler = @Sendable (UAPISetRequest) -> UAPIError?

    /// Where `wg` looks for userspace interfaces on Linux.
    public static let defaultDirectory = "/var/run/wireguard"
    /// Largest `set=1` operation accepted (bytes, its lines and newlines): 64 MiB, enough for a
    /// peer with millions of AllowedIPs.
    public static let maxOperationBytes = 64 << 20
    /// Longest line accepted (the longest valid one, an `endpoint=` with a bracketed IPv6
    /// address, is under 60 bytes).
    public static let maxLineBytes = 4096

    /// The socket path.
    public let path: String
    private let server: UnixSocketServer

    /// Receives failed operations (for the daemon's log; the protocol only carries the errno).
    public typealias ErrorLog = @Sendable (UAPIError) -> Void

    /// `directory/<interfaceName>.sock` as an endpoint of a `UnixSocketServer` (the directory is
    /// made when the server starts). Connections: at most 512, 32 per uid; `ioTimeout` per
    /// operation, renewed while a big `set=1` keeps arriving.
    /// - Throws: `SocketError.badInterfaceName` when the name is not a valid interface name.
    public static func endpoint(
        interfaceName: String, directory: String = UAPIServer.defaultDirectory, ioTimeout: Duration = .seconds(5),
        maxOperationBytes: Int = UAPIServer.maxOperationBytes,
        get: @escaping GetHandler, set: @escaping SetHandler, log: ErrorLog? = nil
    ) throws(SocketError) -> SocketEndpoint {
        let path = directory + "/" + interfaceName + ".sock"
        guard (1...15).contains(interfaceName.utf8.count), !interfaceName.contains("/"), interfaceName != ".", interfaceName != ".." else {
            throw .badInterfaceName(interfaceName, path: path)
        }
        let ownUID = UInt32(geteuid())
        return SocketEndpoint(
            path: path, mode: 0o600, gid: nil, backlog: 16, name: path,
            limits: UnixSocketServer.Limits(ioTimeout: ioTimeout), deadlinePerOperation: true,
            prepare: { () throws(SocketError) in try makeDirectory(directory) },
            refusal: { creds in
                guard let creds, creds.uid == 0 || creds.uid == ownUID else { return .close }
                return nil
            },
            makeHandler: { _, _ in UAPIProtocolHandler(maxOperationBytes: maxOperationBytes, get: get, set: set, log: log) })
    }

    /// Creates `directory/<interfaceName>.sock` and starts serving it on a thread of its own
    /// (the daemon serves it with the control socket on one thread instead:
    /// `UnixSocketServer(endpoints:)` with `endpoint(…)`).
    /// - Throws: `SocketError` when the name is not a valid interface name, the directory cannot
    ///   be created, or the socket cannot be bound (another process serving the name included).
    public init(
        interfaceName: String, directory: String = UAPIServer.defaultDirectory, ioTimeout: Duration = .seconds(5),
        get: @escaping GetHandler, set: @escaping SetHandler, log: ErrorLog? = nil
    ) throws(SocketError) {
        let endpoint = try Self.endpoint(interfaceName: interfaceName, directory: directory, ioTimeout: ioTimeout,
                                         get: get, set: set, log: log)
        path = endpoint.path
        server = try UnixSocketServer(endpoints: [endpoint], threadName: "tunneld-uapi")
    }

    /// Stops serving and removes the socket file.
    public func stop() { server.stop() }

    deinit { server.stop() }

    /// `mkdir -p` with mode 0755 for the missing components.
    static func makeDirectory(_ directory: String) throws(SocketError) {
        if let st = Sys.statIfPresent(directory) {
            guard st.st_mode & S_IFMT == S_IFDIR else { throw .notADirectory(path: directory) }
            return
        }
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex {
            try makeDirectory(String(directory[..<slash]))
        }
        do { try Sys.mkdirIfMissing(directory, 0o755) } catch { throw .system(error) }
    }
}
