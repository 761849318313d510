import Core
import CMNL
import Glibc
import Packet

/// Builders for the rtnetlink requests the gateway sends (rtnetlink(7); kernel
/// `include/uapi/linux/rtnetlink.h`), written with libmnl into a caller's buffer. Pure: no socket,
/// so tests check the bytes without privileges.
///
/// Every request carries `NLM_F_REQUEST | NLM_F_ACK`, so the kernel answers each with an error or
/// an acknowledgement; creations add `NLM_F_CREATE | NLM_F_EXCL` so that an existing address or route
/// is reported (`EEXIST`) instead of silently shared — tear-down then removes only what we added.
public enum NetlinkMessage {
    /// Room for any message built here (the largest is a route: 16 + 12 + 20 + 8 bytes).
    public static let bufferSize = 8192

    /// `RTM_GETLINK` for the interface called `name` (answered with one `RTM_NEWLINK`).
    @discardableResult
    public static func getLink(into buffer: UnsafeMutableRawPointer, sequence: UInt32, name: String)
        -> UnsafeMutablePointer<nlmsghdr>
    {
        let nlh = header(buffer, type: RTM_GETLINK, flags: NLM_F_REQUEST | NLM_F_ACK, sequence: sequence)
        let ifi = mnl_nlmsg_put_extra_header(nlh, MemoryLayout<ifinfomsg>.size)!.assumingMemoryBound(to: ifinfomsg.self)
        ifi.pointee.ifi_family = UInt8(AF_UNSPEC)
        name.withCString { mnl_attr_put_strz(nlh, UInt16(IFLA_IFNAME), $0) }
        return nlh
    }

    /// `RTM_NEWLINK` on interface `index` setting `IFLA_MTU` to `mtu`.
    @discardableResult
    public static func setMTU(into buffer: UnsafeMutableRawPointer, sequence: UInt32, index: Int32, mtu: UInt32)
        -> UnsafeMutablePointer<nlmsghdr>
    {
        let nlh = header(buffer, type: RTM_NEWLINK, flags: NLM_F_REQUEST | NLM_F_ACK, sequence: sequence)
        let ifi = mnl_nlmsg_put_extra_header(nlh, MemoryLayout<ifinfomsg>.size)!.assumingMemoryBound(to: ifinfomsg.self)
        ifi.pointee.ifi_family = UInt8(AF_UNSPEC)
        ifi.pointee.ifi_index = index
        mnl_attr_put_u32(nlh, UInt16(IFLA_MTU), mtu)
        return nlh
    }

    /// `RTM_NEWLINK` on interface `index` setting or clearing `IFF_UP` (`ifi_change = IFF_UP`).
    @discardableResult
    public static func setUp(into buffer: UnsafeMutableRawPointer, sequence: UInt32, index: Int32, up: Bool)
        -> UnsafeMutablePointer<nlmsghdr>
    {
        let nlh = header(buffer, type: RTM_NEWLINK, flags: NLM_F_REQUEST | NLM_F_ACK, sequence: sequence)
        let ifi = mnl_nlmsg_put_extra_header(nlh, MemoryLayout<ifinfomsg>.size)!.assumingMemoryBound(to: ifinfomsg.self)
        ifi.pointee.ifi_family = UInt8(AF_UNSPEC)
        ifi.pointee.ifi_index = index
        ifi.pointee.ifi_flags = up ? UInt32(IFF_UP) : 0
        ifi.pointee.ifi_change = UInt32(IFF_UP)
        return nlh
    }

