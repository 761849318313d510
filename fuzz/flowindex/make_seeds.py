#!/usr/bin/env python3
"""Seeds for the flow-index fuzzer: `.flows` files of 64-byte little-endian entries as
CaptureFlowIndex writes them (id; a high, a low; b high, b low; ports|version|protocol; offset;
sequence|seconds), one with a torn last entry.   fuzz/flowindex/make_seeds.py OUTDIR"""
import os, struct, sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

def entry(fid, version, proto, a, b, aport, bport, offset, seq=1, secs=1764400000):
    ports = aport | bport << 16 | version << 32 | proto << 40
    return struct.pack("<8Q", fid, a >> 64, a & (2**64 - 1), b >> 64, b & (2**64 - 1), ports, offset, seq | secs << 32)

v4 = entry(7, 4, 6, 0x0A630002, 0xC0A80105, 40000, 443, 24)
v6 = entry(8, 6, 17, 0xFD99 << 112 | 2, 0xFD99 << 112 | 1, 5353, 53, 120)
icmp = entry(9, 4, 1, 0x0A630002, 0x08080808, 7, 0, 300)
seeds = {"two.flows": v4 + v6, "three-torn.flows": v4 + v6 + icmp[:30], "one-other-file.flows": entry(7, 4, 6, 1, 2, 3, 4, 24, seq=2)}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
