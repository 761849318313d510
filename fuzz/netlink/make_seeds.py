#!/usr/bin/env python3
"""Writes the netlink fuzzer's seeds: kernel reply buffers as NetlinkSocket receives them for the
requests NetlinkMessage builds (netlink(7), rtnetlink(7); layouts from include/uapi/linux/netlink.h,
rtnetlink.h, if_link.h). Every message carries sequence SEQ and port PORT (NetlinkFuzz.swift).
    fuzz/netlink/make_seeds.py [DIR]        (default fuzz/netlink/seeds)"""
import os
import struct
import sys

SEQ, PORT = 0x5EED0001, 0x4242
NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE, NLMSG_OVERRUN = 1, 2, 3, 4
RTM_NEWLINK, RTM_GETLINK, RTM_NEWADDR, RTM_NEWROUTE = 16, 18, 20, 24
F_REQUEST, F_MULTI, F_ACK, F_DUMP_INTR = 0x1, 0x2, 0x4, 0x10
F_CAPPED, F_ACK_TLVS, F_EXCL, F_CREATE = 0x100, 0x200, 0x200, 0x400
IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_LINK, IFLA_TXQLEN, IFLA_OPERSTATE = 1, 3, 4, 5, 13, 16
IFA_ADDRESS, IFA_LOCAL, RTA_DST, RTA_OIF = 1, 2, 1, 4
NLMSGERR_ATTR_MSG, NLMSGERR_ATTR_OFFS = 1, 2
IFF_UP, IFF_RUNNING, IFF_NOARP, IFF_POINTOPOINT = 0x1, 0x40, 0x80, 0x10


def pad(b):
    return b + b"\0" * (-len(b) % 4)


def attr(kind, payload):
    return pad(struct.pack("=HH", 4 + len(payload), kind) + payload)


def msg(kind, flags, payload, seq=SEQ, port=PORT):
    return pad(struct.pack("=IHHII", 16 + len(payload), kind, flags, seq, port) + payload)


def ifinfo(index, flags, change=0):
    return struct.pack("=BBHiII", 0, 0, 0xFFFE, index, flags, change)  # ARPHRD_NONE (TUN)


def request_address():
    """RTM_NEWADDR fd99::1/64 on index 7, as NetlinkMessage.address builds it (port 0: from us)."""
    ifa = struct.pack("=BBBBI", 10, 64, 0, 0, 7)
    a = bytes.fromhex("fd990000000000000000000000000001")
    return msg(RTM_NEWADDR, F_REQUEST | F_ACK | F_EXCL | F_CREATE, ifa + attr(IFA_LOCAL, a) + attr(IFA_ADDRESS, a), port=0)


def request_route():
    rtm = struct.pack("=BBBBBBBBI", 2, 24, 0, 0, 254, 4, 253, 1, 0)
    return msg(RTM_NEWROUTE, F_REQUEST | F_ACK | F_EXCL | F_CREATE, rtm + attr(RTA_DST, bytes([10, 99, 1, 0])) + attr(RTA_OIF, struct.pack("=I", 7)), port=0)


def request_getlink():
    return msg(RTM_GETLINK, F_REQUEST | F_ACK, ifinfo(0, 0) + attr(IFLA_IFNAME, b"tv0\0"), port=0)


def error(code, request, capped=True, tlvs=b""):
    echoed = request[:16] if capped else request
    flags = (F_CAPPED if capped else 0) | (F_ACK_TLVS if tlvs else 0)
    return msg(NLMSG_ERROR, flags, struct.pack("=i", code) + echoed + tlvs)


def newlink(index=7, name=b"tv0", mtu=1420, up=True, flags=0):
    f = (IFF_UP | IFF_RUNNING if up else 0) | IFF_NOARP | IFF_POINTOPOINT
    attrs = attr(IFLA_IFNAME, name + b"\0") + attr(IFLA_TXQLEN, struct.pack("=I", 500))
    attrs += attr(IFLA_OPERSTATE, b"\x06") + attr(IFLA_MTU, struct.pack("=I", mtu)) + attr(IFLA_LINK, struct.pack("=I", 0))
    return msg(RTM_NEWLINK, flags, ifinfo(index, f) + attrs)


SEEDS = {
    "ack": error(0, request_route()),
    "ack-uncapped": error(0, request_address(), capped=False),
    "error-eexist": error(-17, request_address(), capped=False),
    "error-eperm": error(-1, request_route()),
    "error-einval-exterr": error(-22, request_route(), tlvs=attr(NLMSGERR_ATTR_MSG, b"Invalid prefix for given prefix length.\0")
                                 + attr(NLMSGERR_ATTR_OFFS, struct.pack("=I", 20))),
    "getlink-reply": newlink() + error(0, request_getlink()),
    "getlink-down": newlink(index=12, name=b"wg-gateway0", mtu=65535, up=False) + error(0, request_getlink()),
    "getlink-enodev": error(-19, request_getlink()),
    "dump": newlink(1, b"lo", 65536, flags=F_MULTI) + newlink(7, flags=F_MULTI) + msg(NLMSG_DONE, F_MULTI, struct.pack("=i", 0)),
    "dump-interrupted": newlink(7, flags=F_MULTI | F_DUMP_INTR) + msg(NLMSG_DONE, F_MULTI | F_DUMP_INTR, struct.pack("=i", 0)),
    "noop-overrun-ack": msg(NLMSG_NOOP, 0, b"") + msg(NLMSG_OVERRUN, 0, b"") + error(0, request_route()),
    "other-sequence": error(0, request_route())[:8] + struct.pack("=II", SEQ + 1, PORT) + error(0, request_route())[16:],
    "other-port": error(0, request_route())[:12] + struct.pack("=I", PORT + 1) + error(0, request_route())[16:],
    "error-truncated": error(-17, request_route())[:20],
    "newlink-short": msg(RTM_NEWLINK, 0, ifinfo(7, IFF_UP)[:8]) + error(0, request_getlink()),
    "mtu-wrong-size": msg(RTM_NEWLINK, 0, ifinfo(7, IFF_UP) + attr(IFLA_MTU, b"\x05\x00")) + error(0, request_getlink()),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "seeds")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
