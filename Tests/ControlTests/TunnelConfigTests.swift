import Core
import Packet
import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

let k1 = key(1).base64
let k2 = key(2).base64
let k3 = key(3).base64
let k4 = key(4).base64

/// Lines 1-3: a minimal valid [Interface]. An extra line appended is line 4.
let minimalInterface = "[Interface]\nPrivateKey = \(k1)\nAddress = 10.99.0.1/24\n"
/// Lines 1-6: minimal interface plus one minimal peer. An extra line appended is line 7.
let minimalPeer = minimalInterface + "[Peer]\nName = alice\nPublicKey = \(k2)\n"

func parse(_ text: String) throws(ConfigErrors) -> TunnelConfig {
    try TunnelConfig.parse(text, file: "etc/tunneld.conf")
}

/// The printed errors of a text that must not parse.
func errors(_ text: String) -> [String] {
    do {
        let c = try parse(text)
        return ["(parsed: \(c.peers.count) peers)"]
    } catch {
        return error.errors.map(\.description)
    }
}

@Suite struct TunnelConfigParsingTests {
    @Test func everyInterfaceKeyIsRead() throws {
        let text = """
            # the gateway
            [Interface]
            Name = tv7
            PrivateKey = \(k1)   # inline
            ListenPort = 51821
            Address = 10.99.0.1/24, fd99::1/64
            Address = 10.98.0.1/16
            MTU = 1380
            FwMark = 0x1f
            StateDirectory = /srv/tv/state
            RuntimeDirectory = /run/tv
            PolicyDirectory = /etc/tv/policies
            FreeSession = 10m
            FreePause = 1h30m
            WatchdogInterval = 500ms
            ControlGroup = tunnelvision
            """
        let c = try parse(text)
        let i = c.interface
        #expect(i.name == "tv7")
        #expect(i.privateKey == key(1))
        #expect(i.privateKeySource == .inline)
        #expect(i.listenPort == 51821)
        #expect(i.addresses.map(\.description) == ["10.99.0.1/24", "fd99::1/64", "10.98.0.1/16"])
        #expect(i.addresses[0].subnet == IPPrefix("10.99.0.0/24"))
        #expect(i.mtu == 1380)
        #expect(i.fwMark == 31)
        #expect(i.stateDirectory == "/srv/tv/state")
        #expect(i.runtimeDirectory == "/run/tv")
        #expect(i.policyDirectory == "/etc/tv/policies")
        #expect(i.freeSession == .seconds(600))
        #expect(i.freePause == .seconds(5400))
        #expect(i.watchdogInterval == .milliseconds(500))
        #expect(i.controlGroup == "tunnelvision")
        #expect(i.controlSocketPath == "/run/tv/control.sock")
        #expect(i.storePath == "/srv/tv/state/state.db")
        #expect(c.peers.isEmpty)
        #expect(c.warnings.isEmpty)
    }

    @Test func hostLearningKeys() throws {
        let i = try parse(minimalInterface + "QUIC = Block-Unknown\nHostWait = 250ms\nDNSTTLFloor = 5s\nDNSTTLCeiling = 1h\n").interface
        #expect(i.quic == "block-unknown")
        #expect(i.hostWait == .milliseconds(250))
        #expect(i.dnsTTLFloor == .seconds(5))
        #expect(i.dnsTTLCeiling == .seconds(3600))
        let d = try parse(minimalInterface).interface
        #expect(d.quic == "inspect" && d.hostWait == .seconds(1))
        #expect(errors(minimalInterface + "QUIC = drop\n").joined().contains("use inspect (the default) or block-unknown"))
        #expect(errors(minimalInterface + "HostWait = 1m\n").joined().contains("use 10ms to 10s"))
    }

