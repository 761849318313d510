import ControlProtocol
import Core
import Runtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The control server's one thread: a `poll(2)` loop over the listening socket, a shutdown
/// eventfd and every open connection (issue 13 item 5).
///
/// 1. Accept every pending connection; read its `SO_PEERCRED` at once, before any byte of it.
///    A caller that may not use the socket gets `permissionDenied` queued right away (then its
///    connection is drained, never parsed). Limits are applied here: over `maxPerUID` the
///    oldest connection of that uid is closed, over `maxConnections` the oldest of the uid that
///    holds the most — so a uid flooding the socket only ever pushes out its own connections.
/// 2. Read what is there from every readable connection, without waiting, up to
///    `maxRequestBytes`; a complete line is decoded and answered (the handler runs on this
///    thread), an oversized one gets `requestTooLarge`.
/// 3. Send what is queued on writable connections; close them when done.
/// 4. Close whatever passed its deadline (`ioTimeout` from accept): a client sending a byte a
///    second holds one slot for that long and delays nobody.
///
/// `@unchecked Sendable`: everything but `statsValue` is touched only by the loop thread (and
/// by `init` before it starts); `statsValue` is a `Mutex`.
final class ControlEventLoop: @unchecked Sendable {
    let listenFD: Int32
    let shutdown: EventNotifier
    let limits: ControlServer.Limits
    let ownUID: UInt32
    let group: UInt32?
    let log: Logger?
    let handler: ControlServer.Handler
    private var connections: [ControlConnection] = []
    private var nextSerial: UInt64 = 0
    private var pollSet: [pollfd] = []
    private var scratch = [UInt8](repeating: 0, count: 16384)
    let statsValue = Mutex(ControlServer.Stats())

    init(listenFD: Int32, shutdown: EventNotifier, limits: ControlServer.Limits, ownUID: UInt32, group: UInt32?,
         log: Logger?, handler: @escaping ControlServer.Handler) {
        self.listenFD = listenFD
        self.shutdown = shutdown
        self.limits = limits
        self.ownUID = ownUID
        self.group = group
        self.log = log
        self.handler = handler
        pollSet.reserveCapacity(limits.maxConnections + 2)
    }

    private var timeoutMs: Int64 { SocketIO.ms(limits.ioTimeout) }

