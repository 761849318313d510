#!/usr/bin/env bash
# End to end: every record stays true through policy reloads. A real wireguard-go client makes
# flows through tunneld under policy generation 1, then after each of three reloads that insert
# rules before existing ones, remove a file, shift lines and change reasons. A copy of the rule
# files is saved for every generation. For every stored flow and flow refusal, the rule and reason
# the history records must be what `tunnelctl policy test` gives on the saved copy of the
# generation that decided it; `explain FLOW` (on that copy) agrees, and so does `timeline`.
# The same holds after tunneld restarts (the rows are read back, not re-derived). Needs root.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
GEN1="$TV_DIR/gen1"
mkdir -p "$GEN1" "$TV_DIR/saved"

cat >"$GEN1/10-exceptions.rules" <<'RULES'
default allow
default in block
allow in proto icmp,icmpv6 reason "the server may ping back"
allow proto udp port 53 name dns reason "dns is always fine"
RULES
cat >"$GEN1/30-mail.rules" <<'RULES'
block proto tcp port 25 name no-smtp reason "no outgoing mail"
RULES
cat >"$GEN1/50-ads.rules" <<'RULES'
# ads and trackers
block proto tcp port 7001 name ads reason "ad and tracking domains"
reject proto udp port 7002 name ads-udp reason "ads over udp"
RULES

tv_topology_up
tv_tunneld_config "$GEN1" free
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py
check "handshake completes and the server answers ping through the tunnel" tv_wait_tunnel
wait_for 5 tv_in "$TV_NS_C" bash -c "exec 3<>/dev/tcp/$TV_SRV/7004" >/dev/null

