import Core
/// An open-addressing hash table from lower-case host names to bitset offsets, looked up with raw
/// bytes (ASCII case folded on the fly) so a lookup allocates nothing.
struct HostTable: Sendable {
    private var slots: [Slot]
    private var keyBytes: [UInt8] = []
    private let mask: Int

    struct Slot: Sendable {
        var hash: UInt64 = 0
        var start: Int32 = 0
        var length: Int32 = -1
        var offset: Int32 = 0
    }

    init(_ entries: [(String, Int32)]) {
        var cap = 8
        while cap < entries.count * 2 { cap <<= 1 }
        slots = [Slot](repeating: Slot(), count: cap)
        mask = cap - 1
        for (key, offset) in entries {
            let bytes = Array(key.utf8)
            let h = bytes.withUnsafeBufferPointer { HostTable.hash(UnsafeRawBufferPointer($0)) }
            var i = Int(truncatingIfNeeded: h) & mask
            while slots[i].length >= 0 { i = (i + 1) & mask }
            slots[i] = Slot(hash: h, start: Int32(keyBytes.count), length: Int32(bytes.count), offset: offset)
            keyBytes += bytes
        }
    }

    /// FNV-1a over ASCII-lower-cased bytes.
    @inline(__always) static func hash(_ b: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for c in b { h = (h ^ UInt64(lower(c))) &* 0x100_0000_01b3 }
        return h
    }

    @inline(__always) static func lower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c | 0x20 : c }

    /// The offset stored for `name` (compared case-insensitively), or nil.
    func lookup(_ name: UnsafeRawBufferPointer) -> Int32? {
        let h = HostTable.hash(name)
        var i = Int(truncatingIfNeeded: h) & mask
        return slots.withUnsafeBufferPointer { s in
            keyBytes.withUnsafeBufferPointer { k in
                while s[i].length >= 0 {
                    let slot = s[i]
                    if slot.hash == h && Int(slot.length) == name.count {
                        var same = true
                        for j in 0..<name.count where HostTable.lower(name[j]) != k[Int(slot.start) + j] {
                            same = false
                            break
                        }
                        if same { return slot.offset }
                    }
                    i = (i + 1) & mask
                }
                return nil
            }
        }
    }
}
