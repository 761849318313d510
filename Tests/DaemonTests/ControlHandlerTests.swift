import ControlProtocol
import Core
@testable import Daemon
import Synchronization
import Testing

/// `ControlHandler` over the daemon harness: each request reaches the part that owns its answer,
/// and a request naming something unknown is a `notFound` error, not a default answer.
@Suite(.serialized) struct ControlHandlerTests {
    static let caller = PeerCredentials(pid: 1, uid: 0, gid: 0)

    /// What the program-side closures were asked to do.
    final class Calls: Sendable {
        let reloads = Mutex(0)
        let policyReloads = Mutex<[Bool]>([])
    }

    func handler(_ h: DaemonHarness, _ calls: Calls) -> ControlHandler {
        let engine = h.engine
        return ControlHandler(
            engine: engine, sessions: h.sessions, observe: Observe(observer: h.observer, poller: nil),
            policyDirectory: h.dir + "/no-such-policies", log: engine.log,
            status: { engine.statusReply(interface: "tv0", addresses: [], listenPort: 0, version: "test") },
            metricsText: { "# metrics\n" },
            policyReloaded: { ok in calls.policyReloads.withLock { $0.append(ok) } },
            reloadConfig: {
                calls.reloads.withLock { $0 += 1 }
                return .reload(ReloadReply(added: ["bob"], policyGeneration: 1))
            })
    }

    @Test func eachRequestIsAnsweredByItsOwner() throws {
        let h = try DaemonHarness()
        let calls = Calls()
        let control = handler(h, calls)
        func ask(_ r: ControlRequest) -> ControlResponse { control.respond(to: r, from: Self.caller) }

        guard case .status(let s) = ask(.status) else { Issue.record("status"); return }
        #expect(s.interface == "tv0" && s.version == "test")
        guard case .peers(let peers) = ask(.peers) else { Issue.record("peers"); return }
        #expect(peers.map(\.name) == ["alice"])
        guard case .metrics(let text) = ask(.metrics) else { Issue.record("metrics"); return }
        #expect(text == "# metrics\n")
        guard case .kick(let kick) = ask(.kick(peer: "alice")) else { Issue.record("kick"); return }
        #expect(kick.peer == "alice")
        guard case .reload(let reload) = ask(.reload) else { Issue.record("reload"); return }
        #expect(reload.added == ["bob"] && calls.reloads.withLock { $0 } == 1)
        guard case .policyReload = ask(.policyReload) else { Issue.record("policyReload"); return }
        #expect(calls.policyReloads.withLock { $0.count } == 1)
    }

    @Test func unknownNamesAreNotFound() throws {
        let h = try DaemonHarness()
        let control = handler(h, Calls())
        func code(_ r: ControlRequest) -> ControlErrorCode? {
            guard case .error(let e) = control.respond(to: r, from: Self.caller) else { return nil }
            return e.code
        }
        #expect(code(.kick(peer: "mallory")) == .notFound)
        #expect(code(.peerTier(peer: "mallory", tier: .free)) == .notFound)
        #expect(code(.peerTier(peer: "alice", tier: PeerTier(rawValue: "gold")!)) == .notFound)
        #expect(code(.unknown(type: "frobnicate")) == .unknownRequest)
    }
}
