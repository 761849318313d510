// libFuzzer harness for the store's settings JSON (Sources/Store/Settings+JSON.swift,
// SettingsDecoding.swift, JSONValue.swift): the input is the settings row's text. Decoding must
// give settings (unknown and defaulted fields listed) or `StoreError.settingsNotJSON`, never a
// trap; and what decodes must survive its own round trip: `decode(settings.json)` gives the same
// settings with nothing defaulted. Build and run with fuzz/settings/run.sh.
import Core
import Store

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let decoded = try? Settings.decode(text) else { return 0 }
    for d in decoded.defaulted { _ = d.reason.description }
    let again: SettingsDecoding
    do {
        again = try Settings.decode(decoded.settings.json)
    } catch {
        fatalError("the JSON of decoded settings does not decode: \(decoded.settings.json): \(error)")
    }
    precondition(again.settings == decoded.settings, "round trip changed the settings: \(decoded.settings.json)")
    precondition(again.defaulted.isEmpty && again.unknown.isEmpty, "round trip defaulted \(again.defaultedPaths)")
    return 0
}
