#!/usr/bin/env python3
"""Writes seed inputs for the offload fuzzer: 10-byte virtio_net_hdr + packet (TSO/USO
super-packets over IPv4/IPv6, NEEDS_CSUM singles, plain packets). Usage: make_seeds.py DIR"""
import os, struct, sys

def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16: s = (s & 0xFFFF) + (s >> 16)
    return s

def packet(v6, tcp, payload, flags=0x18, options=b''):
    l4 = (struct.pack('!HHIIBBHHH', 40000, 443, 1000, 77, (20 + len(options)) // 4 << 4, flags, 501, 0, 0) + options
          if tcp else struct.pack('!HHHH', 40000, 443, 8 + len(payload), 0)) + payload
    proto = 6 if tcp else 17
    src, dst = (b'\xfd' + b'\0' * 14 + b'\1', b'\xfd' + b'\0' * 14 + b'\2') if v6 else (bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    if v6:
        ip = struct.pack('!IHBB', 0x60000000, len(l4), proto, 64) + src + dst
        pseudo = src + dst + struct.pack('!IxxxB', len(l4), proto)
    else:
        h = struct.pack('!BBHHHBBH', 0x45, 0, 20 + len(l4), 0xfffe, 0x4000, 64, proto, 0) + src + dst
        ip = h[:10] + struct.pack('!H', ~csum(h) & 0xFFFF) + h[12:]
        pseudo = src + dst + struct.pack('!xBH', proto, len(l4))
    at = 16 if tcp else 6
    partial = struct.pack('!H', csum(pseudo))  # what a NEEDS_CSUM read holds
    return ip + l4[:at] + partial + l4[at + 2:], len(ip), len(ip) + (20 + len(options) if tcp else 8)

def hdr(flags, gso, hl, size, start, off):
    return struct.pack('<BBHHHH', flags, gso, hl, size, start, off)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
seeds = {}
for v6 in (False, True):
    for tcp in (False, True):
        name = ('v6' if v6 else 'v4') + ('tcp' if tcp else 'udp')
        p, ip, hl = packet(v6, tcp, bytes(range(256)) * 3, options=b'\1\1\x08\x0a' + b'\0' * 8 if tcp else b'')
        gso = (4 if v6 else 1) if tcp else 5
        seeds[name + '-gso'] = hdr(1, gso, hl, 100, ip, 16 if tcp else 6) + p
        seeds[name + '-gso-small'] = hdr(1, gso, hl, 7, ip, 16 if tcp else 6) + p[:hl + 20]
        q, ip, hl = packet(v6, tcp, b'hello world')
        seeds[name + '-csum'] = hdr(1, 0, 0, 0, ip, 16 if tcp else 6) + q
seeds['plain'] = hdr(0, 0, 0, 0, 0, 0) + packet(False, True, b'x')[0]
# Batch mode (FF FF, flags, [u16 length][packet]...): a run of one valid packet, and a mixed batch.
for v6 in (False, True):
    for tcp in (False, True):
        p, ip, hl = packet(v6, tcp, bytes(range(200)), flags=0x10)
        l4 = p[ip:]
        proto = 6 if tcp else 17
        src_dst = p[8:40] if v6 else p[12:20]
        pseudo = src_dst + (struct.pack('!IxxxB', len(l4), proto) if v6 else struct.pack('!xBH', proto, len(l4)))
        at = 16 if tcp else 6
        zeroed = l4[:at] + b'\0\0' + l4[at + 2:]
        valid = p[:ip] + zeroed[:at] + struct.pack('!H', ~csum(pseudo + zeroed) & 0xFFFF or 0xFFFF) + zeroed[at + 2:]
        name = 'batch-' + ('v6' if v6 else 'v4') + ('tcp' if tcp else 'udp')
        seeds[name] = b'\xff\xff\x03' + struct.pack('!H', len(valid)) + valid
        seeds[name + '-mixed'] = b'\xff\xff\x01' + b''.join(struct.pack('!H', len(x)) + x for x in (valid, valid[:30], valid))
for k, v in seeds.items():
    with open(os.path.join(out, k), 'wb') as f: f.write(v)
