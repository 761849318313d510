import Core
import Glibc
import Runtime
import SystemIO
import Testing

/// `SystemdNotifier`: sd_notify's datagram protocol to a path or an abstract (`@`) socket, and
/// the watchdog environment (sd_watchdog_enabled(3)).
@Suite struct SystemdNotifierTests {
    /// A datagram socket bound to `name` (`@…` abstract), and its descriptor.
    static func listener(_ name: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
        var a = sockaddr_un()
        a.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &a.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            if name.hasPrefix("@") { raw[0] = 0 }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (name.hasPrefix("@") ? 0 : 1))
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        try #require(rc == 0, "bind \(name): \(errno)")
        return fd
    }

    static func receive(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }

    @Test func sendsToAPathAndToAnAbstractSocket() throws {
        let path = "/tmp/tv-notify-\(getpid()).sock"
        unlink(path)
        defer { unlink(path) }
        for name in [path, "@tv-notify-test-\(getpid())"] {
            let fd = try Self.listener(name)
            defer { close(fd) }
            let notifier = try #require(try SystemdNotifier(environment: ["NOTIFY_SOCKET": name]))
            try notifier.send(["READY=1", "STATUS=1 of 2 peer(s) connected"])
            #expect(Self.receive(fd) == "READY=1\nSTATUS=1 of 2 peer(s) connected")
        }
    }

    @Test func noSocketNoNotifier() throws {
        #expect(try SystemdNotifier(environment: [:]) == nil)
        #expect(try SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]) == nil)
        #expect(throws: SystemError.self) { try SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative/path"]) }
    }

    @Test func watchdogPeriodOnlyForThisProcess() {
        #expect(SystemdNotifier.watchdogMicroseconds(environment: ["WATCHDOG_USEC": "30000000"]) == 30_000_000)
        #expect(SystemdNotifier.watchdogMicroseconds(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid())"]) == 30_000_000)
        #expect(SystemdNotifier.watchdogMicroseconds(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"]) == nil)
        #expect(SystemdNotifier.watchdogMicroseconds(environment: ["WATCHDOG_USEC": "0"]) == nil)
        #expect(SystemdNotifier.watchdogMicroseconds(environment: [:]) == nil)
    }
}