    /// `RTM_NEWADDR` (add, exclusive) or `RTM_DELADDR` for `address` on interface `index`, with
    /// `IFA_LOCAL` and `IFA_ADDRESS` both the address (a broadcast-less, non-peer address, as
    /// `ip addr add` sends it).
    @discardableResult
    public static func address(
        into buffer: UnsafeMutableRawPointer, sequence: UInt32, add: Bool, index: Int32, address: InterfaceAddress
    ) -> UnsafeMutablePointer<nlmsghdr> {
        let flags = add ? NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL : NLM_F_REQUEST | NLM_F_ACK
        let nlh = header(buffer, type: add ? RTM_NEWADDR : RTM_DELADDR, flags: flags, sequence: sequence)
        let ifa = mnl_nlmsg_put_extra_header(nlh, MemoryLayout<ifaddrmsg>.size)!.assumingMemoryBound(to: ifaddrmsg.self)
        ifa.pointee.ifa_family = UInt8(address.address.isIPv6 ? AF_INET6 : AF_INET)
        ifa.pointee.ifa_prefixlen = UInt8(address.prefixLength)
        ifa.pointee.ifa_flags = 0
        ifa.pointee.ifa_scope = UInt8(RT_SCOPE_UNIVERSE.rawValue)
        ifa.pointee.ifa_index = UInt32(bitPattern: index)
        putAddress(nlh, UInt16(IFA_LOCAL), address.address)
        putAddress(nlh, UInt16(IFA_ADDRESS), address.address)
        return nlh
    }

    /// `RTM_NEWROUTE` (add, exclusive) or `RTM_DELROUTE` for `prefix` through interface `index`:
    /// main table, `proto static`, scope link, unicast, `RTA_DST` + `RTA_OIF` (what
    /// `ip route add PREFIX dev IFACE proto static` sends).
    @discardableResult
    public static func route(
        into buffer: UnsafeMutableRawPointer, sequence: UInt32, add: Bool, index: Int32, prefix: IPPrefix
    ) -> UnsafeMutablePointer<nlmsghdr> {
        let flags = add ? NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL : NLM_F_REQUEST | NLM_F_ACK
        let nlh = header(buffer, type: add ? RTM_NEWROUTE : RTM_DELROUTE, flags: flags, sequence: sequence)
        let rtm = mnl_nlmsg_put_extra_header(nlh, MemoryLayout<rtmsg>.size)!.assumingMemoryBound(to: rtmsg.self)
        rtm.pointee.rtm_family = UInt8(prefix.address.isIPv6 ? AF_INET6 : AF_INET)
        rtm.pointee.rtm_dst_len = UInt8(prefix.length)
        rtm.pointee.rtm_src_len = 0
        rtm.pointee.rtm_tos = 0
        rtm.pointee.rtm_table = UInt8(RT_TABLE_MAIN.rawValue)
        rtm.pointee.rtm_protocol = UInt8(RTPROT_STATIC)
        // Deletion matches any scope with RT_SCOPE_NOWHERE, as iproute2 does.
        rtm.pointee.rtm_scope = UInt8(add ? RT_SCOPE_LINK.rawValue : RT_SCOPE_NOWHERE.rawValue)
        rtm.pointee.rtm_type = UInt8(RTN_UNICAST)
        putAddress(nlh, UInt16(RTA_DST.rawValue), prefix.address)
        mnl_attr_put_u32(nlh, UInt16(RTA_OIF.rawValue), UInt32(bitPattern: index))
        return nlh
    }

    private static func header(_ buffer: UnsafeMutableRawPointer, type: Int, flags: Int32, sequence: UInt32)
        -> UnsafeMutablePointer<nlmsghdr>
    {
        let nlh = mnl_nlmsg_put_header(buffer)!
        nlh.pointee.nlmsg_type = UInt16(type)
        nlh.pointee.nlmsg_flags = UInt16(flags)
        nlh.pointee.nlmsg_seq = sequence
        return nlh
    }

    /// Puts the 4 (IPv4) or 16 (IPv6) network-order address bytes as attribute `type`.
    static func putAddress(_ nlh: UnsafeMutablePointer<nlmsghdr>, _ type: UInt16, _ a: IPAddress) {
        if a.isIPv6 {
            var bytes = (a.high.bigEndian, a.low.bigEndian)
            mnl_attr_put(nlh, type, 16, &bytes)
        } else {
            var v = a.v4.bigEndian
            mnl_attr_put(nlh, type, 4, &v)
        }
    }
}
