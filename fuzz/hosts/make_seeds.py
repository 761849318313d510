#!/usr/bin/env python3
"""Writes seeds for the host-learning fuzzer into fuzz/hosts/seeds/. The first byte of each
picks the target (mod 6): 0 DNS over UDP, 1 DNS over TCP, 2 reassembly (TLS/HTTP), 3 QUIC
datagram, 4/5 QUIC plaintext sealed as an Initial (bit 7 clear: v1, set: v2)."""
import os, re, struct
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
out = os.path.join(here, "seeds")
os.makedirs(out, exist_ok=True)

def name(s):
    return b"".join(bytes([len(l)]) + l.encode() for l in s.split(".")) + b"\0"

def rr(owner, rtype, data, ttl=300):
    return owner + struct.pack("!HHIH", rtype, 1, ttl, len(data)) + data

q = name("www.Example.com")
target = 12 + len(q) + 4 + 12
dns = struct.pack("!HHHHHH", 0x1234, 0x8180, 1, 4, 0, 0) + q + struct.pack("!HH", 1, 1)
dns += rr(b"\xc0\x0c", 5, name("edge.cdn.net"), 60)
dns += rr(struct.pack("!H", 0xC000 | target), 1, bytes([192, 0, 2, 7]))
dns += rr(struct.pack("!H", 0xC000 | target), 28, bytes.fromhex("20010db8" + "00" * 11 + "07"), 30)
dns += rr(name("evil.example"), 1, bytes([6, 6, 6, 6]))
loop = struct.pack("!HHHHHH", 1, 0x8180, 1, 0, 0, 0) + b"\xc0\x0c" + struct.pack("!HH", 1, 1)

vectors = open(os.path.join(root, "Sources/TestSupport/QUICVectors.swift")).read()
def vec(n):
    m = re.search(n + r' =\s*((?:"[0-9a-f]*"\s*\+?\s*)+)', vectors)
    return bytes.fromhex("".join(re.findall(r'"([0-9a-f]*)"', m.group(1))))
frame = vec("cryptoFrame")
hello = frame[4:]
tls = b"\x16\x03\x01" + struct.pack("!H", len(hello)) + hello

seeds = {
    "dns-cname": b"\x00" + dns, "dns-loop": b"\x00" + loop,
    "dns-tcp": b"\x01" + struct.pack("!H", len(dns)) + dns,
    "tls": b"\x02" + tls,
    "tls-records": b"\x02" + b"".join(b"\x16\x03\x01" + struct.pack("!H", len(hello[i:i + 50])) + hello[i:i + 50]
                                      for i in range(0, len(hello), 50)), "http": b"\x08" + b"GET / HTTP/1.1\r\nHost: Ads.Example.com:8080\r\nAccept: */*\r\n\r\n",
    "quic-v1": b"\x03" + vec("v1Packet"), "quic-v2": b"\x09" + vec("v2Packet"),
    "plain-v1": b"\x04" + frame + b"\x01" + bytes(20),
    "plain-v2": b"\x82" + b"\x06\x40\x64" + struct.pack("!H", 0x4000 | (len(hello) - 100)) + hello[100:]
                + b"\x02\x00\x00\x01\x00\x00" + b"\x06\x00\x40\x64" + hello[:100],
}
for k, v in seeds.items():
    with open(os.path.join(out, k), "wb") as f:
        f.write(v)