    @Test func defaultsFollowTheDesign() throws {
        let i = try parse(minimalInterface).interface
        #expect(i.name == "tv0")
        #expect(i.listenPort == 51820)
        #expect(i.mtu == 1420)
        #expect(i.fwMark == nil)
        #expect(i.stateDirectory == "/var/lib/tunnelvision")
        #expect(i.runtimeDirectory == "/run/tunnelvision")
        #expect(i.policyDirectory == "/etc/tunnelvision/policies")
        #expect(i.freeSession == .seconds(15 * 60))
        #expect(i.freePause == .seconds(45 * 60))
        #expect(i.watchdogInterval == .seconds(5))
        #expect(i.controlGroup == nil)
    }

    @Test func everyPeerKeyIsRead() throws {
        let text = minimalInterface + """
            [Peer]
            Name = alice
            PublicKey = \(k2)
            PresharedKey = \(k3)
            AllowedIPs = 10.99.0.2/32, fd99::2/128
            AllowedIPs = 192.168.50.0/24
            Endpoint = [2001:db8::5]:51820
            PersistentKeepalive = 25
            Tier = Premium

            [Peer]
            Name = bob
            PublicKey = \(k4)
            AllowedIPs = 10.99.0.3/32
            Endpoint = vpn.example.com:4500
            PersistentKeepalive = off
            """
        let c = try parse(text)
        try #require(c.peers.count == 2)
        let a = c.peers[0]
        #expect(a.name == "alice")
        #expect(a.publicKey == key(2))
        #expect(a.presharedKey == key(3))
        #expect(a.allowedIPs == [IPPrefix("10.99.0.2/32")!, IPPrefix("fd99::2/128")!, IPPrefix("192.168.50.0/24")!])
        #expect(a.endpoint == HostPort(host: "2001:db8::5", port: 51820))
        #expect(a.persistentKeepalive == 25)
        #expect(a.tier == .premium)
        let b = c.peers[1]
        #expect(b.name == "bob")
        #expect(b.presharedKey == nil)
        #expect(b.endpoint == HostPort(host: "vpn.example.com", port: 4500))
        #expect(b.persistentKeepalive == nil)
        #expect(b.tier == .free, "free is the default tier")
        #expect(c.peer(named: "bob") == b)
        #expect(c.warnings.isEmpty)
    }

    @Test func keysAndSectionsAreCaseInsensitiveCommentsAndBlanksIgnored() throws {
        let text = "\u{FEFF}# comment\r\n[interface]\r\n  privatekey=\(k1)\r\nADDRESS = 10.99.0.1/24 # trailing\r\n\r\n[PEER]\nname = alice\npublickey = \(k2)\nallowedips = 10.99.0.2\ntier = FREE\n"
        let c = try parse(text)
        #expect(c.interface.addresses.map(\.description) == ["10.99.0.1/24"])
        #expect(c.peers.map(\.name) == ["alice"])
        #expect(c.peers[0].allowedIPs == [IPPrefix("10.99.0.2/32")!], "a bare address is a host prefix")
    }

    @Test func relativePathsResolveAgainstTheConfigDirectory() throws {
        let text = minimalInterface.replacingOccurrences(of: "PrivateKey = \(k1)", with: "PrivateKeyFile = keys/private.key")
            + "StateDirectory = state\nRuntimeDirectory = /abs/run\nPolicyDirectory = policies\n"
        let c = try TunnelConfig.parse(text, file: "/tmp/x/tunneld.conf", baseDirectory: "/tmp/x")
        #expect(c.interface.privateKeySource == .file("/tmp/x/keys/private.key"))
        #expect(c.interface.privateKey == nil, "parse does not read the key file")
        #expect(c.interface.stateDirectory == "/tmp/x/state")
        #expect(c.interface.runtimeDirectory == "/abs/run")
        #expect(c.interface.policyDirectory == "/tmp/x/policies")
    }

    @Test(arguments: [
        ("0", nil), ("1", UInt32(1)), ("off", nil), ("OFF", nil), ("4294967295", UInt32.max), ("0xFFFF", UInt32(65535)),
    ] as [(String, UInt32?)])
    func fwMarkValues(text: String, expected: UInt32?) throws {
        #expect(try parse(minimalInterface + "FwMark = \(text)\n").interface.fwMark == expected)
    }
}

