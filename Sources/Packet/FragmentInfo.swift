import Core
/// Fragmentation facts of one IPv4 packet or IPv6 packet with a Fragment header.
public struct FragmentInfo: Equatable, Sendable {
    /// IPv4 Identification (16 bits) or IPv6 Fragment header Identification (32 bits).
    public var identification: UInt32
    /// Offset of this fragment's data in the original payload, in bytes.
    public var offset: Int
    /// The More Fragments bit.
    public var moreFragments: Bool
    /// True when the packet is a fragment at all (offset > 0 or MF set; an IPv6 Fragment header
    /// with offset 0 and MF clear is an "atomic fragment", RFC 6946, and is not one).
    @inlinable public var isFragment: Bool { offset != 0 || moreFragments }
    /// True for a fragment other than the first: it carries no transport header.
    @inlinable public var isLaterFragment: Bool { offset != 0 }

    /// Not a fragment.
    public static let none = FragmentInfo(identification: 0, offset: 0, moreFragments: false)

    @inlinable public init(identification: UInt32, offset: Int, moreFragments: Bool) {
        self.identification = identification
        self.offset = offset
        self.moreFragments = moreFragments
    }
}