# save_generation: the rule files now in force, copied under the generation tunneld reports.
save_generation() {
  local gen
  gen=$($CTL policy show --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["policy"]["generation"])')
  rm -rf "$TV_DIR/saved/$gen"; cp -r "$TV_DIR/policies" "$TV_DIR/saved/$gen"
  echo "$gen"
}
# reload: `policy reload` must apply; the new rule files are saved under the new generation.
reload() {
  local out
  out=$($CTL policy reload --json) || { echo "$out"; return 1; }
  python3 -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r["reloaded"] else 1)' <<<"$out" || { echo "$out"; return 1; }
  save_generation >/dev/null
}
# traffic: one of each kind of flow (new source ports), plus the long-lived UDP flow from source
# port 45000, which every reload makes the gateway decide again.
traffic() {
  tv_in "$TV_NS_C" python3 - "$TV_SRV" <<'PY'
import socket, sys
srv = sys.argv[1]
def tcp(port):
    s = socket.socket(); s.settimeout(1.0)
    try:
        s.connect((srv, port)); s.sendall(b"hi\n"); s.recv(16)
    except OSError:
        pass
    finally:
        s.close()
def udp(port, sport=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(0.5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", sport))
    try:
        s.sendto(b"hi", (srv, port)); s.recv(16)
    except OSError:
        pass
    finally:
        s.close()
for p in (7004, 25, 7001):
    tcp(p)
for p in (53, 7002, 7003):
    udp(p)
udp(7003, 45000)
PY
}

G1=$(save_generation)
traffic
echo "reload 1: 05-x.rules inserted before every other file"
cat >"$TV_DIR/policies/05-x.rules" <<'RULES'
block proto tcp port 7004 name x-echo reason "x: echo closed"
allow proto tcp port 25 name x-mail reason "x: mail open"
RULES
check "policy reload 1 applies" reload
traffic
echo "reload 2: 50-ads.rules removed, 30-mail.rules shifted and reworded, 05-x.rules changed"
rm "$TV_DIR/policies/50-ads.rules"
cat >"$TV_DIR/policies/30-mail.rules" <<'RULES'
# mail, reworded in generation 3
block proto tcp port 25,7001 name no-smtp reason "mail and 7001 closed"
RULES
cat >"$TV_DIR/policies/05-x.rules" <<'RULES'
block proto tcp port 7004 name x-echo reason "x: echo closed, reworded"
RULES
check "policy reload 2 applies" reload
traffic
echo "reload 3: a new first file rejects the UDP echo"
cat >"$TV_DIR/policies/01-first.rules" <<'RULES'
reject proto udp port 7003 name udp-echo reason "udp echo now rejected"
block proto udp port 7002 name ads-udp reason "ads over udp, blocked now"
RULES
check "policy reload 3 applies" reload
traffic
sleep 6   # the history sweep (5 s) and the writer
echo "generations saved: $(ls "$TV_DIR/saved" | sort -n | tr '\n' ' ')"

# verify LABEL: every stored flow and flow refusal against policy test on its generation's copy.
verify() {
  python3 - "$TV_TUNNELCTL" "$TV_DIR/tunneld.conf" "$TV_DIR/saved" "$1" <<'PY'
import json, os, subprocess, sys
ctl, conf, saved, label = sys.argv[1:5]
gens = sorted(int(g) for g in os.listdir(saved))
fails = 0; checked = 0
def run(*args):
    p = subprocess.run([ctl, "--config", conf, *args], capture_output=True, text=True)
    if not p.stdout.strip():
        sys.exit(f"tunnelctl {' '.join(args)}: exit {p.returncode}, no output: {p.stderr.strip()}")
    return p.returncode, p.stdout
def ep(addr, port):
    a = f"[{addr}]" if ":" in addr else addr
    return a if port is None else f"{a}:{port}"
def flow_text(proto, src, sport, dst, dport):
    # The originator is alice (out) unless the flow came from outside (in).
    inbound = not (src.startswith("10.99.0.") or src.startswith("fd99::"))
    return f"{proto} {ep(src, sport)} -> {ep(dst, dport)} peer alice" + (" in" if inbound else "")
def copy_for(gen):
    # The rule files of a generation: the latest copy saved at or below it.
    g = max(x for x in gens if x <= gen)
    return os.path.join(saved, str(g))
def expected(flow, gen):
    rc, out = run("policy", "test", flow, "--policies", copy_for(gen), "--json")
    t = json.loads(out)
    if t["default"]:
        return t["verdict"], None, "default " + t["verdict"]
    r = t["rule"]
    return t["verdict"], (os.path.basename(r["file"]), r["line"]), t.get("reason") or r.get("name") or t["text"]
def bad(what, got, want):
    global fails
    fails += 1
    print(f"  FAIL  {label}: {what}\n          recorded {got}\n          policy test on its generation: {want}")
def ok(what):
    print(f"  ok    {label}: {what}")
_, out = run("flows", "--since", "forever", "--json")
flows = json.loads(out)
_, out = run("timeline", "--since", "forever", "--json")
timeline = {e["id"]: e for e in json.loads(out)["events"] if e["event"] in ("flow-open", "flow-block")}
for f in flows:
    if f["verdict"] == "pending":
        continue
    checked += 1
    text = flow_text(f["proto"], f["src"], f["srcPort"], f["dst"], f["dstPort"])
    gen = f["generation"]
    if gen is None:
        bad(f"flow #{f['id']} {text} records its generation", None, "a generation"); continue
    verdict, rule, reason = expected(text, gen)
    got_rule = (os.path.basename(f["rule"]["file"]), f["rule"]["line"]) if f["rule"] else None
    if (f["verdict"], got_rule, f["reason"]) != (verdict, rule, reason):
        bad(f"flow #{f['id']} {text} (gen {gen})", (f["verdict"], got_rule, f["reason"]), (verdict, rule, reason)); continue
    # explain FLOW on the same copy decides the same, and lists this stored row with the same rule.
    rc, out = run("explain", text, "--policies", copy_for(gen), "--json")
    e = json.loads(out)
    e_rule = (os.path.basename(e["rule"]["file"]), e["rule"]["line"]) if e["rule"] else None
    rows = [r for r in e["flows"] if r["id"] == f["id"]]
    if (e["verdict"], e_rule) != (verdict, rule) or (rows and (rows[0]["reason"], rows[0]["generation"]) != (reason, gen)):
        bad(f"explain agrees on flow #{f['id']} {text}", (e["verdict"], e_rule, rows[:1]), (verdict, rule, reason, gen)); continue
    ev = timeline.get(f["id"])
    by = f"{rule[0]}:{rule[1]}: {reason}" if rule else "the default ("
    if ev is None or by not in ev["summary"]:
        bad(f"timeline agrees on flow #{f['id']}", ev and ev["summary"], by); continue
_, out = run("refusals", "--since", "forever", "--json")
for r in json.loads(out):
    if r["kind"] != "flow" or r["reason"].startswith("flow-limit"):
        continue
    checked += 1
    text = flow_text(r["proto"], "10.99.0.2", 40000 if r["dstPort"] is not None else None, r["dst"], r["dstPort"])
    gen = r["generation"]
    if gen is None:
        bad(f"refusal {text} records its generation", None, "a generation"); continue
    verdict, rule, reason = expected(text, gen)
    got_rule = (os.path.basename(r["rule"]["file"]), r["rule"]["line"]) if r["rule"] else None
    if (got_rule, r["reason"]) != (rule, reason) or verdict == "allow":
        bad(f"refusal of {r['proto']} {r['dst']}:{r['dstPort']} (gen {gen})", (got_rule, r["reason"]), (verdict, rule, reason))
print(f"  {'ok   ' if fails == 0 else 'FAIL '} {label}: {checked} stored flows and refusals checked, {fails} wrong")
gens_seen = {f["generation"] for f in flows if f["generation"] is not None}
print(f"  {'ok   ' if len(gens_seen) >= 4 else 'FAIL '} {label}: rows of {len(gens_seen)} generations (want 4 or more)")
sys.exit(0 if fails == 0 and checked >= 20 and len(gens_seen) >= 4 else 1)
PY
}
check "every stored flow and refusal names its own generation's rule and reason (explain and timeline agree)" verify "live"
kill "$TV_GW_PID" 2>/dev/null; wait "$TV_GW_PID" 2>/dev/null
echo "restart: the same rows read back"
check "tunneld starts again" tv_gateway_tunneld_up
check "after a restart every stored row still names its own generation's rule and reason" verify "restarted"
tv_summary
