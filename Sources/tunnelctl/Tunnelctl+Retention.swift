import Core
import Config
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Store

/// `tunnelctl retention show | set KEY=VALUE…` (docs/store.md).
///
/// `show` decodes the settings row tolerantly and marks every value that did not come from the
/// row (`(factory default)`, `(factory default; the row's value: wrong type …)`); unknown fields are listed. A row that
/// is not JSON is an error showing the raw text (exit 1). `set` validates every pair before
/// writing any, and writes the whole row in one transaction. With a shared store the retention
/// keys are the shared store's (Tunnelctl+SharedRetention.swift), capture stays this gateway's.
extension Tunnelctl {
    /// Compare-and-set attempts of `retention set` on a shared row other gateways keep changing.
    static let sharedSettingsAttempts = 8

    static let runRetentionShow: Command.Body = { opts, console in
        let json = opts[.json]
        let localOnly = opts[.local]
        let (store, config) = try openHistory(opts)
        try opts.finish()
        // With a shared store the retention is its row (a store that cannot be read is an
        // error: the answer is not known here), capture this gateway's; --local reads the copy.
        let setting = config.interface.store
        var source = RetentionSource.local
        var shared: SettingsDecoding?
        if setting.isShared && localOnly {
            source = .localCopy(store: setting.text)
        } else if setting.isShared {
            let state = try openSharedForRetention(config, write: false)
            if let row = try sharedSettingsRow(state, config, write: false) {
                do {
                    shared = try decodeSharedRow(row, setting.text)
                } catch let e as CLIError where json {
                    console.print(try encodeJSON(RetentionErrorJSON(error: "the shared settings row is not a JSON object", raw: row.text)))
                    console.error("tunnelctl retention: \(e.message)")
                    return .failure
                }
                source = .shared(store: setting.text, row: row)
            } else {
                source = .sharedUnset(store: setting.text)
            }
        }
        // No store yet: tunneld would start with the factory values; show them and say why.
        if store == nil { console.error("note: \(noHistoryYet(config)); \(shared == nil ? "these are the factory values" : "capture values are the factory ones")") }
        let text = try CLIStore.call { try store?.settingsText() }
        var decoded: SettingsDecoding
        do {
            decoded = try Settings.decode(text)
        } catch let StoreError.settingsNotJSON(raw, detail) {
            if json {
                console.print(try encodeJSON(RetentionErrorJSON(error: "settings row is not a JSON object (\(detail))", raw: raw)))
            } else {
                console.error("tunnelctl retention: the settings row is not a JSON object (\(detail)); raw text:")
                console.error(raw)
                console.error("tunneld runs with factory values meanwhile; 'tunnelctl retention set KEY=VALUE' writes a fresh row")
            }
            return .failure
        }
        if let shared { decoded = merged(shared: shared, local: decoded) }
        if json {
            console.print(try encodeJSON(RetentionJSON(decoded, source: source)))
        } else {
            console.print(renderRetention(decoded))
            if let line = source.line { console.print(line) }
        }
        return .ok
    }

