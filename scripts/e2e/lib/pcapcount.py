#!/usr/bin/env python3
"""Counts the packets of pcap files through libpcap itself (pcap_open_offline + pcap_next_ex).

Usage: pcapcount.py FILE...   prints "FILE PACKETS" per file; exits 1 if libpcap cannot open a
file or reports an error before its end (a torn record).
"""
import ctypes, ctypes.util, sys

lib = ctypes.CDLL(ctypes.util.find_library("pcap") or "libpcap.so.0.8")
lib.pcap_open_offline.restype = ctypes.c_void_p
lib.pcap_open_offline.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
lib.pcap_next_ex.restype = ctypes.c_int
lib.pcap_next_ex.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
lib.pcap_geterr.restype = ctypes.c_char_p
lib.pcap_geterr.argtypes = [ctypes.c_void_p]
lib.pcap_datalink.argtypes = [ctypes.c_void_p]
lib.pcap_close.argtypes = [ctypes.c_void_p]

bad = 0
for path in sys.argv[1:]:
    err = ctypes.create_string_buffer(512)
    p = lib.pcap_open_offline(path.encode(), err)
    if not p:
        print(f"{path} cannot-open {err.value.decode()}"); bad = 1; continue
    hdr, data = ctypes.c_void_p(), ctypes.c_void_p()
    n = 0
    while True:
        r = lib.pcap_next_ex(p, ctypes.byref(hdr), ctypes.byref(data))
        if r == 1: n += 1; continue
        if r == -2: break
        print(f"{path} error-after {n} {lib.pcap_geterr(p).decode()}"); bad = 1; break
    link = lib.pcap_datalink(p)
    lib.pcap_close(p)
    print(f"{path} {n} linktype {link}")
sys.exit(bad)
