// swift-tools-version:6.0
// TunnelVision: a policy-enforcing WireGuard gateway with session limits. See docs/ARCHITECTURE.md.
import PackageDescription

/// Settings every Swift target shares: Swift 6 language mode (strict concurrency is its default).
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "TunnelVision",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tunneld", targets: ["tunneld"]),
        .executable(name: "tunnelctl", targets: ["tunnelctl"]),
        .executable(name: "tunnelbench", targets: ["tunnelbench"]),
    ],
    targets: [
        // C system libraries from Debian (pkg-config names; apt packages install the headers).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CMNL", pkgConfig: "libmnl", providers: [.apt(["libmnl-dev"])]),
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CBlake2", pkgConfig: "libb2", providers: [.apt(["libb2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CIDN2", pkgConfig: "libidn2", providers: [.apt(["libidn2-dev"])]),
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // A small HTTP listener over libmicrohttpd (C: its start and connection-info calls are variadic).
        .target(name: "CHTTP", dependencies: ["CMicroHTTPD"]),
        // QR codes for tunnelctl peer qr: libqrencode's matrix, libpng's file (C, for libpng's longjmp errors).
        .target(name: "CQRImage", dependencies: ["CQREncode", "CPNG"]),
        // Tiny C: atomics on shared memory, futex, TUN ioctls, batched socket calls.
        .target(name: "CShims"),
        // ChaCha20-Poly1305 through OpenSSL's EVP, one reused context per thread (WireGuard transport data).
        .target(name: "CAEAD", dependencies: ["COpenSSL"]),
        // Allocation counter for benchmarks only (replaces malloc & co. in the process it links into).
        .target(name: "CAllocCounter"),

        // The shared vocabulary: one owner for every type and text form both binaries speak
        // (addresses, tier, verdict, direction, durations, sizes, times, endpoints, keys).
        .target(name: "Core", swiftSettings: strict),

        // The runtime every thread of tunneld shares: the syscall layer (`Sys`, `SystemError`,
        // `errnoText`), the clocks (`TimeSource`, `SystemClock`), `WorkerThread`, `ConditionLock`
        // and `StopSignal`, `EventNotifier`/`Readiness`, and `Logger` (stderr, or the journal through
        // libsystemd's sd_journal_sendv for structured events). Knows nothing of the rest.
        .target(name: "Runtime", dependencies: ["Core", "CShims", "CSystemd"], swiftSettings: strict),

        // Pure cores: bytes and time in, decisions out, no I/O.
        .target(name: "Packet", dependencies: ["Core", "COpenSSL", "CSodium"], swiftSettings: strict),
        .target(name: "Policy", dependencies: ["Core", "Runtime", "Packet", "CIDN2"], swiftSettings: strict),
        .target(name: "WireGuard", dependencies: ["Core", "Packet", "CSodium", "CBlake2", "CAEAD"], swiftSettings: strict),
        // The free-session rules (docs/session.md): a peer's phase at a time, connect and tick
        // decisions. Both binaries call them; neither re-derives them.
        .target(name: "Sessions", dependencies: ["Core"], swiftSettings: strict),

        // Shared state and I/O shells.
        .target(name: "Store", dependencies: ["Core", "Runtime", "CSQLite", "CLibPQ", "Packet"], swiftSettings: strict),
        .target(name: "LiveFeed", dependencies: ["Core", "Runtime", "CShims"], swiftSettings: strict),
        .target(name: "Capture", dependencies: ["Core", "Runtime", "CPcap", "Packet"], swiftSettings: strict),
        // The control protocol both binaries speak: control.sock's requests, replies and framing,
        // the client, and the WireGuard UAPI codec (values and text, no server).
        .target(name: "ControlProtocol", dependencies: ["Core", "Runtime", "Packet"], swiftSettings: strict),
        // The configuration: tunneld.conf's parser and rewriter (UAPI write-back included), atomic
        // file replacement, the address allocator, wg-quick hooks, what a reload changed.
        .target(name: "Config", dependencies: ["Core", "Runtime", "Packet", "ControlProtocol"], swiftSettings: strict),
        // The Linux I/O the gateway runs on: TUN (offloads, readv/writev batches), UDP sockets
        // (recvmmsg/sendmmsg, GSO), netlink (addresses, routes), signals, clock-change watching,
        // an HTTP listener (libmicrohttpd), systemd's notify socket.
        // Knows nothing of the engine or the daemon.
        .target(name: "SystemIO", dependencies: ["Core", "Runtime", "Packet", "CShims", "CMNL", "CHTTP"], swiftSettings: strict),
        // The data path: the engine, its device protocols (Devices/), the ports it calls out
        // through (GatewayEvents, PacketObserving, HandshakeAdmission, declared beside it) and the one
        // peer registry. Imports nothing the daemon builds on it.
        .target(
            name: "Engine", dependencies: ["Core", "Runtime", "Packet", "Policy", "WireGuard", "SystemIO"],
            swiftSettings: strict),
        // The daemon: program wiring (Program/), control and UAPI servers (Servers/), the
        // watchdog service, history, markers and prune schedule, live observation.
        .target(
            name: "Daemon",
            dependencies: ["Core", "Runtime", "Sessions", "Packet", "Policy", "WireGuard", "SystemIO", "Engine", "Store", "LiveFeed", "Capture", "Config", "ControlProtocol", "CShims"],
            swiftSettings: strict),
        .target(name: "TestSupport", dependencies: ["Core", "Runtime", "Engine", "SystemIO", "Packet", "Policy", "WireGuard"], swiftSettings: strict),

        // Executables.
        .executableTarget(name: "tunneld", dependencies: ["Daemon", "Runtime", "Core"], swiftSettings: strict),
        .executableTarget(
            name: "tunnelctl",
            dependencies: ["Core", "Runtime", "Sessions", "Packet", "Policy", "Store", "LiveFeed", "Capture", "Config", "ControlProtocol", "WireGuard", "CQRImage"],
            swiftSettings: strict),
        .executableTarget(
            name: "tunnelbench",
            dependencies: ["Core", "Runtime", "Packet", "Policy", "WireGuard", "Store", "LiveFeed", "Capture", "SystemIO", "Engine", "Daemon", "CSodium", "CAllocCounter"],
            swiftSettings: strict),

        // Tests: one target per module.
        .testTarget(name: "CoreTests", dependencies: ["Core"], swiftSettings: strict),
        .testTarget(name: "SessionsTests", dependencies: ["Core", "Sessions"], swiftSettings: strict),
        .testTarget(name: "RuntimeTests", dependencies: ["Core", "Runtime", "CShims"], swiftSettings: strict),
        .testTarget(name: "PacketTests", dependencies: ["Core", "Packet", "COpenSSL", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "PolicyTests", dependencies: ["Core", "Policy", "Packet"], swiftSettings: strict),
        .testTarget(
            name: "WireGuardTests", dependencies: ["Core", "WireGuard", "Packet", "CSodium", "CBlake2"], exclude: ["vectors"],
            swiftSettings: strict),
        .testTarget(name: "StoreTests", dependencies: ["Core", "Runtime", "Store", "CSQLite", "CLibPQ"], swiftSettings: strict),
        .testTarget(name: "LiveFeedTests", dependencies: ["Core", "Runtime", "LiveFeed", "CShims"], swiftSettings: strict),
        .testTarget(name: "CaptureTests", dependencies: ["Core", "Runtime", "Capture", "CPcap", "Packet"], swiftSettings: strict),
        // The config file, the control protocol and the daemon's socket servers that speak it.
        .testTarget(
            name: "ControlTests", dependencies: ["Core", "Runtime", "Config", "ControlProtocol", "Daemon", "Packet"], exclude: ["Golden"],
            swiftSettings: strict),
        .testTarget(name: "SystemIOTests", dependencies: ["Core", "Runtime", "Packet", "SystemIO", "CMNL", "CShims", "CHTTP", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "EngineTests", dependencies: ["Core", "Runtime", "Packet", "Policy", "WireGuard", "SystemIO", "Engine", "TestSupport", "CSodium", "CBlake2"],
            swiftSettings: strict),
        .testTarget(
            name: "DaemonTests",
            dependencies: ["Core", "Runtime", "Sessions", "Packet", "Policy", "WireGuard", "SystemIO", "Engine", "Daemon", "TestSupport", "Store", "LiveFeed", "Capture", "Config", "ControlProtocol", "CSodium", "CBlake2", "CShims"],
            swiftSettings: strict),
        .testTarget(
            name: "TunnelctlTests", dependencies: ["Core", "Runtime", "Sessions", "tunnelctl", "Packet", "Policy", "Store", "LiveFeed", "Capture", "Config", "ControlProtocol", "Daemon", "WireGuard", "CQRImage"],
            resources: [.copy("Golden")], swiftSettings: strict),
    ]
)