    static let runRetentionSet: Command.Body = { opts, console in
        let json = opts[.json]
        var pairs: [(String, String)] = []
        while let w = opts.peek, !isOption(w) {
            _ = opts.next()
            guard let eq = w.firstIndex(of: "="), eq != w.startIndex else {
                // A bare key (`retention set flows`) needs a value, not a did-you-mean of itself.
                let bare = Settings.keys.contains { $0.key == w.lowercased() } ? ": give it a value, e.g. \(w.lowercased())=VALUE" : keyHint(w)
                throw CLIError.usage("'\(w)' is not KEY=VALUE\(bare)\n\(retentionUsage)")
            }
            pairs.append((String(w[..<eq]).lowercased(), String(w[w.index(after: eq)...])))
        }
        guard !pairs.isEmpty else { throw CLIError.usage(retentionUsage) }
        // Validate every pair against factory settings first: a typo writes nothing.
        var probe = Settings.factory
        for (k, v) in pairs { try validate(&probe, k, v) }
        let (store, config) = try openStore(opts)
        try opts.finish()
        // A retention key with a shared store: the shared row first (it is the one every
        // gateway prunes with), then this gateway's copy, in the local row's transaction —
        // a shared store that does not take it writes nothing here either.
        let setting = config.interface.store
        let sharedKeys = Set(Settings.sharedKeys)
        let sharing = setting.isShared && pairs.contains { sharedKeys.contains($0.0) }
        let shared: (any SharedState)? = sharing ? try openSharedForRetention(config, write: true) : nil
        var sharedWasBad = false
        let gateway = config.interface.gatewayNameInForce
        let (before, after, row): (SettingsDecoding?, Settings, SharedSettings?) = try CLIStore.call {
            try store.connection.transaction {
                let text = try store.settingsText()
                // The shared row is changed by compare-and-set on its change number: a row
                // another gateway stored in between is read again and these keys applied to
                // it, so neither gateway's keys are lost.
                for _ in 0..<Self.sharedSettingsAttempts {
                    var old = try? Settings.decode(text)
                    var expected: Int64 = 0
                    if let shared, let current = try sharedSettingsRow(shared, config, write: true) {
                        expected = current.change
                        let sb = try? Settings.decodeShared(current.text)
                        sharedWasBad = sb == nil
                        if let sb { old = merged(shared: sb, local: old ?? (try! Settings.decode(nil))) }
                    }
                    var s = old?.settings ?? .factory
                    for (k, v) in pairs { try validate(&s, k, v) }
                    var row: SharedSettings?
                    if let shared {
                        do { row = try shared.setSettings(text: s.sharedJSON, gateway: gateway, at: cliNow(), ifChange: expected) } catch {
                            throw sharedRetentionError(setting, error, write: true)
                        }
                        if row == nil { continue }  // another gateway's row came in between
                    }
                    try store.putSettings(s, at: cliNow())
                    return (old, s, row)
                }
                throw CLIError.failure("the shared store \(setting.text) kept changing: \(Self.sharedSettingsAttempts) attempts to store "
                    + "the retention met another gateway's newer row each time; nothing was written, try again")
            }
        }
        let source: RetentionSource = row.map { .shared(store: setting.text, row: $0) } ?? .local
        if json {
            console.print(try encodeJSON(RetentionJSON(try Settings.decode(after.json), source: source)))
            return .ok
        }
        if before == nil { console.print("note: the old settings row was not JSON; it was replaced (unset values are factory values)") }
        if sharedWasBad { console.print("note: the shared settings row was not JSON; it was replaced (unset values are this gateway's)") }
        for (k, _) in pairs {
            let old = before?.settings.value(forKey: k) ?? "?"
            let new = after.value(forKey: k) ?? "?"
            console.print(old == new ? "\(k): \(new) (unchanged)" : "\(k): \(old) -> \(new)")
        }
        if let row {
            let capture = pairs.contains { !sharedKeys.contains($0.0) } ? "; capture in this gateway's state.db only (not shared)" : ""
            console.print("stored: retention in the shared store \(setting.text) for every gateway (change \(row.change), "
                + "this gateway's state.db keeps a copy)\(capture)")
        } else if setting.isShared {
            console.print("stored in this gateway's state.db only (capture is not shared)")
        }
        return .ok
    }

    /// From the command table.
    static var retentionUsage: String {
        usageText(["retention"]) + "\n       keys: \(Settings.keys.map(\.key).joined(separator: " "))\n       " + retentionValueFormats
    }

    static let retentionValueFormats = "durations: 12h 7d 2w 1h30m forever; sizes: 500MB 2GiB unlimited; capture: on|off; capture-detail: metadata|full"

    /// Applies one pair, turning a bad key or value into a usage error a person can act on.
    static func validate(_ s: inout Settings, _ key: String, _ value: String) throws {
        do {
            try s.set(key, value)
        } catch let e as SettingValueError {
            if e.key == nil {
                throw CLIError.usage("unknown setting '\(key)'\(keyHint(key)) (known settings: \(Settings.keys.map(\.key).joined(separator: " ")))")
            }
            throw CLIError.usage(e.description)
        }
    }

    /// ", did you mean 'flows'?" for a near-miss key (also for `flows:7d`-style typos).
    static func keyHint(_ word: String) -> String {
        let key = String(word.prefix(while: { $0 != "=" && $0 != ":" && $0 != " " })).lowercased()
        let keys = Settings.keys.map(\.key)
        let hint = DidYouMean.suffix(key, keys)
        if !hint.isEmpty { return hint }
        // `flow` vs `flows`, `pcap_bytes` vs `pcap-bytes`, `pcapbytes`.
        let normal = key.replacingAll("_", with: "-")
        if let k = keys.first(where: { $0 == normal || $0.replacingAll("-", with: "") == normal || $0.hasPrefix(normal) && normal.count >= 3 }) {
            return ", did you mean '\(k)'?"
        }
        return ""
    }

    static func renderRetention(_ d: SettingsDecoding) -> String {
        var rows: [[String]] = [["KEY", "VALUE", ""]]
        for (key, path) in Settings.keys {
            let value = d.settings.value(forKey: key) ?? "?"
            // A value absent from the row is simply the factory one (a missing row says so once,
            // below); a value the row had wrong says what was wrong with it.
            let note = d.defaulted.first(where: { $0.path == path }).map { d -> String in
                if case .missing = d.reason { return "(factory default)" }
                return "(factory default; the row's value: \(d.reason))"
            } ?? ""
            rows.append([key, value, note])
        }
        var lines = table(rows).split(separator: "\n").map { String($0).trimmingTrailingSpaces }
        if d.wasEmpty { lines.append("no settings row: every value is a factory value") }
        for u in d.unknown { lines.append("unknown field '\(u)' ignored (dropped on the next 'retention set')") }
        return lines.joined(separator: "\n")
    }
}

fileprivate extension String {
    var trimmingTrailingSpaces: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
