#!/usr/bin/env python3
"""Test server for the end-to-end scripts (runs in the server namespace).

TCP 7000: sink — reads until EOF, answers with the SHA-256 of what it read.
TCP 7005: source — reads a line "MB\n", sends MB MiB of deterministic bytes (see `pattern`), closes.
TCP 7001, 7002, 7004: echo (7001 is blocked and 7002 rejected by the e2e policy; 7004 carries
the long-running connection that a policy reload cuts). UDP 7003: echo.
Every port listens on IPv4 and IPv6. Runs until killed.
"""
import hashlib, socket, threading

def serve_tcp(port, handler):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port)); s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handler, args=(c,), daemon=True).start()

def sink(c):
    h = hashlib.sha256()
    with c:
        while True:
            b = c.recv(1 << 20)
            if not b: break
            h.update(b)
        c.sendall(h.hexdigest().encode())

def pattern(i):
    """MiB number i of the deterministic stream (the client computes the same)."""
    return bytes([i & 0xFF]) + (hashlib.sha256(b"tunnelvision").digest() * 32768)[1:]

def source(c):
    with c:
        try:
            line = b""
            while not line.endswith(b"\n"):
                b = c.recv(16)
                if not b: return
                line += b
            for i in range(int(line)):
                c.sendall(pattern(i))
        except (OSError, ValueError):
            pass

def echo(c):
    with c:
        try:
            while True:
                b = c.recv(65536)
                if not b: break
                c.sendall(b)
        except OSError:
            pass

def serve_udp(port):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    while True:
        b, a = s.recvfrom(65536)
        s.sendto(b, a)

threads = [threading.Thread(target=serve_tcp, args=(7000, sink), daemon=True)]
threads += [threading.Thread(target=serve_tcp, args=(p, echo), daemon=True) for p in (7001, 7002, 7004)]
threads.append(threading.Thread(target=serve_tcp, args=(7005, source), daemon=True))
threads.append(threading.Thread(target=serve_udp, args=(7003,), daemon=True))
for t in threads: t.start()
print("ready", flush=True)
for t in threads: t.join()
