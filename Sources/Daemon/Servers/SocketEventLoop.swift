import ControlProtocol
import Core
import Runtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The socket server's one thread: a `poll(2)` loop over a shutdown eventfd, every endpoint's
/// listening socket and every open connection.
///
/// 1. Accept every pending connection of each endpoint; read its `SO_PEERCRED` at once, before
///    any byte of it. A caller that may not use the socket gets its endpoint's refusal (a reply
///    queued, then the connection drained, never parsed; or a silent close). Limits are applied
///    per endpoint: over `maxPerUID` the oldest connection of that uid is closed, over
///    `maxConnections` the oldest of the uid that holds the most — so a uid flooding a socket
///    only ever pushes out its own connections.
/// 2. Read what is there from every readable connection, without waiting, as much as its
///    handler takes; the handler says what follows (read on, reply, close).
/// 3. Send what is queued on writable connections (POLLOUT); after the reply the handler's
///    `then` says close, drain, or go on with the next operation. Nothing is read from a
///    connection while its reply is unsent.
/// 4. Close whatever passed its deadline: `ioTimeout` from accept, or, on endpoints with
///    per-operation deadlines, from the start of the operation (renewed while a long one keeps
///    arriving). A client sending a byte a second holds one slot for that long and delays
///    nobody.
///
/// Handlers run on this thread: a slow one delays the other clients' replies.
///
/// `@unchecked Sendable`: everything but `stats` and `threadID` is touched only by the loop
/// thread (and by `init` before it starts); those two are thread-safe.
final class SocketEventLoop: @unchecked Sendable {
    let endpoints: [SocketEndpoint]
    let listenFDs: [Int32]
    let shutdown: EventNotifier
    let stats: [UnixSocketServer.StatsBox]
    let threadID = Mutex<UInt64?>(nil)
    private var connections: [SocketConnection] = []
    private var nextSerial: UInt64 = 0
    private var pollSet: [pollfd] = []
    private var scratch = [UInt8](repeating: 0, count: 65536)

    init(endpoints: [SocketEndpoint], listenFDs: [Int32], shutdown: EventNotifier) {
        self.endpoints = endpoints
        self.listenFDs = listenFDs
        self.shutdown = shutdown
        stats = endpoints.map { _ in UnixSocketServer.StatsBox() }
        pollSet.reserveCapacity(endpoints.reduce(1) { $0 + $1.limits.maxConnections + 1 })
    }

    private func timeoutMs(_ c: SocketConnection) -> Int64 { SocketIO.ms(endpoints[c.endpoint].limits.ioTimeout) }

