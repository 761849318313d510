import Core
import Foundation
import Glibc
import Testing

@testable import Runtime

/// `Logger.standardError`: `<N>` priority prefixes for journald and other collectors, plain lines
/// for a person at a terminal.
@Suite struct LoggerTests {
    /// A pseudo-terminal: (controlling side, terminal side). posix_openpt & co. are not in the
    /// Glibc module, so this is their Linux implementation: /dev/ptmx, unlock, pts number.
    static func pty() throws -> (master: Int32, slave: Int32) {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        let TIOCSPTLCK: UInt = 0x4004_5431, TIOCGPTN: UInt = 0x8004_5430  // asm-generic/ioctls.h
        var unlock: Int32 = 0
        var number: UInt32 = 0
        try #require(ioctl(master, TIOCSPTLCK, &unlock) == 0 && ioctl(master, TIOCGPTN, &number) == 0)
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        try #require(slave >= 0)
        return (master, slave)
    }

    /// What arrived on `fd` (non-blocking read of what is there), `\r` dropped (the tty's onlcr).
    static func drain(_ fd: Int32) -> String {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var idle = 0
        while idle < 20 {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { out += buffer[0..<n]; idle = 0 } else { usleep(5_000); idle += 1 }
        }
        return String(decoding: out.filter { $0 != 13 }, as: UTF8.self)
    }

    @Test(.enabled(if: access("/dev/ptmx", R_OK | W_OK) == 0, "needs a pseudo-terminal"))
    func noPrefixesOnATerminalUnlessJournald() throws {
        let (master, slave) = try Self.pty()
        defer { close(master); close(slave) }
        #expect(!Logger.usesPriorityPrefixes(fd: slave, journalStream: false))
        #expect(Logger.usesPriorityPrefixes(fd: slave, journalStream: true))
        if getenv("JOURNAL_STREAM") == nil {
            let log = Logger.standardError(fd: slave, timestamps: false)
            log.warning("policy: x.rules:1:1: warning: something")
            log.error("bad")
            #expect(Self.drain(master) == "policy: x.rules:1:1: warning: something\nbad\n")
        }
    }

    @Test func prefixesWhenNotATerminal() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        #expect(Logger.usesPriorityPrefixes(fd: fds[1], journalStream: false))
        let log = Logger.standardError(fd: fds[1], timestamps: false)
        log.warning("w")
        log.info("i")
        log.debug("not shown at the default level")
        #expect(Self.drain(fds[0]) == "<4>w\n<6>i\n")
    }
}

extension LoggerTests {
    @Test func linesCarryTheirUTCTimeWhenAsked() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let log = Logger.standardError(fd: fds[1], timestamps: true)
        log.notice("n")
        let line = Self.drain(fds[0])
        #expect(line.range(of: #"^<5>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z n\n$"#, options: .regularExpression) != nil, "\(line)")
    }

    @Test func eventsAreOneLineWithTheirFieldsOffTheJournal() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let log = Logger.standardError(fd: fds[1], timestamps: false)
        log.event(.sessionEnd(peer: "alice", tier: .free, reason: .freeLimit))
        #expect(Self.drain(fds[0])
            == "<6>peer alice: session ended (free-limit) TUNNELVISION_EVENT=session-end PEER=alice TIER=free REASON=free-limit\n")
    }

    @Test func journalStreamMustNameTheDescriptor() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var st = stat()
        try #require(fstat(fds[1], &st) == 0)
        #expect(Logger.isJournal(fd: fds[1], journalStream: "\(st.st_dev):\(st.st_ino)"))
        #expect(!Logger.isJournal(fd: fds[1], journalStream: "\(st.st_dev):\(st.st_ino + 1)"))
        #expect(!Logger.isJournal(fd: fds[1], journalStream: "garbage"))
    }

    @Test func journalEntryHasMessagePriorityAndFields() {
        #expect(Logger.journalFields(.refusal(peer: "bob", tier: .free, reason: "free-pause")) == [
            "MESSAGE=peer bob: handshake refused (free-pause); further refusals are counted, not logged", "PRIORITY=5",
            "SYSLOG_IDENTIFIER=tunneld", "TUNNELVISION_EVENT=refusal", "PEER=bob", "TIER=free", "REASON=free-pause",
        ])
    }
}

/// `ProcessArguments`: the kernel's copy of argv when the runtime's is empty (LD_PRELOAD).
@Suite struct ProcessArgumentsTests {
    @Test func parsesNulSeparatedArguments() {
        #expect(ProcessArguments.parse(Array("tunneld\0--config\0/tmp/x y.conf\0".utf8)) == ["tunneld", "--config", "/tmp/x y.conf"])
        #expect(ProcessArguments.parse(Array("a\0\0b".utf8)) == ["a", "", "b"])
        #expect(ProcessArguments.parse([]) == [])
    }

    @Test func procFileMatchesTheRuntime() {
        #expect(ProcessArguments.fromProcFile("/proc/self/cmdline") == CommandLine.arguments)
        #expect(ProcessArguments.current == CommandLine.arguments)
        #expect(ProcessArguments.fromProcFile("/nonexistent/cmdline") == nil)
    }
}