/// Every error message, exactly as an operator reads it.
@Suite struct TunnelConfigErrorTests {
    @Test(arguments: [
        // Structure.
        ("just words\n" + minimalInterface, "etc/tunneld.conf:1: 'just words' is not a setting; write 'Key = Value'"),
        (minimalInterface + "= 5\n", "etc/tunneld.conf:4: missing key before '='; write 'Key = Value'"),
        ("ListenPort = 1\n" + minimalInterface, "etc/tunneld.conf:1: ListenPort: setting outside a section; put it under [Interface] or [Peer]"),
        (minimalInterface + "[Peer\n", "etc/tunneld.conf:4: '[Peer' is not a section header; write [Interface] or [Peer]"),
        (minimalInterface + "[Interface]\n", "etc/tunneld.conf:4: second [Interface] section (the first is at line 1); merge them into one"),
        (minimalInterface + "[Peers]\nName = x\n", "etc/tunneld.conf:4: unknown section [Peers]; did you mean [Peer]?"),
        (minimalInterface + "[Routes]\n", "etc/tunneld.conf:4: unknown section [Routes]; sections are [Interface], [Peer] and [Tier NAME]"),
        (minimalInterface + "Table = 1234\n", "etc/tunneld.conf:4: Table: '1234' is not supported: tunneld adds routes for AllowedIPs to the main table only; write Table = off or auto, or remove it"),
        (minimalInterface + "SaveConfig = maybe\n", "etc/tunneld.conf:4: SaveConfig: 'maybe' is neither true nor false; write SaveConfig = false, or remove it"),
        (minimalPeer + "Expires = 2027-02-30\n", "etc/tunneld.conf:7: Expires: '2027-02-30' is not a date; write YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC unless a Z or ±HH:MM follows)"),
        (minimalPeer + "Disabled = sometimes\n", "etc/tunneld.conf:7: Disabled: 'sometimes' is neither true nor false; write Disabled = true, or remove the line"),
        (minimalInterface + "PublicEndpoint = vpn.example.org\n", "etc/tunneld.conf:4: PublicEndpoint: 'vpn.example.org' is not an endpoint; write the host:port clients reach this gateway at, e.g. vpn.example.org:51820"),
        (minimalInterface + "DefaultTier = gold\n", "etc/tunneld.conf:4: DefaultTier: tier 'gold' is not configured; configured tiers: free, premium; add a [Tier gold] section to define it"),
        (minimalPeer + "ListenPort = 1\n", "etc/tunneld.conf:7: ListenPort: does not belong in [Peer]; move it to the [Interface] section"),
        (minimalInterface + "Tier = free\n", "etc/tunneld.conf:4: Tier: does not belong in [Interface]; move it to the [Peer] section"),
        (minimalInterface + "ListenPrt = 1\n", "etc/tunneld.conf:4: ListenPrt: unknown key in [Interface]; did you mean 'ListenPort'?"),
        (minimalPeer + "AllowedIP = 10.99.0.2/32\n", "etc/tunneld.conf:7: AllowedIP: unknown key in [Peer]; did you mean 'AllowedIPs'?"),
        (minimalPeer + "Colour = red\n", "etc/tunneld.conf:7: Colour: unknown key in [Peer]; known keys: Name, PublicKey, PresharedKey, AllowedIPs, Endpoint, PersistentKeepalive, Tier, Expires, Disabled, ClientDNS, ClientEndpoint, ClientAllowedIPs, Session, Pause, Quota, QuotaUp, QuotaDown, Rate, RateUp, RateDown, IdleTimeout, MaxFlows, NewFlowRate"),
        (minimalInterface + "MTU =\n", "etc/tunneld.conf:4: MTU: empty value; give a value or remove the line"),
        (minimalInterface + "MTU = 1400\nmtu = 1300\n", "etc/tunneld.conf:5: MTU: set twice in this section (first at line 4); keep one"),
        // [Interface] values.
        (minimalInterface + "Name = tv/0\n", "etc/tunneld.conf:4: Name: 'tv/0' is not an interface name; use 1-15 characters from A-Z a-z 0-9 _ = + . -"),
        (minimalInterface + "Name = sixteen-chars-xx\n", "etc/tunneld.conf:4: Name: 'sixteen-chars-xx' is not an interface name; use 1-15 characters from A-Z a-z 0-9 _ = + . -"),
        (minimalInterface + "PrivateKeyFile = /k\n", "etc/tunneld.conf:4: PrivateKeyFile: the private key is already given at line 2; use either PrivateKey or PrivateKeyFile, once"),
        ("[Interface]\nPrivateKey = secretsecretsecretsecret\nAddress = 10.99.0.1/24\n", "etc/tunneld.conf:2: PrivateKey: 'secretse…' is not a key (base64 of 32 bytes, 44 characters); generate one with `wg genkey`"),
        (minimalInterface + "ListenPort = 5182o\n", "etc/tunneld.conf:4: ListenPort: '5182o' is not a port; use a number from 1 to 65535"),
        (minimalInterface + "ListenPort = 0\n", "etc/tunneld.conf:4: ListenPort: '0' is not a port; use a number from 1 to 65535"),
        (minimalInterface + "ListenPort = 65536\n", "etc/tunneld.conf:4: ListenPort: '65536' is not a port; use a number from 1 to 65535"),
        (minimalInterface + "Address = 10.99.0.300/24\n", "etc/tunneld.conf:4: Address: '10.99.0.300/24' is not an address with prefix length; write e.g. 10.99.0.1/24 or fd99::1/64"),
        (minimalInterface + "Address = 10.99.0.9/33\n", "etc/tunneld.conf:4: Address: '10.99.0.9/33' is not an address with prefix length; write e.g. 10.99.0.1/24 or fd99::1/64"),
        (minimalInterface + "Address = 10.99.0.1/16\n", "etc/tunneld.conf:4: Address: 10.99.0.1 is listed twice; remove one"),
        (minimalInterface + "MTU = 100\n", "etc/tunneld.conf:4: MTU: '100' is not an MTU; use a number from 576 to 65535; 1420 suits most links"),
        (minimalInterface + "MTU = 1000\nAddress = fd99::1/64\n", "etc/tunneld.conf:4: MTU: 1000 is below 1280, the IPv6 minimum, and an IPv6 Address is set; use at least 1280"),
        (minimalInterface + "FwMark = -1\n", "etc/tunneld.conf:4: FwMark: '-1' is not a firewall mark; use a 32-bit number (decimal or 0x hex) or off"),
        (minimalInterface + "FwMark = 4294967296\n", "etc/tunneld.conf:4: FwMark: '4294967296' is not a firewall mark; use a 32-bit number (decimal or 0x hex) or off"),
        (minimalInterface + "FreeSession = 15\n", "etc/tunneld.conf:4: FreeSession: '15' has no unit; add one of ms, s, m, h, d, w, e.g. 15s or 15m"),
        (minimalInterface + "FreePause = 45 minutes\n", "etc/tunneld.conf:4: FreePause: '45 minutes' is not a duration; write a number and a unit (ms, s, m, h, d, w) without spaces, e.g. 15m, 1h30m or 7d"),
        (minimalInterface + "FreePause = 0m\n", "etc/tunneld.conf:4: FreePause: '0m' must be longer than zero"),
        (minimalInterface + "FreeSession = 99999999999999d\n", "etc/tunneld.conf:4: FreeSession: '99999999999999d' is too long a duration; use at most 36500d"),
        (minimalInterface + "WatchdogInterval = 10ms\n", "etc/tunneld.conf:4: WatchdogInterval: '10ms' is out of range; use 100ms to 1h; 5s is the default"),
        (minimalInterface + "WatchdogInterval = 2h\n", "etc/tunneld.conf:4: WatchdogInterval: '2h' is out of range; use 100ms to 1h; 5s is the default"),
        (minimalInterface + "ControlGroup = wheel;rm\n", "etc/tunneld.conf:4: ControlGroup: 'wheel;rm' is not a group name; use a name from /etc/group"),
        ("[Interface]\nAddress = 10.99.0.1/24\n", "etc/tunneld.conf:1: PrivateKey: missing in [Interface]; add PrivateKey = $(wg genkey) or PrivateKeyFile = PATH"),
        ("[Interface]\nPrivateKey = \(k1)\n", "etc/tunneld.conf:1: Address: missing in [Interface]; add e.g. Address = 10.99.0.1/24"),
        ("# empty\n", "etc/tunneld.conf: no [Interface] section; add one with at least PrivateKey (or PrivateKeyFile) and Address"),
        // [Peer] values.
        (minimalInterface + "[Peer]\nName = alice smith\nPublicKey = \(k2)\n", "etc/tunneld.conf:5: Name: 'alice smith' is not a peer name; use 1-32 characters from A-Z a-z 0-9 _ . -"),
        (minimalInterface + "[Peer]\nName = alice\nPublicKey = \(k2.dropLast(2))\n", "etc/tunneld.conf:6: PublicKey: '\(k2.prefix(8))…' is not a key (base64 of 32 bytes, 44 characters); generate one with `wg pubkey`"),
        (minimalPeer + "PresharedKey = abc\n", "etc/tunneld.conf:7: PresharedKey: 'abc' is not a key (base64 of 32 bytes, 44 characters); generate one with `wg genpsk`"),
        (minimalPeer + "AllowedIPs = 10.99.0.2/32, nonsense\n", "etc/tunneld.conf:7: AllowedIPs: 'nonsense' is not an address or CIDR prefix; write e.g. 10.99.0.2/32 or fd99::2/128"),
        (minimalPeer + "AllowedIPs = 10.99.0.2/32,\n", "etc/tunneld.conf:7: AllowedIPs: '' is not an address or CIDR prefix; write e.g. 10.99.0.2/32 or fd99::2/128"),
        (minimalPeer + "Endpoint = 203.0.113.5\n", "etc/tunneld.conf:7: Endpoint: '203.0.113.5' is not an endpoint; write host:port, e.g. 203.0.113.5:51820 or [2001:db8::5]:51820"),
        (minimalPeer + "Endpoint = 2001:db8::5:51820\n", "etc/tunneld.conf:7: Endpoint: '2001:db8::5:51820' is not an endpoint; write host:port, e.g. 203.0.113.5:51820 or [2001:db8::5]:51820"),
        (minimalPeer + "Endpoint = host:0\n", "etc/tunneld.conf:7: Endpoint: 'host:0' is not an endpoint; write host:port, e.g. 203.0.113.5:51820 or [2001:db8::5]:51820"),
        (minimalPeer + "PersistentKeepalive = 25s\n", "etc/tunneld.conf:7: PersistentKeepalive: '25s' is not a keepalive interval; use seconds from 1 to 65535 (25 is usual) or off"),
        (minimalPeer + "PersistentKeepalive = 65536\n", "etc/tunneld.conf:7: PersistentKeepalive: '65536' is not a keepalive interval; use seconds from 1 to 65535 (25 is usual) or off"),
        (minimalPeer + "Tier = premum\n", "etc/tunneld.conf:7: Tier: peer 'alice' is in tier 'premum', which is not configured; did you mean 'premium'? configured tiers: free, premium; add a [Tier premum] section to define it"),
        (minimalPeer + "Tier = gold\n", "etc/tunneld.conf:7: Tier: peer 'alice' is in tier 'gold', which is not configured; configured tiers: free, premium; add a [Tier gold] section to define it"),
        (minimalInterface + "[Peer]\nName = alice\n", "etc/tunneld.conf:4: PublicKey: missing in [Peer] 'alice'; add PublicKey = the peer's `wg pubkey` output"),
        // Across peers.
        (minimalPeer + "AllowedIPs = 10.99.0.2/32\n[Peer]\nName = alice\nPublicKey = \(k3)\nAllowedIPs = 10.99.0.3/32\n",
         "etc/tunneld.conf:8: Name: peer name 'alice' is already used by the peer at line 4; peer names must be unique"),
        (minimalPeer + "AllowedIPs = 10.99.0.2/32\n[Peer]\nName = bob\nPublicKey = \(k2)\nAllowedIPs = 10.99.0.3/32\n",
         "etc/tunneld.conf:8: PublicKey: peer 'bob' has the same public key as 'alice' (line 4); each peer needs its own key pair"),
        (minimalPeer + "AllowedIPs = 10.99.0.2/32\n[Peer]\nName = bob\nPublicKey = \(k3)\nAllowedIPs = 10.99.0.2/32\n",
         "etc/tunneld.conf:8: AllowedIPs: 10.99.0.2/32 is also allowed for peer 'alice' (line 4); a prefix can belong to one peer only"),
        (minimalPeer + "PresharedKey = \(k1)\n", "etc/tunneld.conf:4: PresharedKey: peer 'alice' uses the interface's private key as preshared key; generate one with `wg genpsk`"),
    ] as [(String, String)])
    func errorMessage(text: String, expected: String) {
        let got = errors(text)
        #expect(got.first == expected, "all errors: \(got)")
    }

