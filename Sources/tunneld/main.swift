// tunneld: the gateway daemon. Everything lives in the Gateway module (Tunneld.swift).
import Core
import Daemon
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--selftest-bringup" {
    // Hidden diagnostic mode for scripts/e2e/netlink.sh (see Gateway/BringUpSelfTest.swift).
    exit(BringUpSelfTest.run(Array(arguments.dropFirst())))
}
exit(Tunneld.main(arguments))
