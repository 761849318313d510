#!/usr/bin/env python3
"""Concurrent TCP flows for scripts/e2e/limits-rate.sh (runs in the client namespace), to the
echo server on TCP 7004 of netserver.py.

  open SRC HOST N         opens N connections from address SRC one after the other (2 s connect
                          timeout each) and keeps them all open; prints "connected K/N" and, if
                          one failed, "first failure at I (timeout|refused)"; exits at once.
  hold SRC HOST N SECS    opens N connections from SRC, prints "connected K/N", keeps them open
                          SECS seconds, then sends a line on each and prints "alive A/K" (A: those
                          that echoed it back).
"""
import socket, sys, time

def connect(src, host):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(2)
    s.connect((host, 7004))
    return s

def open_many(src, host, n, stop_at_failure):
    socks, failure = [], None
    for i in range(n):
        try:
            socks.append(connect(src, host))
        except socket.timeout:
            failure = failure or (i + 1, "timeout")
            if stop_at_failure: break
        except OSError:
            failure = failure or (i + 1, "refused")
            if stop_at_failure: break
    return socks, failure

cmd, src, host, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
socks, failure = open_many(src, host, n, cmd == "open")
print(f"connected {len(socks)}/{n}", flush=True)
if failure: print(f"first failure at {failure[0]} ({failure[1]})", flush=True)
if cmd == "hold":
    time.sleep(float(sys.argv[5]))
    alive = 0
    for s in socks:
        try:
            s.settimeout(3)
            s.sendall(b"ping\n")
            if s.recv(16) == b"ping\n": alive += 1
        except OSError:
            pass
    print(f"alive {alive}/{len(socks)}", flush=True)
for s in socks: s.close()
