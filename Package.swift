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
        // Tiny C: atomics on shared memory, futex, TUN ioctls, batched socket calls.
        .target(name: "CShims"),
        // Allocation counter for benchmarks only (replaces malloc & co. in the process it links into).
        .target(name: "CAllocCounter"),

        // Pure cores: bytes and time in, decisions out, no I/O.
        .target(name: "Packet", swiftSettings: strict),
        .target(name: "Policy", dependencies: ["Packet"], swiftSettings: strict),
        .target(name: "WireGuard", dependencies: ["Packet", "CSodium", "CBlake2"], swiftSettings: strict),

        // Shared state and I/O shells.
        .target(name: "Store", dependencies: ["CSQLite", "Packet"], swiftSettings: strict),
        .target(name: "LiveFeed", dependencies: ["CShims"], swiftSettings: strict),
        .target(name: "Capture", dependencies: ["CPcap", "Packet"], swiftSettings: strict),
        .target(name: "Control", dependencies: ["Packet"], swiftSettings: strict),
        .target(
            name: "Gateway",
            dependencies: ["Packet", "Policy", "WireGuard", "Store", "LiveFeed", "Capture", "Control", "CShims", "CMNL"],
            swiftSettings: strict),
        .target(name: "TestSupport", dependencies: ["Gateway", "Packet"], swiftSettings: strict),

        // Executables.
        .executableTarget(name: "tunneld", dependencies: ["Gateway"], swiftSettings: strict),
        .executableTarget(
            name: "tunnelctl",
            dependencies: ["Packet", "Policy", "Store", "LiveFeed", "Capture", "Control"],
            swiftSettings: strict),
        .executableTarget(
            name: "tunnelbench",
            dependencies: ["Packet", "Policy", "WireGuard", "Store", "LiveFeed", "Capture", "Gateway", "CSodium", "CAllocCounter"],
            swiftSettings: strict),

        // Tests: one target per module.
        .testTarget(name: "PacketTests", dependencies: ["Packet"], swiftSettings: strict),
        .testTarget(name: "PolicyTests", dependencies: ["Policy", "Packet"], swiftSettings: strict),
        .testTarget(
            name: "WireGuardTests", dependencies: ["WireGuard", "Packet", "CSodium", "CBlake2"], exclude: ["vectors"],
            swiftSettings: strict),
        .testTarget(name: "StoreTests", dependencies: ["Store", "CSQLite"], swiftSettings: strict),
        .testTarget(name: "LiveFeedTests", dependencies: ["LiveFeed", "CShims"], swiftSettings: strict),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "CPcap", "Packet"], swiftSettings: strict),
        .testTarget(name: "ControlTests", dependencies: ["Control", "Packet"], swiftSettings: strict),
        .testTarget(
            name: "GatewayTests", dependencies: ["Gateway", "TestSupport", "CMNL", "Control", "Packet", "Policy", "WireGuard", "LiveFeed", "Capture"],
            swiftSettings: strict),
        .testTarget(
            name: "TunnelctlTests", dependencies: ["tunnelctl", "Packet", "Policy", "Store", "LiveFeed", "Capture"],
            resources: [.copy("Golden")], swiftSettings: strict),
    ]
)
