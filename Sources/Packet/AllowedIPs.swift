import Core
import Packet

/// WireGuard's cryptokey routing table (whitepaper §2): prefixes of both families mapped to a peer
/// handle, looked up by longest-prefix match. Inbound, the data path checks that a decrypted
/// packet's source maps to the peer it came from; outbound, the destination picks the peer.
///
/// A path-compressed binary trie per family (like wireguard-go's `allowedips.go`), its nodes kept in
/// one array and linked by index, so a lookup walks at most one node per distinct prefix length on
/// the path, touches no reference counts and allocates nothing. Insert and remove are O(prefix
/// length); ``removeAll(peer:)`` and ``prefixes(of:)`` walk the table (control-plane operations).
///
/// A value type: copy it, change the copy off the data path, and swap it in.
public struct AllowedIPs: Sendable {
    /// Handle of the peer owning a prefix (the engine's peer index). Non-negative.
    public typealias Peer = Int32

    struct Node: Sendable {
        /// Prefix bits, left-aligned in 128 bits (IPv4 in the top 32), host bits zero.
        var high: UInt64
        var low: UInt64
        /// Prefix length in bits.
        var length: UInt8
        /// Owning peer, or -1 for an internal (glue) node.
        var peer: Peer
        var child0: Int32
        var child1: Int32
        var parent: Int32
    }

    private var nodes: [Node] = []
    private var free: [Int32] = []
    private var root4: Int32 = -1
    private var root6: Int32 = -1
    /// Number of prefixes stored.
    public private(set) var count = 0

    /// An empty table.
    public init() {}

    // MARK: lookup

    /// The peer owning the longest prefix that contains `address`, or nil.
    @inlinable public func lookup(_ address: IPAddress) -> Peer? {
        let p = lookupRaw(address)
        return p < 0 ? nil : p
    }

    /// Like ``lookup(_:)`` but returns -1 for no match (no optional on the hot path).
    public func lookupRaw(_ address: IPAddress) -> Peer {
        let (h, l) = address.leftAligned
        let width = address.isIPv6 ? 128 : 32
        var best: Peer = -1
        return nodes.withUnsafeBufferPointer { nodes in
            var i = address.isIPv6 ? root6 : root4
            while i >= 0 {
                let n = nodes[Int(i)]
                let length = Int(n.length)
                guard AllowedIPs.matches(h, l, n.high, n.low, length) else { break }
                if n.peer >= 0 { best = n.peer }
                if length >= width { break }
                i = AllowedIPs.bit(h, l, length) ? n.child1 : n.child0
            }
            return best
        }
    }

    // MARK: changes

    /// Maps `prefix` to `peer`, replacing any previous owner of exactly that prefix.
    public mutating func insert(_ prefix: IPPrefix, peer: Peer) {
        precondition(peer >= 0, "AllowedIPs: peer handles are non-negative")
        let (h, l) = prefix.address.leftAligned
        let length = prefix.length
        let v6 = prefix.address.isIPv6
        var parent: Int32 = -1
        var side = false
        var i = v6 ? root6 : root4
        while i >= 0 {
            let n = nodes[Int(i)]
            let nl = Int(n.length)
            let common = AllowedIPs.commonLength(h, l, n.high, n.low, min(length, nl))
            if common >= nl {
                // n's prefix contains the new one.
                if nl == length {
                    if nodes[Int(i)].peer < 0 { count += 1 }
                    nodes[Int(i)].peer = peer
                    return
                }
                parent = i
                side = AllowedIPs.bit(h, l, nl)
                let next = side ? n.child1 : n.child0
                if next < 0 {
                    let leaf = allocate(h, l, length, peer, parent: i)
                    setChild(i, side, leaf)
                    count += 1
                    return
                }
                i = next
                continue
            }
            if common >= length {
                // The new prefix contains n: it goes between parent and n.
                let new = allocate(h, l, length, peer, parent: parent)
                setChild(new, AllowedIPs.bit(n.high, n.low, length), i)
                nodes[Int(i)].parent = new
                link(parent, side, v6, new)
                count += 1
                return
            }
            // They diverge at bit `common`: a glue node holds both.
            let (gh, gl) = AllowedIPs.masked(h, l, common)
            let glue = allocate(gh, gl, common, -1, parent: parent)
            let leaf = allocate(h, l, length, peer, parent: glue)
            let leafSide = AllowedIPs.bit(h, l, common)
            setChild(glue, leafSide, leaf)
            setChild(glue, !leafSide, i)
            nodes[Int(i)].parent = glue
            link(parent, side, v6, glue)
            count += 1
            return
        }
        let leaf = allocate(h, l, length, peer, parent: -1)
        if v6 { root6 = leaf } else { root4 = leaf }
        count += 1
    }

    /// Removes `prefix` (exact match); returns the peer that owned it, or nil when absent.
    @discardableResult
    public mutating func remove(_ prefix: IPPrefix) -> Peer? {
        guard let i = find(prefix) else { return nil }
        let owner = nodes[Int(i)].peer
        nodes[Int(i)].peer = -1
        count -= 1
        compact(i)
        return owner
    }

    /// Removes every prefix of `peer`; returns how many.
    @discardableResult
    public mutating func removeAll(peer: Peer) -> Int {
        let owned = prefixes(of: peer)
        for p in owned { remove(p) }
        return owned.count
    }

