// tunneld: the gateway daemon (filled by the gateway issue).
import Gateway
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--selftest-bringup" {
    // Hidden diagnostic mode for scripts/e2e/netlink.sh (see Gateway/BringUpSelfTest.swift).
    exit(BringUpSelfTest.run(Array(arguments.dropFirst())))
}
print("tunneld: not yet implemented")
