import Engine
import SystemIO
import Core
import Config
import Glibc
import Packet
import Runtime

/// `tunneld --selftest-bringup NAME MTU ADDR/LEN... [--route CIDR...] [--hold-after-teardown]`:
/// a hidden diagnostic mode for scripts/e2e/netlink.sh. It opens TUN interface NAME, configures it
/// with ``NetlinkInterfaceConfigurator`` (MTU, addresses, link up, routes), prints each step and
/// `ready`, waits for SIGTERM/SIGINT, undoes everything and prints `teardown: done`. With
/// `--hold-after-teardown` it then keeps the (now bare, down) interface until a second signal, so a
/// script can check that tear-down removed exactly what bring-up added; after a failed bring-up it
/// likewise holds the rolled-back interface.
///
/// Exit status: 0 after a clean tear-down, 1 when bring-up or tear-down failed (the kernel's error
/// on stderr), 2 for bad arguments.
public enum BringUpSelfTest {
    /// Runs the mode with the arguments after `--selftest-bringup`; returns the exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        var positional: [String] = []
        var routes: [IPPrefix] = []
        var hold = false
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--route" {
                i += 1
                while i < arguments.count && !arguments[i].hasPrefix("--") {
                    guard let p = IPPrefix(arguments[i]) else { return usage("'\(arguments[i])' is not a prefix") }
                    routes.append(p)
                    i += 1
                }
                continue
            }
            if a == "--hold-after-teardown" {
                hold = true
            } else if a.hasPrefix("--") {
                return usage("unknown option '\(a)'")
            } else {
                positional.append(a)
            }
            i += 1
        }
        guard positional.count >= 2 else { return usage("NAME and MTU are required") }
        guard let mtu = Int(positional[1]) else { return usage("MTU '\(positional[1])' is not a number") }
        var addresses: [InterfaceAddress] = []
        for text in positional.dropFirst(2) {
            guard let a = InterfaceAddress(text) else { return usage("'\(text)' is not ADDRESS/LENGTH") }
            addresses.append(a)
        }
        let name = positional[0]

        do {
            let signals = try SignalWatcher(signals: [SIGTERM, SIGINT])
            let never = try EventNotifier()
            let tun = try LinuxTun(name: name, mtu: mtu)
            say("tun: opened \(tun.name)")
            let configurator = try NetlinkInterfaceConfigurator()
            do {
                try configurator.bringUp(name: tun.name, mtu: mtu, addresses: addresses, routes: routes)
            } catch {
                fail(error)
                if hold {
                    // Keep the rolled-back interface so a script can check nothing was left configured.
                    say("holding")
                    var signal: Int32? = nil
                    while signal == nil { signal = try signals.wait(timeoutMilliseconds: -1, shutdown: never) }
                }
                return 1
            }
            for step in configurator.journal { say("bringup: \(step)") }
            say("ready")
            var signal: Int32? = nil
            while signal == nil { signal = try signals.wait(timeoutMilliseconds: -1, shutdown: never) }
            say("signal: \(signal!)")
            let undone = configurator.undoOrder
            let errors = configurator.tearDown()
            for e in errors { fail(e) }
            for step in undone { say("teardown: undid \(step)") }
            say("teardown: done")
            if hold {
                say("holding")
                signal = nil
                while signal == nil { signal = try signals.wait(timeoutMilliseconds: -1, shutdown: never) }
            }
            tun.close()
            return errors.isEmpty ? 0 : 1
        } catch {
            fail(error)
            return 1
        }
    }

    private static func say(_ line: String) { emit(1, line + "\n") }

    private static func fail(_ error: any Error) { emit(2, "tunneld: \(error)\n") }

    /// Unbuffered write, so a script reading our pipe sees each line at once.
    private static func emit(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = try? Sys.writeAll(fd, UnsafeRawBufferPointer(bytes), "fd \(fd)") }
    }

    private static func usage(_ problem: String) -> Int32 {
        emit(
            2,
            "tunneld: \(problem)\nusage: tunneld --selftest-bringup NAME MTU ADDR/LEN... [--route CIDR...] [--hold-after-teardown]\n")
        return 2
    }
}
