import Core
import CMNL
import Glibc
import Packet
import Testing

@testable import SystemIO

/// Attributes of a message, collected with libmnl's own parser (mnl_attr_parse).
private final class Attributes {
    var values: [UInt16: [UInt8]] = [:]
    var order: [UInt16] = []
}

private func parseAttributes(_ nlh: UnsafeMutablePointer<nlmsghdr>, headerSize: Int) -> Attributes {
    let box = Attributes()
    let r = withExtendedLifetime(box) {
        mnl_attr_parse(nlh, UInt32(headerSize), { attr, data in
            let box = Unmanaged<Attributes>.fromOpaque(data!).takeUnretainedValue()
            let type = mnl_attr_get_type(attr)
            let length = Int(mnl_attr_get_payload_len(attr))
            let payload = UnsafeRawBufferPointer(start: mnl_attr_get_payload(attr), count: length)
            box.values[type] = Array(payload)
            box.order.append(type)
            return MNL_CB_OK
        }, Unmanaged.passUnretained(box).toOpaque())
    }
    #expect(r == MNL_CB_OK)
    return box
}

@Suite struct NetlinkMessageTests {
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: NetlinkMessage.bufferSize, alignment: 16)

    @Test func newAddressIPv6() throws {
        defer { buffer.deallocate() }
        let address = try #require(InterfaceAddress("fd99::1/64"))
        let nlh = NetlinkMessage.address(into: buffer, sequence: 42, add: true, index: 7, address: address)
        #expect(nlh.pointee.nlmsg_type == UInt16(RTM_NEWADDR))
        #expect(Int32(nlh.pointee.nlmsg_flags) == NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL)
        #expect(nlh.pointee.nlmsg_seq == 42)
        // 16 header + 8 ifaddrmsg + 2 × (4 attribute header + 16 address)
        #expect(nlh.pointee.nlmsg_len == 16 + 8 + 2 * 20)
        let ifa = mnl_nlmsg_get_payload(nlh)!.assumingMemoryBound(to: ifaddrmsg.self).pointee
        #expect(ifa.ifa_family == UInt8(AF_INET6))
        #expect(ifa.ifa_prefixlen == 64)
        #expect(ifa.ifa_index == 7)
        let attrs = parseAttributes(nlh, headerSize: MemoryLayout<ifaddrmsg>.size)
        let fd99_1: [UInt8] = [0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        #expect(attrs.order == [UInt16(IFA_LOCAL), UInt16(IFA_ADDRESS)])
        #expect(attrs.values[UInt16(IFA_LOCAL)] == fd99_1)
        #expect(attrs.values[UInt16(IFA_ADDRESS)] == fd99_1)
    }

    @Test func deleteAddressIPv4Bytes() throws {
        defer { buffer.deallocate() }
        let address = try #require(InterfaceAddress("10.99.0.1/24"))
        let nlh = NetlinkMessage.address(into: buffer, sequence: 0x0102_0304, add: false, index: 3, address: address)
        let bytes = Array(UnsafeRawBufferPointer(start: nlh, count: Int(nlh.pointee.nlmsg_len)))
        // Host byte order is little-endian on every platform we build for (x86_64, aarch64).
        let expected: [UInt8] = [
            40, 0, 0, 0,  // nlmsg_len
            21, 0,  // RTM_DELADDR
            5, 0,  // NLM_F_REQUEST | NLM_F_ACK
            4, 3, 2, 1,  // seq
            0, 0, 0, 0,  // pid
            2, 24, 0, 0, 3, 0, 0, 0,  // ifaddrmsg: AF_INET, /24, flags 0, scope universe, index 3
            8, 0, 2, 0, 10, 99, 0, 1,  // IFA_LOCAL 10.99.0.1
            8, 0, 1, 0, 10, 99, 0, 1,  // IFA_ADDRESS 10.99.0.1
        ]
        #expect(bytes == expected)
    }

    @Test func newRoute() throws {
        defer { buffer.deallocate() }
        let prefix = try #require(IPPrefix("fd50::/48"))
        let nlh = NetlinkMessage.route(into: buffer, sequence: 1, add: true, index: 9, prefix: prefix)
        #expect(nlh.pointee.nlmsg_type == UInt16(RTM_NEWROUTE))
        let rtm = mnl_nlmsg_get_payload(nlh)!.assumingMemoryBound(to: rtmsg.self).pointee
        #expect(rtm.rtm_family == UInt8(AF_INET6))
        #expect(rtm.rtm_dst_len == 48)
        #expect(rtm.rtm_table == UInt8(RT_TABLE_MAIN.rawValue))
        #expect(rtm.rtm_protocol == UInt8(RTPROT_STATIC))
        #expect(rtm.rtm_scope == UInt8(RT_SCOPE_LINK.rawValue))
        #expect(rtm.rtm_type == UInt8(RTN_UNICAST))
        let attrs = parseAttributes(nlh, headerSize: MemoryLayout<rtmsg>.size)
        #expect(attrs.values[UInt16(RTA_DST.rawValue)] == [0xfd, 0x50] + [UInt8](repeating: 0, count: 14))
        #expect(attrs.values[UInt16(RTA_OIF.rawValue)] == [9, 0, 0, 0])
        let del = NetlinkMessage.route(into: buffer, sequence: 2, add: false, index: 9, prefix: prefix)
        #expect(del.pointee.nlmsg_type == UInt16(RTM_DELROUTE))
        #expect(Int32(del.pointee.nlmsg_flags) == NLM_F_REQUEST | NLM_F_ACK)
    }

    @Test func linkMessages() {
        defer { buffer.deallocate() }
        let mtu = NetlinkMessage.setMTU(into: buffer, sequence: 1, index: 4, mtu: 1420)
        #expect(mtu.pointee.nlmsg_type == UInt16(RTM_NEWLINK))
        #expect(parseAttributes(mtu, headerSize: MemoryLayout<ifinfomsg>.size).values[UInt16(IFLA_MTU)] == [0x8c, 0x05, 0, 0])
        let up = NetlinkMessage.setUp(into: buffer, sequence: 2, index: 4, up: true)
        let ifi = mnl_nlmsg_get_payload(up)!.assumingMemoryBound(to: ifinfomsg.self).pointee
        #expect(ifi.ifi_index == 4)
        #expect(ifi.ifi_flags == UInt32(IFF_UP))
        #expect(ifi.ifi_change == UInt32(IFF_UP))
        let get = NetlinkMessage.getLink(into: buffer, sequence: 3, name: "tv0")
        #expect(parseAttributes(get, headerSize: MemoryLayout<ifinfomsg>.size).values[UInt16(IFLA_IFNAME)] == Array("tv0\0".utf8))
    }

    /// Reading a link needs no privileges: the loopback device, and a clean error for a missing one.
    @Test func getLinkFromTheKernel() throws {
        defer { buffer.deallocate() }
        let netlink = try NetlinkSocket()
        let lo = try netlink.link(named: "lo")
        #expect(lo.index == Int32(if_nametoindex("lo")))
        #expect(lo.mtu > 0)
        do {
            _ = try netlink.link(named: "tvnope0")
            Issue.record("found a missing interface")
        } catch {
            #expect(error.description == "netlink: get link tvnope0: No such device (ENODEV)")
        }
    }

    @Test func interfaceAddressesAndRoutes() throws {
        defer { buffer.deallocate() }
        #expect(InterfaceAddress("10.99.0.1/24")?.description == "10.99.0.1/24")
        #expect(InterfaceAddress("10.99.0.1/24")?.subnet == IPPrefix("10.99.0.0/24"))
        #expect(InterfaceAddress("fd99::1")?.prefixLength == 128)
        for bad in ["10.99.0.1/33", "fd99::1/129", "10.99.0.1/", "x/8", "10.99.0.1/-1", "10.99.0.1/0024"] {
            #expect(InterfaceAddress(bad) == nil, "\(bad)")
        }
        let addresses = [InterfaceAddress("10.99.0.1/24")!, InterfaceAddress("fd99::1/64")!]
        let routes = ["10.99.0.2/32", "10.50.0.0/16", "fd99::2/128", "fd50::/48", "10.50.0.0/16", "10.0.0.0/8"].map { IPPrefix($0)! }
        #expect(
            InterfaceAddress.routesOutsideSubnets(routes, of: addresses)
                == ["10.50.0.0/16", "fd50::/48", "10.0.0.0/8"].map { IPPrefix($0)! })
    }
}
