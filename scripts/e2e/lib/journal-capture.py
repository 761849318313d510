#!/usr/bin/env python3
"""A stand-in for journald's native socket, for scripts/e2e/journal.sh: binds SOCKET (a Unix
datagram socket, the path sd_journal_send(3) writes to: /run/systemd/journal/socket inside the
test's own mount namespace), parses each datagram in the native journal protocol (systemd's
JOURNAL_NATIVE_PROTOCOL: `KEY=value\\n` fields, or `KEY\\n` + 64-bit little-endian length +
value + `\\n` for values with newlines) and appends one line per entry to OUT:
    <MESSAGE> KEY=value KEY=value ...     (every field but MESSAGE, PRIORITY, SYSLOG_IDENTIFIER)
plus the whole entry as JSON to OUT.json, until it is killed. A datagram it cannot parse is
written as `UNPARSABLE <hex>` (the test fails on it).
  journal-capture.py SOCKET OUT"""
import json, os, socket, struct, sys

path, out = sys.argv[1], sys.argv[2]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o666)
open(out + ".ready", "w").close()

def parse(d):
    fields, i = [], 0
    while i < len(d):
        nl = d.index(b"\n", i)
        line = d[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            (n,) = struct.unpack("<Q", d[nl + 1:nl + 9])
            v = d[nl + 9:nl + 9 + n]
            if d[nl + 9 + n:nl + 10 + n] != b"\n":
                raise ValueError("value not followed by a newline")
            i = nl + 10 + n
        fields.append((k.decode(), v.decode()))
    return fields

while True:
    d = s.recv(1 << 20)
    try:
        f = parse(d)
    except Exception:
        with open(out, "a") as o:
            o.write("UNPARSABLE " + d.hex() + "\n")
        continue
    msg = dict(f).get("MESSAGE", "")
    rest = " ".join(f"{k}={v}" for k, v in f if k not in ("MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"))
    with open(out, "a") as o:
        o.write(msg + (" " + rest if rest else "") + "\n")
    with open(out + ".json", "a") as o:
        o.write(json.dumps(f) + "\n")
