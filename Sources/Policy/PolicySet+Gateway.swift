import Core

extension PolicySet {
    /// True when some rule says `from gateway` or `to gateway`.
    public var usesGateway: Bool { rules.usesGateway }

    /// The set with `gateway` bound to `addresses`, the gateway's own tunnel addresses (each as a
    /// /32 or /128 host): the one place the word gets its meaning. tunneld binds it at every load
    /// and reload, `tunnelctl policy check|test` and `explain` bind it from the same
    /// configuration (`InterfaceConfig.gatewayAddresses`), so they decide the same flows alike.
    /// Rule texts, names and places are kept (`policy show` and stored decisions still read
    /// `to gateway`). A set without the word is returned as it is, with `gateway` recorded.
    /// Bind a parsed set once: binding a bound set again is a programming error.
    public func bindingGateway(_ addresses: [IPAddress]) -> PolicySet {
        precondition(gateway == nil, "the policy's gateway is already bound")
        var out = self
        var unique: [IPAddress] = []
        for a in addresses where !unique.contains(a) { unique.append(a) }
        out.gateway = unique
        if usesGateway {
            out.rules = rules.bindingGateway(unique.map { IPPrefix($0, length: $0.bitWidth)! })
        }
        return out
    }
}
