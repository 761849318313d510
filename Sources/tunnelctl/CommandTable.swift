import Core
import Config
import Policy
import Store

/// The command table: every command and subcommand of `tunnelctl`, in the order the usage lists
/// them, with what it takes and its help. The bodies (`runStatus`, …) live in the
/// `Tunnelctl+….swift` files; nothing else registers commands. The top-level usage, `--help`,
/// option checking and the README test (`CommandTableTests`) all read this table.
extension Tunnelctl {
    /// What `tunnelctl --version` prints after "tunnelctl " (`ProductVersion`, in Core, which
    /// both binaries link).
    static var version: String { ProductVersion.current }

    /// What the history commands read with a shared store (one text for refusals, flows, timeline).
    static let sharedHistoryHelp = """
        With a shared store (Store = postgresql://… or sqlite:/… in [Interface]), every gateway's rows are \
        read from it, with a GATEWAY column (the GatewayName that recorded each row); --gateway NAME keeps one \
        gateway's, --local reads this router's own store instead. A shared store that cannot be read is an \
        error (exit 1) that names --local, never an empty list.
        """

    static let commands: [Command] = [
        Command(
            "init", summary: "first run: the gateway's key, a tunneld.conf for this router, the default policy",
            options: [
                OptionSpec("--subnet", "PREFIX", help: "the tunnel's IPv4 subnet (default: 10.99.0.0/24, or the next /24 of 10.0.0.0/8 no route or address of this host uses)"),
                OptionSpec("--subnet6", "PREFIX|off", help: "the tunnel's IPv6 subnet (default: a random unique local /64, RFC 4193)"),
                OptionSpec("--endpoint", "HOST[:PORT]", help: "where clients reach this router: PublicEndpoint (default: the WAN interface's address)"),
                OptionSpec("--wan", "IFACE", help: "the interface to the Internet (default: the one of the default route)"),
                OptionSpec("--dns", "ADDR[,ADDR]|none", help: "ClientDNS, the clients' resolver (default: the gateway's tunnel address when a resolver listens on port 53 of every address, else none)"),
                OptionSpec("--listen-port", "PORT", help: "the UDP port (default 51820)"),
                OptionSpec("--config", "PATH", help: "the configuration to write (default /etc/tunnelvision/tunneld.conf); the key and policies/ go beside it"),
            ],
            help: """
                Sets up a router for its first run, without tunneld running. Writes the gateway's private \
                key (private.key, mode 0600) and a commented tunneld.conf (mode 0640) beside it: the tunnel's \
                addresses in a subnet that no route or address of this host uses, the detected WAN interface \
                and its address as PublicEndpoint, StatusListen on the gateway's tunnel address (port 80), \
                MetricsListen on 127.0.0.1:9586, and ClientDNS = the gateway's tunnel address when a \
                resolver listens on port 53 of every address (else none, and init says how to set one up). \
                Into policies/ beside it, the default policy set — only when that directory has no *.rules \
                file (the package has put it there already: init says it is kept).

                Never overwrites: an existing configuration or key is exit 1, naming it, with nothing \
                written. Prints the next commands: tunneld --check-config, systemctl enable --now tunneld, \
                tunnelctl peer add phone --qr, and the router-nat.sh line for forwarding and NAT.
                """,
            run: runInit),
        Command(
            "status", summary: "daemon, interface, peers, flows, drops, policy generation",
            options: [.json("docs/control.md"), .config],
            help: """
                What the running tunneld reports: its version, pid and uptime, the interface and UDP port, \
                connected and configured peers, active flows, the policy generation, offloads and drop counters.

                Asks tunneld over its control socket: exit 3 when it is not running.
                """,
            run: runStatus),
        Command(
            "metrics", summary: "the Prometheus metrics of the running tunneld, as text",
            options: [.config],
            help: """
                The same text tunneld serves at /metrics when MetricsListen is set (Prometheus text exposition \
                format; see docs/operations.md): per peer bytes, packets, last handshake, session state, seconds \
                left and refusals; rule hits; drops by reason; flow table; store queue and losses; handshakes; \
                policy generation and reloads. For node-exporter's textfile collector where no listener is wanted: \
                tunnelctl metrics > /var/lib/node-exporter/tunnelvision.prom.tmp && mv … tunnelvision.prom.

                Asks tunneld over its control socket: exit 3 when it is not running.
                """,
            run: runMetrics),
        Command(
            "peers", summary: "peers: tier, endpoint, last handshake, rx/tx, session state",
            options: [OptionSpec("--names", help: "only the configured peer names, one per line (reads only the configuration; for scripts and shell completion)"),
                      .json("docs/control.md"), .config],
            help: """
                Every configured peer with its tier, endpoint, last handshake, bytes received and sent, and \
                session state (connected, disconnected, paused).

                When tunneld is not running, the configuration and the store answer instead (tiers with their \
                overrides, windows, the last session) and a note on stderr says so; there are then no live \
                handshakes or counters. A store that cannot be read or does not exist is exit 1 with the \
                reason (on stdout without --json), never peers shown as disconnected by default.

                --names prints the names of the configuration's [Peer] sections and nothing else, from the \
                configuration alone (no daemon, no store); with --json, as a JSON array of strings.
                """,
            run: runPeers),
        Command(
            "peer", summary: "add, remove, disable, rename peers; client configs; tiers at runtime",
            help: """
                Edits the peers of the configuration file without a restart (docs/peers.md): every change \
                rewrites the file atomically (comments and layout kept) and asks the running tunneld to \
                reload. With tunneld not running, the edited file is the change.
                """,
            subcommands: [
                Command(
                    "add", "NAME", summary: "new key pair and address; appends a [Peer], reloads, prints the client config",
                    arguments: [ArgumentSpec("NAME", "the new peer's name (1-32 of A-Z a-z 0-9 _ . -)")],
                    options: [
                        OptionSpec("--tier", "free|premium", help: "the peer's tier (default: Tier absent, so free)"),
                        OptionSpec("--ip", "auto|ADDR", help: "its address: auto (the next free one of each interface subnet, default) or ADDR[,ADDR]"),
                        OptionSpec("--dns", "ADDR", help: "DNS for the client config, kept as the peer's ClientDNS (default: ClientDNS of [Interface])"),
                        OptionSpec("--endpoint", "HOST:PORT", help: "Endpoint for the client config (default: PublicEndpoint of [Interface])"),
                        OptionSpec("--allowed-ips", "PREFIXES", help: "the client's AllowedIPs (default 0.0.0.0/0, ::/0)"),
                        OptionSpec("--expires", "DATE|DURATION", help: "Expires = this date, or now + DURATION (30d)"),
                        OptionSpec("--psk", help: "also a preshared key"),
                        OptionSpec("--keep-client-key", help: "keep the client's private key in clients/NAME.key (0600) beside the config"),
                        OptionSpec("--qr", help: "print the client config as a QR code for the WireGuard phone apps instead of as text"),
                        .config,
                    ],
                    help: """
                        Generates the client's key pair (libsodium), picks its address, appends a [Peer] with Name, \
                        PublicKey, AllowedIPs (and PresharedKey, Tier, Expires when asked) to the configuration, asks \
                        tunneld to reload, and prints the client's wg-quick file on stdout (messages go to stderr): \
                        its DNS line is --dns, else ClientDNS of [Interface]. With --qr the same file is printed as a \
                        QR code (UTF-8 blocks, as 'peer qr' draws it) to scan with a phone app. Without \
                        --keep-client-key that output is the only copy of the client's private key.
                        """, run: runPeerAdd),
                Command(
                    "remove", "NAME", summary: "delete a peer's [Peer] block and reload (its session ends)",
                    arguments: [ArgumentSpec("NAME", "a peer of the configuration")], options: [.config],
                    help: "Deletes the peer's [Peer] block (with its name comment) and its kept client key, then asks tunneld to reload.", run: runPeerRemove),
                Command(
                    "disable", "NAME", summary: "Disabled = true and reload: the peer is refused (reason disabled)",
                    arguments: [ArgumentSpec("NAME", "a peer of the configuration")], options: [.config],
                    help: "Sets Disabled = true in the peer's block and asks tunneld to reload; it refuses the peer from then on, across restarts.", run: runPeerDisable),
                Command(
                    "enable", "NAME", summary: "remove Disabled and reload",
                    arguments: [ArgumentSpec("NAME", "a peer of the configuration")], options: [.config],
                    help: "Removes the Disabled line from the peer's block and asks tunneld to reload.", run: runPeerEnable),
                Command(
                    "rename", "OLD NEW", summary: "change a peer's Name and reload",
                    arguments: [ArgumentSpec("OLD", "a peer of the configuration"), ArgumentSpec("NEW", "the new name")], options: [.config],
                    help: "Sets Name = NEW in the peer's block (added when the name came from a comment or the key) and asks tunneld to reload. Policy rules naming OLD must be changed by hand.", run: runPeerRename),
                Command(
                    "list", summary: "peers with addresses, tier, expiry, disabled, last handshake",
                    options: [.json("docs/json.md"), .config],
                    help: "The configured peers; the last handshake comes from tunneld when it runs (- otherwise).", run: runPeerList),
                Command(
                    "show", "NAME", summary: "one peer's settings and state",
                    arguments: [ArgumentSpec("NAME", "a peer of the configuration")], options: [.json("docs/json.md"), .config],
                    help: "One peer's keys (public), AllowedIPs, tier, expiry, state and, with tunneld running, its last handshake.", run: runPeerShow),
                Command(
                    "config", "NAME", summary: "the client's wg-quick file",
                    arguments: [ArgumentSpec("NAME", "a peer of the configuration")], options: [.config],
                    help: """
                        Prints the client's wg-quick file: [Interface] PrivateKey (only when kept with --keep-client-key; \
                        otherwise a comment and a note on stderr), Address, DNS (the peer's ClientDNS, else ClientDNS of \
                        [Interface]; no line when neither); [Peer] the gateway's PublicKey, \
                        PresharedKey, Endpoint (PublicEndpoint), AllowedIPs = 0.0.0.0/0, ::/0, PersistentKeepalive.
                        """, run: runPeerConfig),
                Command(
                    "qr", "NAME", summary: "the client config as a QR code (terminal, or --png FILE)",
                    arguments: [ArgumentSpec("NAME", "a peer of the configuration")],
                    options: [OptionSpec("--png", "FILE", help: "write a PNG instead of printing UTF-8 blocks"), .config],
                    help: """
                        The text of 'peer config NAME' as a QR code for the WireGuard phone apps: UTF-8 half blocks on \
                        the terminal (light modules drawn, for dark terminals), or a PNG with --png FILE (libqrencode, libpng).

                        Exit 1, with no code, when the client's private key is not stored beside the configuration \
                        (clients/NAME.key, kept by 'peer add --keep-client-key') or is not the key of the peer's \
                        PublicKey: a code without it cannot make a working tunnel.
                        """, run: runPeerQR),
                Command(
                    "tier", "NAME TIER", summary: "set a peer's tier at runtime (free, premium or a [Tier] class)",
                    arguments: [ArgumentSpec("NAME", "a peer of the configuration"),
                                ArgumentSpec("TIER", "free, premium, or the name of a [Tier NAME] section of the configuration")],
                    options: [.json("docs/session.md"), .config],
                    help: """
                        With tunneld running, asks it to change NAME's tier: it applies the tier at once and writes \
                        the override to the store in the same step. With tunneld not running, writes the override \
                        to the store (created if missing), and tunneld applies it when it starts. The peer's window \
                        is kept: premium ignores it (a paused peer gets in at once), and a move back to free finds \
                        the pause it was in. With a shared store (Store = postgresql://…) every gateway applies it \
                        within about two seconds.
                        """, run: runPeerTier),
            ]),
        Command(
            "reload", summary: "ask tunneld to re-read the whole configuration and apply the peer changes",
            options: [.config],
            help: """
                Asks the running tunneld to re-read its configuration file and apply the difference to the peers \
                (added, removed, changed) without disturbing the others. A file with errors changes nothing: \
                exit 1 with the file:line messages. Exit 3 when tunneld is not running.
                """,
            run: runReload),
        Command(
            "import", "FILE", summary: "a wg-quick server file as a tunneld config, with a summary of what changed",
            arguments: [ArgumentSpec("FILE", "a wg-quick server configuration (wg0.conf)")],
            options: [OptionSpec("-o", "PATH", help: "write the result to PATH (mode 0600; refused when PATH exists) instead of stdout")],
            help: """
                Reads a wg-quick server file (pivpn, wg-easy, hand-written) and prints it as a tunneld \
                configuration: the same text with a Name = line for every peer named by a comment \
                (### Client NAME, ### begin NAME ###, # Client: NAME, # Name = NAME) or by its key. The summary \
                (stderr, or stdout with -o) lists the names, the notes and warnings, and what is left to do.
                """,
            run: runImport),
        Command(
            "kick", "PEER", summary: "end a peer's session now (it may reconnect unless refused)",
            arguments: [ArgumentSpec("PEER", "a configured peer")],
            options: [.json("docs/control.md"), .config],
            help: """
                Asks tunneld to end PEER's session now: its keys are dropped, so it must handshake again. A free \
                peer inside its window may reconnect; one whose window ended is refused until its pause is over.

                Exit 3 when tunneld is not running.
                """,
            run: runKick),
        Command(
            "session", "[NAME]", summary: "remaining session time / pause left (all peers without NAME)",
            arguments: [ArgumentSpec("NAME", "a configured peer; without it, every peer")],
            options: [.windowLocal, .json("docs/session.md"), .config],
            help: """
                A free peer's window and pause from the store: time left in its window, or how long it stays \
                paused; premium peers are unlimited. tunneld, when it runs, only adds whether the peer is \
                connected right now. With a shared store (Store = postgresql://… or sqlite:/…) the window and \
                the tier come from it, as every gateway enforces them, with the gateway that opened the window; \
                a shared store that cannot be read is an error that names --local.

                Exit 1 when NAME is not a configured peer, or when the configuration or the store cannot be \
                read (for example: permission denied). A store that does not exist (tunneld has not run, or \
                StateDirectory points elsewhere) is exit 1 too, saying so where the answer would be: the \
                window is not known without it.
                """,
            run: runSession),
        Command(
            "explain", "PEER | 'FLOW'", summary: "why a peer is refused now, or which rule decides a flow",
            arguments: [
                ArgumentSpec("PEER", "a configured peer: is it refused now, why, and until when (exit 0 refused, 1 not refused)"),
                ArgumentSpec("FLOW", "a flow, in quotes (syntax above) (exit 0 allowed, 1 blocked or rejected)"),
            ],
            options: [OptionSpec("--policies", "DIR", help: "rule files to decide FLOW with (default: PolicyDirectory of the configuration)"),
                      .windowLocal, .json("docs/session.md"), .config],
            help: """
                explain PEER: whether PEER is refused now (a free-tier pause), since and until when, and how \
                many of its handshakes were refused. Exit 0 when PEER is refused; exit 1 when it is NOT refused \
                (the answer is "no"), with its session state.

                explain 'FLOW': the rule that decides FLOW and why (the peer and its tier are filled in from \
                the configuration and the store when FLOW does not name them), how often such a flow was refused, \
                and matching flows in the store and in tunneld now. Exit 0 when the flow is allowed, 1 when it \
                is blocked or rejected. FLOW:
                  \(PolicyFlow.syntax)

                explain PEER with a configuration or store that cannot be read, or a store that does not \
                exist, is exit 1 with the reason, never a "not refused". explain 'FLOW' still decides the \
                flow from the rule files and says that the store's history is unknown.
                """,
            run: runExplain),
        Command(
            "refusals", summary: "refused sessions and flows (coalesced), newest first",
            options: [OptionSpec("--since", "DURATION|DATE", kind: .since, help: "only refusals seen since then: 10m, 1h, 7d, forever, or YYYY-MM-DD[THH:MM[:SS]][Z]"),
                      OptionSpec("--peer", "NAME", help: "only this peer's refusals")] + OptionSpec.historyScope + [
                      .json("docs/session.md"), .config],
            help: """
                The store's refusals, newest first: refused sessions (a free peer handshaking during its pause) \
                and refused flows, coalesced to one row per peer, rule and destination per hour. Never needs \
                the daemon.

                Exit 1 when --peer names neither a configured peer nor one the history holds rows of, or when \
                the configuration or the store cannot be read. When the store does not exist yet, that is what \
                it says (tunneld has not run).

                \(sharedHistoryHelp)
                """,
            run: runRefusals),
        Command(
            "flows", summary: "recorded flows, newest first (--blocked: refused only)",
            options: [OptionSpec("--since", "DURATION|DATE", kind: .since, help: "only flows seen since then: 10m, 1h, 7d, forever, or YYYY-MM-DD[THH:MM[:SS]][Z]"),
                      OptionSpec("--peer", "NAME", help: "only this peer's flows"),
                      OptionSpec("--blocked", help: "only blocked and rejected flows")] + OptionSpec.historyScope + [
                      .json("docs/session.md"), .config],
            help: """
                The store's flow rows, newest first: the 5-tuple, the host it is known by (TLS SNI, HTTP Host, QUIC SNI or DNS name), verdict and rule, packets and bytes each way, \
                first and last seen, and its state: its close reason, `live` (open in this router's tunneld now, \
                which is asked for its packets and bytes), or `open` (open when last recorded: tunneld is not \
                running, or another gateway's row; a note says its counts are as of that record). Never needs \
                the daemon.

                Exit 1 when --peer names neither a configured peer nor one the history holds rows of, or when \
                the configuration or the store cannot be read. When the store does not exist yet, that is what \
                it says (tunneld has not run).

                \(sharedHistoryHelp)
                """,
            run: runFlows),
        Command(
            "timeline", summary: "flows, refusals, sessions and markers interleaved, in time order",
            options: [OptionSpec("--since", "DURATION|DATE", kind: .since, help: "start there instead of 1h ago: 10m, 7d, forever, or YYYY-MM-DD[THH:MM[:SS]][Z]"),
                      OptionSpec("--peer", "NAME", help: "only this peer's flows, refusals and sessions (markers and audit sessions stay)")]
                + OptionSpec.historyScope + [.json("docs/audit.md"), .config],
            help: """
                Flows (opened, closed, blocked), refusals, sessions, audit sessions and markers from the store, \
                in time order, oldest first. A flow still open shows its packets and bytes: this router's \
                tunneld's current ones, or those of its last record, saying so. At most 10,000 rows of each \
                family are read; a note says when more were left out.

                Exit 1 when --peer names neither a configured peer nor one the history holds rows of, or when \
                the configuration or the store cannot be read. When the store does not exist yet, \
                that is what it says (tunneld has not run).

                \(sharedHistoryHelp) Audit sessions stay on the router that ran them.
                """,
            run: runTimeline),
        Command(
            "policy", summary: "check rule files, test a flow, reload, show the rules in force",
            help: """
                FLOW:
                  \(PolicyFlow.syntax)

                The policy directory is DIR or --policies DIR, else PolicyDirectory of the --config \
                configuration when --config is given, else ./policies if it exists, else /etc/tunnelvision/policies.
                """,
            subcommands: [
                Command(
                    "check", "[DIR]", summary: "parse the rule files, report errors and warnings",
                    arguments: [ArgumentSpec("DIR", "the policy directory (*.rules files)")],
                    options: [OptionSpec("--policies", "DIR", help: "the policy directory (as DIR)"), .json("docs/policy.md"), .config],
                    help: """
                        Parses every *.rules file of the policy directory offline and reports errors and \
                        warnings with file:line:column. Exit 0 when the policy would load, 1 when it has errors.
                        """, run: runPolicyCheck),
                Command(
                    "test", "'FLOW'", summary: "verdict and rule for a hypothetical flow, offline",
                    arguments: [ArgumentSpec("FLOW", "a flow, in quotes (syntax above)")],
                    options: [OptionSpec("--policies", "DIR", help: "the policy directory"), .json("docs/policy.md"), .config],
                    help: """
                        The verdict the rule files give FLOW and the rule that decides it, offline (no daemon). \
                        'at' evaluates time windows at that local time instead of now; IPv6 addresses go in \
                        brackets when a port follows ([fd99::2]:443). The configuration is --config, else the default \
                        one when it exists and --policies is not given (--policies alone: the rule files only). With \
                        it, a FLOW that names no peer or tier gets them from the configuration (the peer whose \
                        AllowedIPs hold the address, its tier with any 'peer tier' override) exactly as 'explain \
                        FLOW' does, and 'gateway' is its tunnel addresses; without, they are 'not given'. \
                        Exit 0 when the flow is allowed, 1 when it is blocked or rejected. FLOW:
                          \(PolicyFlow.syntax)
                        """, run: runPolicyTest),
                Command(
                    "reload", summary: "ask tunneld to reload; prints the new generation or the errors",
                    options: [.json("docs/control.md"), .config],
                    help: """
                        Asks the running tunneld to reload its PolicyDirectory. Exit 0 with the new generation; \
                        exit 1 with the errors while the old policy keeps running; exit 3 when tunneld is not running.
                        """, run: runPolicyReload),
                Command(
                    "show", summary: "rules in force with live hit counters",
                    options: [.json("docs/control.md"), .config],
                    help: "The rules tunneld is enforcing now, with their hit counters. Exit 3 when tunneld is not running.", run: runPolicyShow),
            ]),
        Command(
            "audit", summary: "audit sessions and markers for the timeline",
            help: """
                Audit sessions (a labelled stretch of time) and markers (a labelled moment) in the store, for \
                the timeline. tunnelctl writes them itself, tunneld running or not; the store is created when missing.
                """,
            subcommands: [
                Command(
                    "start", "LABEL", summary: "open an audit session called LABEL",
                    arguments: [ArgumentSpec("LABEL", "the session's label (the remaining words, up to 1000 bytes)")],
                    options: [.json("docs/audit.md"), .config],
                    help: "Opens an audit session. Only one is open at a time: exit 1 while another is open.", run: runAuditStart),
                Command(
                    "stop", summary: "close the open audit session",
                    options: [.json("docs/audit.md"), .config],
                    help: "Closes the open audit session. Exit 1 when none is open.", run: runAuditStop),
                Command(
                    "mark", "LABEL", summary: "place a marker now (inside the open audit session, if any)",
                    arguments: [ArgumentSpec("LABEL", "the marker's label (the remaining words, up to 1000 bytes)")],
                    options: [OptionSpec("--detail", "TEXT", help: "a longer note kept with the marker"), .json("docs/audit.md"), .config],
                    help: "Places a manual marker at the current time; it belongs to the open audit session, if any.", run: runAuditMark),
                Command(
                    "list", summary: "audit sessions and markers",
                    options: [OptionSpec("--since", "DURATION|DATE", kind: .since, help: "only those since then: 10m, 1h, 7d, forever, or YYYY-MM-DD[THH:MM[:SS]][Z]"),
                              .json("docs/audit.md"), .config],
                    help: """
                        Audit sessions and markers from the store, oldest first. Exit 1 when the configuration or \
                        the store cannot be read; when the store does not exist yet, that is what it says.
                        """, run: runAuditList),
            ]),
        Command(
            "retention", summary: "how long history and captures are kept",
            help: "How long the store keeps each family of history, and the capture limits (docs/store.md).",
            subcommands: [
                Command(
                    "show", summary: "the retention settings, marking values that are defaults",
                    options: [.retentionLocal, .json("docs/audit.md"), .config],
                    help: """
                        The settings row of the store, decoded tolerantly: a value that did not come from the row \
                        is marked (factory default), with what was wrong when the row held a bad one (wrong type …); \
                        unknown fields are listed. A row that is not \
                        JSON is shown raw (exit 1). Exit 1 too when the configuration or the store cannot be \
                        read; when the store does not exist yet, the factory values are shown and it says so.

                        With a shared store (Store = postgresql://… or sqlite:/…) the retention keys are the \
                        shared store's, the ones every gateway prunes with, and capture this gateway's; the last \
                        lines say where each came from. A shared store that cannot be read is an error (exit 1) \
                        that names --local.
                        """, run: runRetentionShow),
                Command(
                    "set", "KEY=VALUE…", summary: "change retention settings (all pairs checked before any is written)",
                    arguments: [ArgumentSpec("KEY=VALUE", "keys: " + Settings.keys.map(\.key).joined(separator: " "))],
                    options: [.json("docs/audit.md"), .config],
                    help: """
                        Checks every pair, then writes the whole settings row in one transaction (a typo writes \
                        nothing); the store is created when missing. Values:
                          \(retentionValueFormats)

                        With a shared store, retention keys are written to it for every gateway, and to this \
                        gateway's state.db as its copy; capture keys stay in this gateway's state.db. A shared \
                        store that cannot be reached writes nothing (exit 1).
                        """, run: runRetentionSet),
            ]),
        Command(
            "prune", summary: "delete history and pcap files beyond retention",
            options: [OptionSpec("--dry-run", alias: "-n", help: "say what would be removed (with a size estimate); change nothing"),
                      .json("docs/audit.md"), .config],
            help: """
                Removes what the retention settings say, family by family in short batches, deletes pcap files \
                beyond the capture limits, gives the freed pages back to the file system and reports rows and \
                bytes per family. On a terminal, a run longer than a second shows its progress on stderr.

                --dry-run only reads: exit 1 when the configuration or the store cannot be read. A real run \
                creates the store when missing.
                """,
            run: runPrune),
        Command(
            "watch", summary: "live packets, flows, blocks and refusals (piped: one line each)",
            options: [OptionSpec("--peer", "NAME", help: "only this peer's records"),
                      OptionSpec("--blocked", help: "only blocked and rejected packets and flows, and refusals"),
                      OptionSpec("--count", "N", kind: .positiveCount, help: "stop after N records that pass --peer and --blocked (exit 0)"),
                      OptionSpec("--timeout", "DURATION", kind: .duration, help: "stop after DURATION (10s, 2m); with --count, exit 1 when fewer than N records came"),
                      OptionSpec("--lines", help: "one line per record even on a terminal"),
                      OptionSpec("--view", help: "the refreshing view even when piped"),
                      OptionSpec("--ring", "PATH", help: "the live feed file (default: RuntimeDirectory/live.ring of the configuration)"),
                      OptionSpec("--json", help: "one JSON object per record and line (fields in docs/ring.md)"),
                      .config],
            help: """
                The live feed tunneld writes (RuntimeDirectory/live.ring). On a terminal: a view redrawn every \
                second with the top flows, new flows, blocks and refusals. Piped, or with --count: one line per \
                record. Once attached it follows tunneld across restarts. Exit 3 at once when tunneld is not \
                running (no live feed, or the one there was closed when tunneld stopped).

                It ends on Ctrl-C, after --count N records that pass the filters (a quiet peer can keep it \
                waiting: add --timeout DURATION to bound the wait), or after --timeout. --peer NAME must be a \
                configured peer (or, with --ring alone, one the running tunneld reports): any other name is an \
                error (exit 1), never a watch that waits for records that cannot come.
                """,
            run: runWatch),
        Command(
            "capture", summary: "packet capture into pcap files, and one flow out of them",
            help: "Packet capture into StateDirectory/capture (docs/capture.md).",
            subcommands: [
                Command(
                    "on", summary: "start capturing (tunneld picks it up within a few seconds)",
                    options: [OptionSpec("--detail", "metadata|full", kind: .choice(["metadata", "full"]), help: "headers only (metadata) or whole packets (full)"), .config],
                    help: "Turns capture on in the store's settings; tunneld starts writing capture-NNNNNN.pcap files within a few seconds.", run: runCaptureOn),
                Command(
                    "off", summary: "stop capturing",
                    options: [.config],
                    help: "Turns capture off in the store's settings; tunneld closes its capture file within a few seconds.", run: runCaptureOff),
                Command(
                    "list", summary: "capture files with their sequence, size, first/last packet and count",
                    options: [.json("docs/capture.md"), .config],
                    help: """
                        Every capture file of StateDirectory/capture. Exit 1 when the directory cannot be read \
                        (for example: permission denied).
                        """, run: runCaptureList),
                Command(
                    "extract", summary: "one flow's packets (both directions) into a pcap file",
                    options: [OptionSpec("--flow", "ID", required: true, kind: .flowID, help: "the flow id (tunnelctl flows and watch show it)"),
                              OptionSpec("-o", "FILE", required: true, help: "the pcap file to write (refused when FILE exists)"),
                              OptionSpec("--filter", "BPF", help: "only packets matching this pcap-filter(7) expression"),
                              .config],
                    help: """
                        Finds the flow's 5-tuple and first capture location in the store (or the capture's flow \
                        index) and writes its packets into FILE. Exit 1 when the flow has no captured packets or \
                        the store or capture directory cannot be read.
                        """, run: runCaptureExtract),
            ]),
        Command(
            "completion", summary: "shell completion scripts for bash and zsh",
            help: """
                Prints a completion script generated from this command table: commands, subcommands, options, \
                fixed values (tiers, capture detail, retention keys) and, read at completion time with \
                'tunnelctl peers --names', the configured peer names. The package (and install.sh) install both.
                """,
            subcommands: [
                Command(
                    "bash", summary: "the bash completion script",
                    help: """
                        Prints the bash completion script. Install it as \
                        /usr/share/bash-completion/completions/tunnelctl, or load it now:
                          source <(tunnelctl completion bash)
                        """, run: runCompletionBash),
                Command(
                    "zsh", summary: "the zsh completion script",
                    help: """
                        Prints the zsh completion script. Install it as _tunnelctl in a directory of $fpath \
                        (/usr/share/zsh/vendor-completions), or load it now (after compinit):
                          source <(tunnelctl completion zsh)
                        """, run: runCompletionZsh),
            ]),
        Command(
            "version", summary: "print the version",
            help: "Prints 'tunnelctl VERSION' (also: tunnelctl --version). Reads no configuration, store or daemon."),
        Command(
            "help", "[COMMAND [SUBCOMMAND]]", summary: "this list, or one command's arguments and options",
            arguments: [ArgumentSpec("COMMAND", "a command of this list"), ArgumentSpec("SUBCOMMAND", "one of its subcommands")],
            options: [OptionSpec("--man", help: "print the tunnelctl(8) manual page (roff) generated from the same table")],
            help: """
                Prints the usage of tunnelctl, or of one command (same as 'tunnelctl COMMAND --help'). Reads no \
                configuration, store or daemon.
                """),
    ]
}
