#!/usr/bin/env python3
"""Writes a few valid packets (v4/v6, TCP/UDP/ICMP, options, extension headers, fragments)
into fuzz/packet/seeds/ as starting points for libFuzzer."""
import os, struct
here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "seeds")
os.makedirs(out, exist_ok=True)

def v4(proto, payload, options=b"", frag=0):
    ihl = (20 + len(options)) // 4
    return struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(options) + len(payload), 0x1234, frag, 64, proto, 0,
                       bytes([10, 99, 0, 2]), bytes([192, 0, 2, 10])) + options + payload

def v6(nh, payload):
    return struct.pack("!IHBB", 0x60000000, len(payload), nh, 64) + bytes.fromhex("fd99" + "00" * 13 + "02") \
        + bytes.fromhex("20010db8" + "00" * 11 + "01") + payload

tcp = struct.pack("!HHIIBBHHH", 40000, 443, 7, 0, 0x50, 0x02, 65535, 0, 0)
udp = struct.pack("!HHHH", 5353, 53, 12, 0) + b"abcd"
icmp = struct.pack("!BBHHH", 8, 0, 0, 7, 1) + b"ping"
opt = bytes([0, 0, 1, 4, 0, 0, 0, 0])  # options header, next-header byte patched below
seeds = {
    "v4tcp": v4(6, tcp), "v4udp": v4(17, udp), "v4icmp": v4(1, icmp), "v4opts": v4(17, udp, options=bytes([0x94, 4, 0, 0])),
    "v4frag": v4(17, udp, frag=0x2000), "v4later": v4(17, b"abcdefgh", frag=4),
    "v6tcp": v6(6, tcp), "v6udp": v6(17, udp), "v6icmp": v6(58, bytes([128]) + icmp[1:]),
    "v6chain": v6(0, bytes([60]) + opt[1:] + bytes([43]) + opt[1:] + bytes([6]) + opt[1:] + tcp),
    "v6frag": v6(44, bytes([17, 0, 0, 1, 0, 0, 0, 9]) + udp),
}
# A real ClientHello (OpenSSL 3, SNI www.Example.com) and an HTTP request, raw and in TCP.
hello = bytes.fromhex("1603010200010001fc03037816643d3a80a44205d9432297b8325b134a35212043dec24fdddb617a80491e20a68f713b5c0cbecad8f189b2c1f8f28b5cf7c2dc704f885b0f5de803af6c22990024130213031301c02cc030c02bc02fcca9cca8c024c028c023c027009f009e006b006700ff0100018f00000014001200000f7777772e4578616d706c652e636f6d000b000403000102000a00160014001d0017001e0019001801000101010201030104002300000016000000170000000d002a0028040305030603080708080809080a080b080408050806040105010601030303010302040205020602002b00050403040303002d00020101003300260024001d002038ef8c3589c7a64b4bfc0f8745b4aac6587fca93bb86e53b4c16e01ed3051446001500de") + bytes(0xDE)
http = b"GET / HTTP/1.1\r\nHost: www.example.com:8080\r\nAccept: */*\r\n\r\n"
tcpdata = struct.pack("!HHIIBBHHH", 40000, 443, 7, 1, 0x50, 0x18, 65535, 0, 0)
seeds.update({"tls": hello, "http": http, "v4tls": v4(6, tcpdata + hello), "v6http": v6(6, tcpdata + http)})
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {out}")
