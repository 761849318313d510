#!/usr/bin/env python3
"""Sets per-peer limit keys in a tunneld.conf (issue 16) for the e2e and bench scripts.

usage: setlimits.py CONF 'NAME:rate=BPS,rateUp=BPS,rateDown=BPS,maxFlows=N,newFlowRate=N;NAME2:...'

Lines this script added before (marked '# setlimits') are removed first, so an empty spec
clears them. Keys go right after the peer's 'Name =' line, where tunneld reads them as that
[Peer]'s own limits."""
import re, sys

KEYS = {"rate": ("Rate", "{}bit"), "rateUp": ("RateUp", "{}bit"), "rateDown": ("RateDown", "{}bit"),
        "maxFlows": ("MaxFlows", "{}"), "newFlowRate": ("NewFlowRate", "{}/s"),
        "quota": ("Quota", "{}"), "idle": ("IdleTimeout", "{}")}

path, spec = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
wanted = {}
for part in filter(None, spec.split(";")):
    name, _, kvs = part.partition(":")
    lines = []
    for kv in filter(None, kvs.split(",")):
        k, _, v = kv.partition("=")
        if k not in KEYS:
            sys.exit(f"setlimits: unknown key {k!r}")
        key, fmt = KEYS[k]
        lines.append(f"{key} = {fmt.format(v)}  # setlimits")
    wanted[name] = lines
out = []
for line in open(path).read().splitlines():
    if line.endswith("# setlimits"):
        continue
    out.append(line)
    m = re.match(r"\s*Name\s*=\s*(\S+)", line)
    if m and m.group(1) in wanted:
        out.extend(wanted.pop(m.group(1)))
if wanted:
    sys.exit(f"setlimits: no [Peer] named {', '.join(wanted)}")
open(path, "w").write("\n".join(out) + "\n")