    @Test func allErrorsAreReportedInLineOrder() {
        let text = minimalInterface + "ListenPort = x\nMTU = y\n[Peer]\nName = a\nPublicKey = z\n"
        let got = errors(text)
        #expect(got.count == 3)
        #expect(got.map { $0.split(separator: ":")[1] } == ["4", "5", "8"])
    }

    @Test func keysAreNotEchoedWhole() {
        let secret = String(k1.dropLast())  // 43 characters: not a key
        let got = errors("[Interface]\nPrivateKey = \(secret)\nAddress = 10.99.0.1/24\n")
        #expect(got.count == 1)
        #expect(!got[0].contains(secret))
    }
}

@Suite struct TunnelConfigWarningTests {
    func warnings(_ text: String) throws -> [String] { try parse(text).warnings.map(\.description) }

    @Test func hostBitsInAllowedIPs() throws {
        let w = try warnings(minimalPeer + "AllowedIPs = 10.99.0.5/24\n")
        #expect(w == ["etc/tunneld.conf:7: AllowedIPs: '10.99.0.5/24' has host bits set; it means 10.99.0.0/24; write 10.99.0.0/24"])
    }

    @Test func duplicatePrefixWithinAPeer() throws {
        let w = try warnings(minimalPeer + "AllowedIPs = 10.99.0.2/32, 10.99.0.2\n")
        #expect(w == ["etc/tunneld.conf:7: AllowedIPs: 10.99.0.2/32 is listed twice for this peer"])
    }

