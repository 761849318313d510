// libFuzzer harness for the Config and ControlProtocol modules' parsers: the config file, the
// UAPI set/get text, the control-socket JSON and the kernel tables `tunnelctl init` reads
// (HostNetwork). The first input byte picks the parser; the rest is its input.
// Build and run with fuzz/control/run.sh (see README.md). Any crash is a bug: every parser must
// return a value or a typed error for every input.
import Config
import ControlProtocol

/// The config UAPI sets are written back to (two peers, one named by a comment).
let writeBackBase = """
    [Interface]
    PrivateKey = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=
    Address = 10.99.0.1/24, fd99::1/64

    ### Client alice
    [Peer]
    PublicKey = AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=
    AllowedIPs = 10.99.0.2/32, 10.50.0.0/16

    [Peer]
    Name = bob
    PublicKey = AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=
    AllowedIPs = 10.99.0.3/32
    PersistentKeepalive = 25

    """
let writeBackConfig = try! TunnelConfig.parse(writeBackBase, file: "base.conf")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let selector = data[0] % 6
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let text = String(decoding: body, as: UTF8.self)
    switch selector {
    case 0:
        if let c = try? TunnelConfig.parse(text, file: "fuzz.conf", baseDirectory: "/etc/tunnelvision") {
            // A config that parses must describe itself without trapping.
            _ = c.interface.addresses.map(\.description)
            _ = c.peers.map { ($0.publicKey.base64, $0.endpoint?.description ?? "") }
            _ = c.gatewayProbes.count
        }
    case 1:
        // A set that parses is also written back to a config (what tunneld does before applying
        // it, ConfigRewriter.applyUAPI); the result is parsed again, as tunneld checks it.
        if let request = try? UAPICodec.parseSet(text.split(separator: "\n", omittingEmptySubsequences: false)),
           let wb = try? ConfigRewriter.applyUAPI(request, to: writeBackBase, config: writeBackConfig, nowMs: 0)
        {
            _ = try? TunnelConfig.parse(wb.text, file: "fuzz.conf")
        }
    case 2:
        if let d = try? UAPICodec.parseGet(text.split(separator: "\n", omittingEmptySubsequences: false)) {
            _ = UAPICodec.encodeGet(d)
        }
    case 3:
        _ = ControlWire.decodeRequest(body)
    case 4:
        if case .success(let r) = ControlWire.decodeResponse(body) { _ = ControlWire.encode(r) }
    default:
        let host = HostNetwork(routes: HostNetwork.ipv4Routes(text) + HostNetwork.ipv6Routes(text),
                               dnsListeners: HostNetwork.listeners(text, tcp: true, port: 53) + HostNetwork.listeners(text, tcp: false, port: 53))
        _ = (host.prefixesInUse, host.wanInterface, host.resolverOnEveryAddress)
        if let p = host.prefixesInUse.first { _ = FirstRunConfig.freeSubnet(preferred: FirstRunConfig.defaultSubnet, inUse: [p], searching: true) }
    }
    return 0
}
