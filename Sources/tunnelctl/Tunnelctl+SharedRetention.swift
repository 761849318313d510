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

/// Retention with a shared store (docs/scale-out.md "Settings"): the retention section
/// of the settings lives in the shared store (`tv_settings`), the one every gateway prunes the
/// shared history (and its own store) with; capture stays in each gateway's `state.db`. tunneld
/// keeps its local row's retention equal to the last shared one it read, so a gateway cut off
/// from the database keeps the same limits. `retention show` answers from the shared store (or
/// says it cannot know; `--local` reads this gateway's copy); `retention set` of a retention key
/// writes the shared row and the local copy, or nothing.
extension Tunnelctl {
    /// Where the retention `retention show|set` reports came from.
    enum RetentionSource {
        /// `Store = local`: this gateway's `state.db`.
        case local
        /// `--local` with a shared store: this gateway's copy, the shared store not asked.
        case localCopy(store: String)
        /// The shared store's row.
        case shared(store: String, row: SharedSettings)
        /// A shared store that holds no row yet: every gateway prunes with its own.
        case sharedUnset(store: String)

        var isShared: Bool {
            if case .shared = self { return true }
            return false
        }

        /// The line `retention show|set` ends with (nil for `Store = local`, where nothing changed).
        var line: String? {
            switch self {
            case .local:
                return nil
            case .localCopy(let store):
                return "retention: this gateway's state.db, its copy of the shared retention as tunneld last read it "
                    + "(--local: the shared store \(store) was not asked)\ncapture: this gateway's state.db (not shared)"
            case .shared(let store, let row):
                return "retention: the shared store \(store), every gateway's (set on \(row.gateway) at \(dateTimeText(row.changedAt)))\n"
                    + "capture: this gateway's state.db (not shared)"
            case .sharedUnset(let store):
                return "retention: this gateway's state.db: the shared store \(store) holds none yet, so each gateway prunes with its own "
                    + "('tunnelctl retention set' stores it there for every gateway)\ncapture: this gateway's state.db (not shared)"
            }
        }
    }

    /// The shared store `config` names, read-write or read-only; an error that says what it
    /// means for retention when it cannot be opened.
    static func openSharedForRetention(_ config: TunnelConfig, write: Bool) throws -> any SharedState {
        let setting = config.interface.store
        do {
            return try setting.open(passFile: config.interface.storePassFile, readOnly: !write)!
        } catch {
            throw sharedRetentionError(setting, error, write: write)
        }
    }

    static func sharedRetentionError(_ setting: SharedStoreSetting, _ error: any Error, write: Bool) -> CLIError {
        if write {
            return CLIError.failure("cannot reach the shared store \(setting.text): \(error)\n"
                + "  nothing was written: retention is shared by every gateway, and a value stored here alone would differ from "
                + "theirs and be replaced by the shared one; try again once the database answers ('tunnelctl status' shows the "
                + "shared store's state)")
        }
        return CLIError.failure("cannot read the shared store \(setting.text): \(error)\n"
            + "  the retention every gateway prunes with is there, so it is not known here now; this gateway's own copy "
            + "(the last shared retention tunneld read): add --local")
    }

    /// The shared row read from `shared` (nil: none yet); an unreadable store is the error above.
    static func sharedSettingsRow(_ shared: any SharedState, _ config: TunnelConfig, write: Bool) throws -> SharedSettings? {
        do { return try shared.settings() } catch {
            throw sharedRetentionError(config.interface.store, error, write: write)
        }
    }

    /// `local` with the retention of the shared row `shared`: retention fields reported as the
    /// shared row has them, capture ones as the local row has them.
    static func merged(shared: SettingsDecoding, local: SettingsDecoding) -> SettingsDecoding {
        var d = local
        d.settings = local.settings.withRetention(of: shared.settings)
        d.defaulted = Settings.keys.compactMap { _, path in
            (Settings.isShared(path: path) ? shared.defaulted : local.defaulted).first { $0.path == path }
        }
        d.unknown = shared.unknown + local.unknown.filter { !Settings.isShared(path: $0) && $0 != "retention" }
        d.wasEmpty = false
        return d
    }

    /// The shared row's text decoded, or the error `retention show` and `prune` give for a row
    /// that is not JSON (the operator's limits are unknown then).
    static func decodeSharedRow(_ row: SharedSettings, _ store: String) throws -> SettingsDecoding {
        do { return try Settings.decodeShared(row.text) } catch let StoreError.settingsNotJSON(raw, detail) {
            throw CLIError.failure("the shared store \(store) holds a settings row (set on \(row.gateway) at \(dateTimeText(row.changedAt))) "
                + "that is not a JSON object (\(detail)); raw text:\n\(raw)\n"
                + "'tunnelctl retention set KEY=VALUE' writes a fresh one for every gateway")
        }
    }
}
