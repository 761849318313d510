#!/usr/bin/env python3
"""A systemd notify socket for tests (sd_notify(3)): receives datagrams on a path and logs each
message with what existed when it arrived (interface, route, control/UAPI sockets, metrics port).

  notifylisten.py SOCKET LOG IFACE ROUTE CONTROL_SOCK UAPI_SOCK METRICS_PORT
Run it inside the gateway namespace so /sys/class/net and the routing table are the daemon's."""
import os, socket, subprocess, sys, time

path, log, iface, route, control, uapi, port = sys.argv[1:8]
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o666)

def metrics_listening():
    try:
        with socket.create_connection(("127.0.0.1", int(port)), timeout=0.5):
            return 1
    except OSError:
        return 0

with open(log, "a", buffering=1) as out:
    out.write("listening\n")
    while True:
        data = s.recv(4096).decode("utf-8", "replace")
        state = {
            "iface": int(os.path.exists(f"/sys/class/net/{iface}") and
                         open(f"/sys/class/net/{iface}/operstate").read().strip() in ("up", "unknown")),
            "route": int(route in subprocess.run(["ip", "route", "show", route], capture_output=True, text=True).stdout),
            "control": int(os.path.exists(control)),
            "uapi": int(os.path.exists(uapi)),
            "metrics": metrics_listening(),
        }
        flags = " ".join(f"{k}={v}" for k, v in state.items())
        out.write(f"{time.monotonic():.3f} {data.replace(chr(10), '|')} :: {flags}\n")
