#!/usr/bin/env python3
"""Seeds for the pcap fuzzer: capture files as CaptureWriter writes them (nanosecond pcap,
LINKTYPE_RAW) holding IPv4 TCP/UDP/ICMP and IPv6 TCP/ICMPv6 packets, one with a truncated last
record, one microsecond file, one of another link type.   fuzz/pcap/make_seeds.py OUTDIR"""
import os, struct, sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

def ipv4(proto, payload, src=b"\x0a\x63\x00\x02", dst=b"\xc0\xa8\x01\x05"):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, src, dst)
    return h + payload

def ipv6(nh, payload, src=b"\xfd\x99" + b"\x00" * 13 + b"\x02", dst=b"\xfd\x99" + b"\x00" * 13 + b"\x01"):
    return struct.pack("!IHBB", 0x60000000, len(payload), nh, 64) + src + dst + payload

tcp = struct.pack("!HHIIBBHHH", 40000, 443, 1, 0, 0x50, 0x02, 65535, 0, 0)
udp = struct.pack("!HHHH", 5353, 53, 8 + 4, 0) + b"abcd"
icmp = struct.pack("!BBHHH", 8, 0, 0, 7, 1) + b"ping"
icmp6 = struct.pack("!BBHHH", 128, 0, 0, 7, 1)
packets = [ipv4(6, tcp), ipv4(17, udp), ipv4(1, icmp), ipv6(6, tcp), ipv6(58, icmp6)]

def pcap(pkts, magic=0xA1B23C4D, linktype=101, snaplen=262144, cut=0):
    b = struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)
    for i, p in enumerate(pkts):
        b += struct.pack("<IIII", 1764400000 + i, 500 * i, len(p), len(p)) + p
    return b[: len(b) - cut]

seeds = {
    "raw-ns.pcap": pcap(packets),
    "raw-ns-truncated.pcap": pcap(packets, cut=7),
    "raw-us.pcap": pcap(packets[:2], magic=0xA1B2C3D4),
    "metadata-snaplen.pcap": pcap([p[:40] for p in packets], snaplen=128),
    "ethernet.pcap": pcap(packets[:1], linktype=1),
    "header-only.pcap": pcap([]),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