    @Test func peerWithoutAllowedIPs() throws {
        let w = try warnings(minimalPeer)
        #expect(w == ["etc/tunneld.conf:4: AllowedIPs: peer 'alice' has no AllowedIPs, so none of its packets will be accepted; add its tunnel address, e.g. AllowedIPs = 10.99.0.2/32"])
    }

    @Test func nestedPrefixesBetweenPeersWarn() throws {
        let text = minimalPeer + "AllowedIPs = 10.99.0.0/24\n[Peer]\nName = bob\nPublicKey = \(k3)\nAllowedIPs = 10.99.0.7/32, fd99::7/128\n"
        let c = try parse(text)
        #expect(c.peers.count == 2)
        #expect(c.warnings.map(\.description) == [
            "etc/tunneld.conf:8: AllowedIPs: 10.99.0.7/32 of peer 'bob' overlaps 10.99.0.0/24 of peer 'alice'; packets to 10.99.0.7/32 go to the more specific peer; make the prefixes disjoint unless 10.99.0.0/24 is meant to exclude 10.99.0.7/32"
        ])
    }

    @Test func differentFamiliesNeverOverlap() throws {
        let text = minimalPeer + "AllowedIPs = 0.0.0.0/0\n[Peer]\nName = bob\nPublicKey = \(k3)\nAllowedIPs = ::/0\n"
        #expect(try warnings(text).isEmpty)
    }
}
