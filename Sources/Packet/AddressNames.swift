import Core
/// The names an `AddressNameCache` holds for one address, as a view into the cache: each element
/// is one name (ASCII lower-case, dotted, no trailing dot), the name first learned for it first.
/// Valid until the cache is next changed; iterating allocates nothing. Names whose TTL ran out
/// at `now` are skipped.
public struct AddressNames: Sequence {
    let base: UnsafeRawPointer?
    let used: Int
    let now: Int64

    /// No names.
    public static var none: AddressNames { AddressNames(base: nil, used: 0, now: 0) }

    /// True when no (unexpired) name is known.
    public var isEmpty: Bool {
        var it = makeIterator()
        return it.next() == nil
    }

    /// Walks the names, skipping expired ones.
    public struct Iterator: IteratorProtocol {
        let names: AddressNames
        var offset = 0

        public mutating func next() -> UnsafeRawBufferPointer? {
            guard let base = names.base else { return nil }
            while offset < names.used {
                let length = Int(base.load(fromByteOffset: offset, as: UInt8.self))
                let expiry = base.loadUnaligned(fromByteOffset: offset + 1, as: Int64.self)
                let start = offset + AddressNameCache.nameHeader
                offset = start + length
                if expiry > names.now { return UnsafeRawBufferPointer(start: base + start, count: length) }
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(names: self) }
}