    /// Runs until `shutdown` is signalled; closes every connection on the way out. The listening
    /// socket must be nonblocking (`ControlServer.init` makes it so): accept runs until EAGAIN.
    func run() {
        defer {
            for c in connections { Sys.close(c.fd) }
            connections.removeAll()
            updateOpen()
        }
        while true {
            pollSet.removeAll(keepingCapacity: true)
            pollSet.append(pollfd(fd: shutdown.descriptor, events: Int16(POLLIN), revents: 0))
            pollSet.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0))
            var nearest = Int64.max
            for c in connections {
                let events = c.state == .writing ? Int16(POLLOUT) : Int16(POLLIN)
                pollSet.append(pollfd(fd: c.fd, events: events, revents: 0))
                nearest = min(nearest, c.deadlineMs)
            }
            let wait: Int32 = nearest == .max ? -1 : Int32(clamping: max(0, nearest - SocketIO.nowMs() + 1))
            let n = pollSet.withUnsafeMutableBufferPointer { p in
                Result { () throws(SystemError) in try Sys.call("poll(control.sock)") { poll(p.baseAddress, nfds_t(p.count), wait) } }
            }
            guard case .success(let ready) = n else { return }
            if ready > 0 && pollSet[0].revents != 0 { return }
            // Connections first (their slots in pollSet match `connections` as it was), then accept.
            let listenReady = ready > 0 && pollSet[1].revents != 0
            if ready > 0 {
                var i = 0
                for c in connections {
                    let revents = pollSet[2 + i].revents
                    i += 1
                    guard revents != 0 else { continue }
                    switch c.state {
                    case .reading: read(c)
                    case .draining: drain(c)
                    case .writing: write(c)
                    }
                }
            }
            expire(now: SocketIO.nowMs())
            connections.removeAll { $0.fd < 0 }
            if listenReady { acceptPending() }
            updateOpen()
        }
    }

    // MARK: - Accept and limits

    private func acceptPending() {
        while true {
            let fd: Int32
            do {
                guard let c = try Sys.accept(listenFD, "control.sock") else { return }
                fd = c
            } catch {
                return  // ECONNABORTED, EMFILE: try again on the next readiness
            }
            let creds = SocketIO.peerCredentials(fd)
            nextSerial += 1
            let c = ControlConnection(fd: fd, creds: creds, serial: nextSerial, deadlineMs: SocketIO.nowMs() + timeoutMs,
                                      state: .reading)
            statsValue.withLock { $0.accepted += 1 }
            makeRoom(for: c.uid)
            connections.append(c)
            guard let creds else {
                refuse(c, "cannot read the caller's credentials (SO_PEERCRED)")
                continue
            }
            guard ControlServer.isAuthorized(creds, ownUID: ownUID, group: group) else {
                log?.warning("control.sock: refused uid \(creds.uid) (pid \(creds.pid))")
                refuse(c, "uid \(creds.uid) may not use the control socket")
                continue
            }
        }
    }

    /// Closes connections until one more of `uid` fits under both limits.
    private func makeRoom(for uid: UInt32) {
        var mine = 0
        for c in connections where c.uid == uid { mine += 1 }
        while mine >= limits.maxPerUID, let oldest = connections.filter({ $0.uid == uid }).min(by: { $0.serial < $1.serial }) {
            evict(oldest)
            mine -= 1
        }
        while connections.count >= limits.maxConnections {
            var counts: [UInt32: Int] = [:]
            for c in connections { counts[c.uid, default: 0] += 1 }
            guard let heaviest = counts.max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) })?.key,
                  let oldest = connections.filter({ $0.uid == heaviest }).min(by: { $0.serial < $1.serial }) else { return }
            evict(oldest)
        }
    }

    private func evict(_ c: ControlConnection) {
        close(c)
        connections.removeAll { $0 === c }
        statsValue.withLock { $0.evicted += 1 }
    }

    private func refuse(_ c: ControlConnection, _ message: String) {
        statsValue.withLock { $0.refused += 1 }
        c.closeAfterWrite = false
        queue(c, .failure(.permissionDenied, message))
    }

    // MARK: - Reading, writing, deadlines

    private func read(_ c: ControlConnection) {
        let limit = limits.maxRequestBytes
        let want = min(scratch.count, limit - c.received + 1)
        guard let n = receive(c, max(1, want)) else { return }
        if n == 0 {
            if c.input.isEmpty {
                close(c)
            } else {
                queue(c, .failure(.malformedRequest, "request not terminated by a newline"))
            }
            return
        }
        let scanFrom = c.input.count
        c.input.append(contentsOf: scratch[0..<n])
        c.received += n
        if let nl = c.input[scanFrom...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = Array(c.input[..<nl])
            c.input = []
            answer(c, line)
        } else if c.received >= limit {
            c.input = []
            statsValue.withLock { $0.tooLarge += 1 }
            queue(c, .failure(.requestTooLarge, "request larger than \(limit) bytes"))
        }
    }

    private func answer(_ c: ControlConnection, _ line: [UInt8]) {
        guard let creds = c.creds else { return }
        switch ControlWire.decodeRequest(line) {
        case .failure(let e): queue(c, .error(e))
        case .success(.unknown(let type)):
            queue(c, .failure(.unknownRequest, "unknown request '\(type)'; this daemon knows status, peers, policyReload, policyShow, kick"))
        case .success(let request):
            let reply = handler(request, creds)
            statsValue.withLock { $0.served += 1 }
            queue(c, reply)
        }
    }

    /// Reads and discards what a refused caller still sends, up to the request limit.
    private func drain(_ c: ControlConnection) {
        guard let n = receive(c, scratch.count) else { return }
        c.received += n
        if n == 0 || c.received > limits.maxRequestBytes { close(c) }
    }

    /// One nonblocking `recv` into `scratch`: the byte count (0 at EOF), nil when there was
    /// nothing after all or the connection failed (then it is closed).
    private func receive(_ c: ControlConnection, _ count: Int) -> Int? {
        let r = scratch.withUnsafeMutableBytes { p in
            Result { () throws(SystemError) in try Sys.receiveNonblocking(c.fd, UnsafeMutableRawBufferPointer(rebasing: p[0..<count]), "control.sock") }
        }
        switch r {
        case .success(let n?): return n
        case .success(nil): return nil
        case .failure:
            close(c)
            return nil
        }
    }

    /// Queues `response` and sends what the socket takes now.
    private func queue(_ c: ControlConnection, _ response: ControlResponse) {
        c.output = ControlWire.encode(response)
        c.sent = 0
        c.state = .writing
        write(c)
    }

    private func write(_ c: ControlConnection) {
        while c.sent < c.output.count {
            let r = c.output.withUnsafeBytes { p in
                Result { () throws(SystemError) in try Sys.sendNonblocking(c.fd, UnsafeRawBufferPointer(rebasing: p[c.sent...]), "control.sock") }
            }
            switch r {
            case .success(let n?): c.sent += n
            case .success(nil): return  // socket buffer full: wait for POLLOUT
            case .failure:
                close(c)
                return
            }
        }
        c.output = []
        if c.closeAfterWrite {
            close(c)
        } else {
            try? Sys.shutdown(c.fd, Int32(SHUT_WR), "control.sock")
            c.state = .draining
        }
    }

    private func expire(now: Int64) {
        for c in connections where c.fd >= 0 && c.deadlineMs <= now {
            if c.state == .reading {
                // Best effort: one nonblocking send of the reason, then close.
                statsValue.withLock { $0.timedOut += 1 }
                c.closeAfterWrite = true
                queue(c, .failure(.malformedRequest, "no complete request within \(timeoutMs) ms"))
            } else if c.state == .writing {
                statsValue.withLock { $0.timedOut += 1 }
            }
            if c.fd >= 0 { close(c) }
        }
    }

    private func close(_ c: ControlConnection) {
        guard c.fd >= 0 else { return }
        Sys.close(c.fd)
        c.fd = -1
    }

    private func updateOpen() {
        let open = connections.count
        statsValue.withLock {
            $0.open = open
            $0.peakOpen = max($0.peakOpen, open)
        }
    }
}
