// tunneld: the gateway daemon. Everything lives in the Daemon module (Program/Tunneld.swift).
import Core
import Daemon
import Glibc
import Runtime

let arguments = Array(ProcessArguments.current.dropFirst())
if arguments.first == "--selftest-bringup" {
    // Hidden diagnostic mode for scripts/e2e/netlink.sh (see Daemon/Program/BringUpSelfTest.swift).
    exit(BringUpSelfTest.run(Array(arguments.dropFirst())))
}
exit(Tunneld.main(arguments))
