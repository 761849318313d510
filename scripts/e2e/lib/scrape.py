#!/usr/bin/env python3
"""Scrapes an HTTP URL N times over one keep-alive connection (so the cost measured is the
server's, not N process starts); prints `scrapes N ok M failed F bytes B seconds S`.
  scrape.py HOST PORT PATH N [PER_SECOND]
PER_SECOND paces the requests (scrape k is sent at k/PER_SECOND s after the start, or at once
when late); without it they go back to back."""
import http.client, sys, time

host, port, path, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rate = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
ok = failed = size = 0
conn = None
start = time.monotonic()
for k in range(n):
    if rate > 0:
        due = start + k / rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
    try:
        if conn is None:
            conn = http.client.HTTPConnection(host, port, timeout=5)
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        if r.status == 200 and body.startswith(b"# HELP"):
            ok += 1
            size = len(body)
        else:
            failed += 1
        if r.getheader("Connection", "").lower() == "close":
            conn.close(); conn = None
    except Exception:
        failed += 1
        conn = None
print(f"scrapes {n} ok {ok} failed {failed} bytes {size} seconds {time.monotonic() - start:.2f}")