    /// Runs until `shutdown` is signalled; closes every connection on the way out.
    func run() {
        threadID.withLock { $0 = UInt64(pthread_self()) }
        defer {
            for c in connections { Sys.close(c.fd) }
            connections.removeAll()
            updateOpen()
        }
        let first = 1 + listenFDs.count
        while true {
            pollSet.removeAll(keepingCapacity: true)
            pollSet.append(pollfd(fd: shutdown.descriptor, events: Int16(POLLIN), revents: 0))
            for fd in listenFDs { pollSet.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            var nearest = Int64.max
            for c in connections {
                let events = c.state == .writing ? Int16(POLLOUT) : Int16(POLLIN)
                pollSet.append(pollfd(fd: c.fd, events: events, revents: 0))
                nearest = min(nearest, c.deadlineMs)
            }
            let wait: Int32 = nearest == .max ? -1 : Int32(clamping: max(0, nearest - SocketIO.nowMs() + 1))
            let n = pollSet.withUnsafeMutableBufferPointer { p in
                Result { () throws(SystemError) in try Sys.call("poll(sockets)") { poll(p.baseAddress, nfds_t(p.count), wait) } }
            }
            guard case .success(let ready) = n else { return }
            if ready > 0 && pollSet[0].revents != 0 { return }
            // Connections first (their slots in pollSet match `connections` as it was), then accept.
            let listenReady = (0..<listenFDs.count).map { ready > 0 && pollSet[1 + $0].revents != 0 }
            if ready > 0 {
                for (i, c) in connections.enumerated() where pollSet[first + i].revents != 0 && c.fd >= 0 {
                    switch c.state {
                    case .reading: read(c)
                    case .draining: drain(c)
                    case .writing: write(c)
                    }
                }
            }
            expire(now: SocketIO.nowMs())
            connections.removeAll { $0.fd < 0 }
            for (i, r) in listenReady.enumerated() where r { acceptPending(i) }
            updateOpen()
        }
    }

    // MARK: - Accept and limits

    private func acceptPending(_ index: Int) {
        let endpoint = endpoints[index]
        while true {
            let fd: Int32
            do {
                guard let c = try Sys.accept(listenFDs[index], endpoint.name) else { return }
                fd = c
            } catch {
                return  // ECONNABORTED, EMFILE: try again on the next readiness
            }
            let creds = SocketIO.peerCredentials(fd)
            nextSerial += 1
            let refusal = endpoint.refusal(creds)
            let handler = refusal == nil ? creds.map { endpoint.makeHandler($0, stats[index]) } : nil
            let c = SocketConnection(fd: fd, endpoint: index, creds: creds, serial: nextSerial,
                                     deadlineMs: SocketIO.nowMs() + SocketIO.ms(endpoint.limits.ioTimeout), handler: handler)
            stats[index].update { $0.accepted += 1 }
            makeRoom(for: c.uid, endpoint: index)
            connections.append(c)
            switch refusal {
            case nil: break
            case .close?:
                stats[index].update { $0.refused += 1 }
                close(c)
            case .reply(let bytes)?:
                stats[index].update { $0.refused += 1 }
                queue(c, bytes, then: .drain)
            }
        }
    }

    /// Closes connections of `endpoint` until one more of `uid` fits under both limits.
    private func makeRoom(for uid: UInt32, endpoint: Int) {
        let limits = endpoints[endpoint].limits
        var mine = connections.filter { $0.endpoint == endpoint && $0.fd >= 0 }
        var same = mine.filter { $0.uid == uid }
        while same.count >= limits.maxPerUID, let oldest = same.min(by: { $0.serial < $1.serial }) {
            evict(oldest)
            same.removeAll { $0 === oldest }
            mine.removeAll { $0 === oldest }
        }
        while mine.count >= limits.maxConnections {
            var counts: [UInt32: Int] = [:]
            for c in mine { counts[c.uid, default: 0] += 1 }
            guard let heaviest = counts.max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) })?.key,
                  let oldest = mine.filter({ $0.uid == heaviest }).min(by: { $0.serial < $1.serial }) else { return }
            evict(oldest)
            mine.removeAll { $0 === oldest }
        }
    }

    private func evict(_ c: SocketConnection) {
        close(c)
        connections.removeAll { $0 === c }
        stats[c.endpoint].update { $0.evicted += 1 }
    }

    // MARK: - Reading, writing, deadlines

    private func read(_ c: SocketConnection) {
        guard let handler = c.handler else { return close(c) }
        let want = max(1, min(scratch.count, handler.readLimit))
        guard let n = receive(c, want) else { return }
        let step = n == 0 ? handler.endOfInput() : scratch.withUnsafeBytes { handler.received(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        if endpoints[c.endpoint].deadlinePerOperation, handler.progress != c.progress {
            c.progress = handler.progress
            c.deadlineMs = SocketIO.nowMs() + timeoutMs(c)
        }
        perform(c, step)
    }

    private func perform(_ c: SocketConnection, _ step: SocketStep) {
        switch step {
        case .read: break
        case .close: close(c)
        case .reply(let bytes, let then): queue(c, bytes, then: then)
        }
    }

    /// Reads and discards what a refused caller still sends, up to the request limit.
    private func drain(_ c: SocketConnection) {
        guard let n = receive(c, scratch.count) else { return }
        c.drained += n
        if n == 0 || c.drained > endpoints[c.endpoint].limits.maxRequestBytes { close(c) }
    }

    /// One nonblocking `recv` into `scratch`: the byte count (0 at EOF), nil when there was
    /// nothing after all or the connection failed (then it is closed).
    private func receive(_ c: SocketConnection, _ count: Int) -> Int? {
        let name = endpoints[c.endpoint].name
        let r = scratch.withUnsafeMutableBytes { p in
            Result { () throws(SystemError) in try Sys.receiveNonblocking(c.fd, UnsafeMutableRawBufferPointer(rebasing: p[0..<count]), name) }
        }
        switch r {
        case .success(let n?): return n
        case .success(nil): return nil
        case .failure:
            close(c)
            return nil
        }
    }

    /// Queues `bytes` and sends what the socket takes now.
    private func queue(_ c: SocketConnection, _ bytes: [UInt8], then: SocketStep.AfterReply) {
        c.output = bytes
        c.sent = 0
        c.after = then
        c.state = .writing
        if endpoints[c.endpoint].deadlinePerOperation { c.deadlineMs = SocketIO.nowMs() + timeoutMs(c) }
        write(c)
    }

    /// Sends what the socket takes; after a complete reply does what follows it. Operations a
    /// client sent ahead are answered in this loop, one reply at a time, until one does not fit
    /// the socket (then POLLOUT resumes it) or the handler needs more bytes.
    private func write(_ c: SocketConnection) {
        let name = endpoints[c.endpoint].name
        while true {
            while c.sent < c.output.count {
                let r = c.output.withUnsafeBytes { p in
                    Result { () throws(SystemError) in try Sys.sendNonblocking(c.fd, UnsafeRawBufferPointer(rebasing: p[c.sent...]), name) }
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
            switch c.after {
            case .close:
                return close(c)
            case .drain:
                try? Sys.shutdown(c.fd, Int32(SHUT_WR), name)
                c.state = .draining
                return
            case .next:
                c.state = .reading
                guard let handler = c.handler else { return close(c) }
                c.deadlineMs = SocketIO.nowMs() + timeoutMs(c)
                c.progress = handler.progress
                switch handler.resume() {
                case .read: return
                case .close: return close(c)
                case .reply(let bytes, let then):
                    c.output = bytes
                    c.sent = 0
                    c.after = then
                    c.state = .writing
                }
            }
        }
    }

    private func expire(now: Int64) {
        for c in connections where c.fd >= 0 && c.deadlineMs <= now {
            if c.state == .reading {
                stats[c.endpoint].update { $0.timedOut += 1 }
                if let last = c.handler?.timedOut() {
                    // Best effort: one nonblocking send of the reason, then close.
                    queue(c, last, then: .close)
                }
            } else if c.state == .writing {
                stats[c.endpoint].update { $0.timedOut += 1 }
            }
            close(c)
        }
    }

    private func close(_ c: SocketConnection) {
        guard c.fd >= 0 else { return }
        Sys.close(c.fd)
        c.fd = -1
    }

    private func updateOpen() {
        var open = [Int](repeating: 0, count: endpoints.count)
        for c in connections { open[c.endpoint] += 1 }
        for (i, s) in stats.enumerated() {
            s.update {
                $0.open = open[i]
                $0.peakOpen = max($0.peakOpen, open[i])
            }
        }
    }
}
