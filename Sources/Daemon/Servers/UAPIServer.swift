import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Serves the WireGuard cross-platform configuration protocol on
/// `/var/run/wireguard/<Name>.sock`, so the stock `wg show`, `wg showconf` and `wg set` work
/// against tunneld (https://www.wireguard.com/xplatform/).
///
/// Like wireguard-go: the directory is created 0755 if missing; the socket is 0600 (root or the
/// daemon's user only; `SO_PEERCRED` is checked as well); a stale socket left by a dead process
/// is replaced; one connection may carry several operations; a `get=1` is answered with the
/// snapshot from `get` and `errno=0`; a `set=1` is parsed line by line as it arrives
/// (`UAPISetParser`, never buffered as text) and handed to `set` only once complete, so a
/// malformed request changes nothing; a bad line's error is answered after the rest of the
/// operation is read (the connection stays usable); a `set=1` over `maxOperationBytes` (64 MiB)
/// is answered `errno=-EMSGSIZE` and the connection closed; an unknown operation closes the
/// connection.
///
/// `@unchecked Sendable`: all stored properties are immutable after `init`; `SocketListener` is
/// thread-safe.
public final class UAPIServer: @unchecked Sendable {
    /// Returns the device state for `get=1`.
    public typealias GetHandler = @Sendable () -> UAPIDeviceSnapshot
    /// Applies a parsed `set=1`; returns nil on success or the error to report.
    public typealias SetHandler = @Sendable (UAPISetRequest) -> UAPIError?

    /// Where `wg` looks for userspace interfaces on Linux.
    public static let defaultDirectory = "/var/run/wireguard"
    /// Largest `set=1` operation accepted (bytes, its lines and newlines): 64 MiB, enough for a
    /// peer with millions of AllowedIPs (issue 13 item 8).
    public static let maxOperationBytes = 64 << 20
    /// Longest line accepted (the longest valid one, an `endpoint=` with a bracketed IPv6
    /// address, is under 60 bytes).
    public static let maxLineBytes = 4096

    private let listener: SocketListener
    /// The socket path.
    public let path: String

    /// Receives failed operations (for the daemon's log; the protocol only carries the errno).
    public typealias ErrorLog = @Sendable (UAPIError) -> Void

    /// Creates `directory/<interfaceName>.sock` and starts serving.
    /// - Throws: `SocketError` when the name is not a valid interface name, the directory cannot
    ///   be created, or the socket cannot be bound (another process serving the name included).
    public init(
        interfaceName: String, directory: String = UAPIServer.defaultDirectory, ioTimeout: Duration = .seconds(5),
        get: @escaping GetHandler, set: @escaping SetHandler, log: ErrorLog? = nil
    ) throws(SocketError) {
        let path = directory + "/" + interfaceName + ".sock"
        guard (1...15).contains(interfaceName.utf8.count), !interfaceName.contains("/"), interfaceName != ".", interfaceName != ".." else {
            throw .badInterfaceName(interfaceName, path: path)
        }
        try UAPIServer.makeDirectory(directory)
        self.path = path
        let ownUID = UInt32(geteuid())
        let timeoutMs = SocketIO.ms(ioTimeout)
        listener = try SocketListener(path: path, mode: 0o600, gid: nil) { fd, creds in
            guard let creds, creds.uid == 0 || creds.uid == ownUID else { return }
            UAPIServer.serve(fd: fd, timeoutMs: timeoutMs, get: get, set: set, log: log)
        }
        listener.start(name: "tunneld-uapi")
    }

    /// Stops serving and removes the socket file.
    public func stop() { listener.stop() }

    deinit { listener.stop() }

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

    /// Serves operations on one connection until EOF, an error, or an unknown operation.
    static func serve(fd: Int32, timeoutMs: Int64, maxBytes: Int = maxOperationBytes, get: GetHandler, set: SetHandler,
                      log: ErrorLog?) {
        var reader = LineReader(fd: fd, limit: maxBytes)
        reader.lineLimit = maxLineBytes
        while true {
            reader.resetLimit()
            var deadline = SocketIO.nowMs() + timeoutMs
            guard case .success(let opLine) = reader.readLine(deadlineMs: deadline) else { return }
            let op = String(decoding: opLine, as: UTF8.self)
            var reply: String
            switch op {
            case "get=1":
                guard case .success(let blank) = reader.readLine(deadlineMs: deadline) else { return }
                if blank.isEmpty {
                    reply = UAPICodec.encodeGet(get()) + UAPICodec.statusLine(nil)
                } else {
                    let e = UAPIError.invalid("trailing data after get=1")
                    log?(e)
                    reply = UAPICodec.statusLine(e)
                }
            case "set=1":
                var parser = UAPISetParser()
                var failure: UAPIError?
                var tooLarge = false
                var lines = 0
                reading: while true {
                    switch reader.readLine(deadlineMs: deadline) {
                    case .success(let l) where l.isEmpty:
                        break reading
                    case .success(let l):
                        // A big request keeps its deadline while it keeps arriving.
                        lines += 1
                        if lines & 0x3ff == 0 { deadline = SocketIO.nowMs() + timeoutMs }
                        guard failure == nil else { continue }  // read the rest, parse no more
                        do throws(UAPIError) {
                            try l.withUnsafeBufferPointer { (p) throws(UAPIError) in
                                try parser.feed(String(decoding: p, as: UTF8.self))
                            }
                        } catch {
                            failure = error
                        }
                    case .failure(.tooLong):
                        failure = UAPIError(errno: EMSGSIZE, message: reader.total > maxBytes
                            ? "set operation larger than \(maxBytes) bytes" : "set line longer than \(maxLineBytes) bytes")
                        tooLarge = true
                        break reading
                    case .failure:
                        return
                    }
                }
                if failure == nil { failure = set(parser.finish()) }
                if let failure { log?(failure) }
                reply = UAPICodec.statusLine(failure)
                if tooLarge {
                    _ = try? SocketIO.writeAll(fd, Array(reply.utf8), deadlineMs: SocketIO.nowMs() + timeoutMs, path: "uapi")
                    return
                }
            default:
                return
            }
            guard (try? SocketIO.writeAll(fd, Array(reply.utf8), deadlineMs: SocketIO.nowMs() + timeoutMs, path: "uapi")) == true else { return }
        }
    }
}