    /// Every prefix owned by `peer`, IPv4 first, each family in address order.
    public func prefixes(of peer: Peer) -> [IPPrefix] {
        var out: [IPPrefix] = []
        for (root, v6) in [(root4, false), (root6, true)] {
            var stack: [Int32] = root >= 0 ? [root] : []
            while let i = stack.popLast() {
                let n = nodes[Int(i)]
                if n.peer == peer { out.append(AllowedIPs.prefix(n, v6)) }
                if n.child1 >= 0 { stack.append(n.child1) }
                if n.child0 >= 0 { stack.append(n.child0) }
            }
        }
        return out
    }

    /// Every (prefix, peer) entry, IPv4 first, each family in address order (for `wg show` and tests).
    public var entries: [(prefix: IPPrefix, peer: Peer)] {
        var out: [(IPPrefix, Peer)] = []
        for (root, v6) in [(root4, false), (root6, true)] {
            var stack: [Int32] = root >= 0 ? [root] : []
            while let i = stack.popLast() {
                let n = nodes[Int(i)]
                if n.peer >= 0 { out.append((AllowedIPs.prefix(n, v6), n.peer)) }
                if n.child1 >= 0 { stack.append(n.child1) }
                if n.child0 >= 0 { stack.append(n.child0) }
            }
        }
        return out
    }

    /// Nodes in use (prefixes plus glue nodes); at most `2 * count - 1` per family.
    public var nodeCount: Int { nodes.count - free.count }

    // MARK: internals

    private func find(_ prefix: IPPrefix) -> Int32? {
        let (h, l) = prefix.address.leftAligned
        let length = prefix.length
        var i = prefix.address.isIPv6 ? root6 : root4
        while i >= 0 {
            let n = nodes[Int(i)]
            let nl = Int(n.length)
            guard nl <= length, AllowedIPs.matches(h, l, n.high, n.low, nl) else { return nil }
            if nl == length { return n.peer >= 0 ? i : nil }
            i = AllowedIPs.bit(h, l, nl) ? n.child1 : n.child0
        }
        return nil
    }

    /// After node `i` lost its peer: remove it if it has no children, splice it out if it has one,
    /// and do the same for a glue parent left with a single child.
    private mutating func compact(_ start: Int32) {
        var i = start
        while i >= 0 {
            let n = nodes[Int(i)]
            if n.peer >= 0 { return }
            let children = (n.child0 >= 0 ? 1 : 0) + (n.child1 >= 0 ? 1 : 0)
            if children == 2 { return }
            let only = n.child0 >= 0 ? n.child0 : n.child1
            let parent = n.parent
            if only >= 0 { nodes[Int(only)].parent = parent }
            if parent < 0 {
                let v6Root = i == root6
                if v6Root { root6 = only } else { root4 = only }
            } else if nodes[Int(parent)].child0 == i {
                nodes[Int(parent)].child0 = only
            } else {
                nodes[Int(parent)].child1 = only
            }
            release(i)
            i = parent
        }
    }

    private mutating func allocate(_ h: UInt64, _ l: UInt64, _ length: Int, _ peer: Peer, parent: Int32) -> Int32 {
        let node = Node(high: h, low: l, length: UInt8(length), peer: peer, child0: -1, child1: -1, parent: parent)
        if let i = free.popLast() {
            nodes[Int(i)] = node
            return i
        }
        nodes.append(node)
        return Int32(nodes.count - 1)
    }

    private mutating func release(_ i: Int32) {
        nodes[Int(i)] = Node(high: 0, low: 0, length: 0, peer: -1, child0: -1, child1: -1, parent: -1)
        free.append(i)
    }

    private mutating func setChild(_ parent: Int32, _ side: Bool, _ child: Int32) {
        if side { nodes[Int(parent)].child1 = child } else { nodes[Int(parent)].child0 = child }
    }

    private mutating func link(_ parent: Int32, _ side: Bool, _ v6: Bool, _ child: Int32) {
        if parent < 0 {
            if v6 { root6 = child } else { root4 = child }
        } else {
            setChild(parent, side, child)
        }
    }

    private static func prefix(_ n: Node, _ v6: Bool) -> IPPrefix {
        let a = v6 ? IPAddress(v6High: n.high, low: n.low) : IPAddress(v4: UInt32(truncatingIfNeeded: n.high >> 32))
        return IPPrefix(a, length: Int(n.length))!
    }

    @inline(__always) static func bit(_ h: UInt64, _ l: UInt64, _ index: Int) -> Bool {
        index < 64 ? (h >> UInt64(63 - index)) & 1 == 1 : (l >> UInt64(127 - index)) & 1 == 1
    }

    @inline(__always) static func masked(_ h: UInt64, _ l: UInt64, _ length: Int) -> (UInt64, UInt64) {
        let hm: UInt64 = length >= 64 ? ~0 : (length == 0 ? 0 : ~0 << UInt64(64 - length))
        let lm: UInt64 = length <= 64 ? 0 : (length >= 128 ? ~0 : ~0 << UInt64(128 - length))
        return (h & hm, l & lm)
    }

    @inline(__always) static func matches(_ h: UInt64, _ l: UInt64, _ ph: UInt64, _ pl: UInt64, _ length: Int) -> Bool {
        let (mh, ml) = masked(h, l, length)
        return mh == ph && ml == pl
    }

    /// Number of leading bits (up to `limit`) on which the two 128-bit values agree.
    @inline(__always) static func commonLength(_ h: UInt64, _ l: UInt64, _ ph: UInt64, _ pl: UInt64, _ limit: Int) -> Int {
        let dh = h ^ ph
        let common = dh != 0 ? dh.leadingZeroBitCount : 64 + (l ^ pl).leadingZeroBitCount
        return min(common, limit)
    }
}
