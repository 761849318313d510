#!/usr/bin/env python3
"""Seeds for the state.db fuzzer: a real store (made by any writing tunnelctl command, e.g.
`tunnelctl audit mark x`) given as the first argument, filled with one row of every kind,
rewritten with 512-byte pages and no WAL so each seed is small. Writes OUTDIR/store-full.db and
OUTDIR/store-empty.db (the schema only).
    fuzz/statedb/make_seeds.py STATE_DB OUTDIR"""
import os, shutil, sqlite3, sys

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)

def small(path):
    c = sqlite3.connect(path)
    c.execute("PRAGMA journal_mode=DELETE")
    c.execute("PRAGMA page_size=512")
    c.execute("VACUUM")
    c.close()

empty = os.path.join(out, "store-empty.db")
shutil.copy(src, empty)
c = sqlite3.connect(empty)
for t in ["flows", "refusals", "sessions", "session_windows", "markers", "audit_sessions", "peer_tiers", "daemon_state"]:
    c.execute(f"DELETE FROM {t}")
c.commit(); c.close(); small(empty)

full = os.path.join(out, "store-full.db")
shutil.copy(src, full)
c = sqlite3.connect(full)
v4a, v4b = bytes([10, 99, 0, 2]), bytes([192, 168, 1, 5])
c.execute("INSERT INTO flows (id, proto, src_addr, src_port, dst_addr, dst_port, peer, host, first_seen, last_seen, verdict, rule, capture_file, capture_offset, closed_at, close_reason) VALUES (1, 6, ?, 40000, ?, 443, 'alice', 'example.com', 1000, 2000, 'block', '10-block.rules:3', 1, 24, 3000, 'fin')", (v4a, v4b))
c.execute("INSERT INTO flows (id, proto, src_addr, src_port, dst_addr, dst_port, peer, first_seen, last_seen, verdict) VALUES (2, 17, ?, 5353, ?, 53, 'bob', 1500, 1600, 'allow')", (v4a, v4b))
c.execute("INSERT INTO refusals (kind, peer, rule, flow_key, reason, window, count, first_at, last_at) VALUES ('flow', 'alice', '10-block.rules:3', 'tcp 192.168.1.5:443', 'no', 0, 3, 1000, 1200)")
c.execute("INSERT INTO refusals (kind, peer, window, count, first_at, last_at) VALUES ('session', 'bob', 5, 1, 1000, 1000)")
c.execute("INSERT INTO sessions (peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes) VALUES ('alice', 900, 2000, 'free-limit', 10, 20)")
c.execute("INSERT INTO sessions (peer, started_at) VALUES ('bob', 1900)")
c.execute("INSERT INTO session_windows VALUES ('alice', 900900, 3600900)")
c.execute("INSERT OR REPLACE INTO peer_tiers VALUES ('carol', 'premium', 1000)")
c.execute("INSERT OR REPLACE INTO daemon_state VALUES (1, 4242, 100, 2000, 3)")
c.commit(); c.close(); small(full)
