#!/usr/bin/env python3
"""Test client for the end-to-end scripts (runs in the client namespace).

  send-sha HOST MB        send MB of deterministic bytes to TCP 7000, compare the server's SHA-256
  recv-sha HOST MB        ask TCP 7005 for MB MiB of deterministic bytes, check they arrive intact
  udp-burst HOST N        N numbered 1,000-byte datagrams to UDP 7003 as fast as possible; checks every
                          echo is intact and prints "burst RECEIVED/N intact" (or CORRUPT)
  connect HOST PORT SECS  try a TCP connection: prints connected | refused | timeout (and seconds)
  udp-echo HOST           one datagram to UDP 7003 and its echo
  hold HOST SECS          a connection to TCP 7004 exchanging a line every 0.1 s; prints
                          "alive N" lines; exits printing "cut after N" once no echo came for 2 s,
                          or "held N" after SECS seconds
"""
import hashlib, socket, sys, time

def conn(host, port, timeout):
    return socket.create_connection((host, port), timeout=timeout)

cmd = sys.argv[1]
if cmd == "send-sha":
    host, mb = sys.argv[2], int(sys.argv[3])
    h = hashlib.sha256()
    block = hashlib.sha256(b"tunnelvision").digest() * 32768  # 1 MiB
    with conn(host, 7000, 10) as s:
        s.settimeout(60)
        for i in range(mb):
            chunk = bytes([i & 0xFF]) + block[1:]
            s.sendall(chunk); h.update(chunk)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            b = s.recv(128)
            if not b: break
            got += b
    ok = got.decode() == h.hexdigest()
    print(("intact" if ok else "CORRUPT") + f" {mb} MiB sha256={h.hexdigest()} server={got.decode()}")
    sys.exit(0 if ok else 1)
elif cmd == "recv-sha":
    host, mb = sys.argv[2], int(sys.argv[3])
    block = hashlib.sha256(b"tunnelvision").digest() * 32768
    want, got = hashlib.sha256(), hashlib.sha256()
    for i in range(mb): want.update(bytes([i & 0xFF]) + block[1:])
    n = 0
    with conn(host, 7005, 10) as s:
        s.settimeout(60)
        s.sendall(f"{mb}\n".encode())
        while True:
            b = s.recv(1 << 20)
            if not b: break
            got.update(b); n += len(b)
    ok = n == mb << 20 and got.digest() == want.digest()
    print(("intact" if ok else "CORRUPT") + f" {n} bytes of {mb} MiB sha256={got.hexdigest()}")
    sys.exit(0 if ok else 1)
elif cmd == "udp-burst":
    host, n = sys.argv[2], int(sys.argv[3])
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.connect((host, 7003))
    def body(i): return i.to_bytes(4, "big") + bytes([(i * 7 + k) & 0xFF for k in range(996)])
    for i in range(n):
        s.send(body(i))
    s.settimeout(2)
    seen, bad = set(), 0
    try:
        while len(seen) < n:
            b = s.recv(2048)
            i = int.from_bytes(b[:4], "big")
            if len(b) != 1000 or i >= n or b != body(i): bad += 1
            else: seen.add(i)
    except socket.timeout:
        pass
    print(("burst" if bad == 0 else "CORRUPT") + f" {len(seen)}/{n} intact, {bad} corrupt")
    sys.exit(0 if bad == 0 else 1)
elif cmd == "connect":
    host, port, secs = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    t0 = time.time()
    try:
        with conn(host, port, secs): print(f"connected {time.time()-t0:.2f}")
    except ConnectionRefusedError:
        print(f"refused {time.time()-t0:.2f}")
    except (socket.timeout, TimeoutError):
        print(f"timeout {time.time()-t0:.2f}")
    except OSError as e:
        print(f"error {e} {time.time()-t0:.2f}")
elif cmd == "udp-echo":
    host = sys.argv[2]
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM); s.settimeout(3)
    s.sendto(b"hello over udp", (host, 7003))
    try:
        b, _ = s.recvfrom(100); print("echo " + b.decode())
    except (socket.timeout, TimeoutError):
        print("timeout"); sys.exit(1)
elif cmd == "hold":
    host, secs = sys.argv[2], float(sys.argv[3])
    n = 0; t0 = time.time()
    with conn(host, 7004, 5) as s:
        s.settimeout(2)
        while time.time() - t0 < secs:
            try:
                s.sendall(b"ping\n")
                if s.recv(64) == b"": print(f"cut after {n}", flush=True); sys.exit(0)
                n += 1
                if n % 10 == 0: print(f"alive {n}", flush=True)
            except (socket.timeout, TimeoutError, OSError):
                print(f"cut after {n}", flush=True); sys.exit(0)
            time.sleep(0.1)
    print(f"held {n}", flush=True)
