import Core
/// The settings row.
extension StateStore {
    /// The raw JSON text of the settings row, nil when there is none.
    public func settingsText() throws -> String? {
        try connection.scalarText("SELECT json FROM settings WHERE id = 1")
    }

    /// Decodes the settings row tolerantly (see `Settings.decode`). Throws
    /// `StoreError.settingsNotJSON` with the raw text when the row is not a JSON object;
    /// the daemon then uses `Settings.factory` and logs the error.
    public func settings() throws -> SettingsDecoding {
        try Settings.decode(try settingsText())
    }

    /// Replaces the settings row with `settings`.
    public func putSettings(_ settings: Settings, at: Int64) throws {
        try putSettingsText(settings.json, at: at)
    }

    /// Replaces the settings row with raw text (tests and repair tools).
    public func putSettingsText(_ text: String, at: Int64) throws {
        let s = try connection.prepared("""
            INSERT INTO settings (id, json, updated_at) VALUES (1, ?, ?)
            ON CONFLICT (id) DO UPDATE SET json = excluded.json, updated_at = excluded.updated_at
            """)
        s.bind(1, text)
        s.bind(2, at)
        try s.run()
    }
}
