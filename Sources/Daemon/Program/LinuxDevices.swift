// The Linux devices (SystemIO) are the engine's TUN device and datagram bind. SystemIO knows
// nothing of the engine and the engine nothing of Linux; the daemon, which uses both, joins them.
import Engine
import SystemIO

extension LinuxTun: TunDevice {}

extension LinuxDatagramBind: DatagramBind {}
