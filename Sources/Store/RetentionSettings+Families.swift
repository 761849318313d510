import Core

extension RetentionSettings {
    /// How long rows of `family` are kept (ms), nil for forever: the one mapping from settings to
    /// prune families (audit sessions go with their markers). The pruner and `tunnelctl prune`
    /// both read it.
    public func maxAge(for family: PruneFamily) -> Int64? {
        switch family {
        case .flows: return flowsMaxAgeMs
        case .refusals: return refusalsMaxAgeMs
        case .sessions: return sessionsMaxAgeMs
        case .markers, .auditSessions: return markersMaxAgeMs
        }
    }
}
