#!/usr/bin/env bash
# End to end: Prometheus metrics (issue 17 item 1). tunneld with MetricsListen serves /metrics on
# the gateway namespace's loopback; a real scrape with curl passes `promtool check metrics`, shows
# alice's counters, rule hits and drops, and has the same names as `tunnelctl metrics` (one
# renderer); other paths, methods and bodies are refused. Then iperf3 through the tunnel, 3 runs of
# 4 s without and 4 s with 1,000 keep-alive scrapes running (waiting while /tmp/tv-quiet exists):
# the throughputs are printed, not asserted (timing is a
# benchmark's business). Needs root; ~40 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
URL=http://127.0.0.1:9586/metrics
curl_g() { tv_in "$TV_NS_G" curl -sS --max-time 5 "$@"; }

tv_topology_up
tv_tunneld_config e2e free
sed -i "s/^\[Interface\]$/[Interface]\nMetricsListen = 127.0.0.1:9586/" "$TV_DIR/tunneld.conf"
python3 scripts/e2e/lib/setlimits.py "$TV_DIR/tunneld.conf" "alice:quota=1TiB"  # the quota metrics (never reached by the iperf3 runs below)
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
check "alice's traffic flows" tv_wait_tunnel
tv_in "$TV_NS_C" python3 scripts/e2e/lib/netclient.py connect $TV_SRV 7001 1 >/dev/null 2>&1  # a policy-block drop

echo "metrics: a real scrape"
curl_g -D "$TV_DIR/headers" -o "$TV_DIR/scrape.txt" $URL
check_output "GET /metrics answers 200 with the exposition content type" 'text/plain; version=0.0.4' cat "$TV_DIR/headers"
check "promtool check metrics accepts the scrape" sh -c "promtool check metrics < '$TV_DIR/scrape.txt'"
check_output "alice's received bytes are counted" 'tunnelvision_peer_receive_bytes_total\{peer="alice",tier="free"\} [1-9]' cat "$TV_DIR/scrape.txt"
check_output "alice's packets are counted" 'tunnelvision_peer_transmit_packets_total\{peer="alice",tier="free"\} [1-9]' cat "$TV_DIR/scrape.txt"
check_output "alice is connected" 'tunnelvision_peer_session_state\{peer="alice",tier="free",state="connected"\} 1' cat "$TV_DIR/scrape.txt"
check_output "a free session shows its seconds left" 'tunnelvision_peer_session_remaining_seconds\{peer="alice",tier="free"\} [1-9]' cat "$TV_DIR/scrape.txt"
check_output "alice's quota is shown" 'tunnelvision_peer_quota_bytes\{peer="alice",tier="free",direction="total"\} 1099511627776$' cat "$TV_DIR/scrape.txt"
check_output "and what her window used of it, up" 'tunnelvision_peer_quota_used_bytes\{peer="alice",tier="free",direction="up"\} [1-9]' cat "$TV_DIR/scrape.txt"
check_output "and down" 'tunnelvision_peer_quota_used_bytes\{peer="alice",tier="free",direction="down"\} [1-9]' cat "$TV_DIR/scrape.txt"
check_output "the block rule's hit is counted with file:line" 'tunnelvision_rule_hits_total\{rule="[^"]*10-e2e.rules:5",name=""\} [1-9]' cat "$TV_DIR/scrape.txt"
check_output "policy-block drops are counted" 'tunnelvision_drops_total\{reason="policy-block"\} [1-9]' cat "$TV_DIR/scrape.txt"
check_output "handshakes are counted" '^tunnelvision_handshakes_total [1-9]' cat "$TV_DIR/scrape.txt"
check_output "build info names the version" '^tunnelvision_build_info\{version="[0-9.]+"\} 1' cat "$TV_DIR/scrape.txt"
$CTL metrics >"$TV_DIR/ctl.txt" 2>&1
names() { grep '^# TYPE' "$1"; }
check "tunnelctl metrics prints the same metric families as /metrics" diff <(names "$TV_DIR/scrape.txt") <(names "$TV_DIR/ctl.txt")
check "tunnelctl metrics passes promtool too" sh -c "promtool check metrics < '$TV_DIR/ctl.txt'"
check_output "another path is 404" '^404$' curl_g -o /dev/null -w '%{http_code}' http://127.0.0.1:9586/nope
check_output "POST is 405" '^405$' curl_g -o /dev/null -w '%{http_code}' -X POST $URL
check_output "a request body is refused (413), never read into memory" '^413$' curl_g -o /dev/null -w '%{http_code}' -X POST --data-binary @/etc/services $URL
outside() { tv_in "$TV_NS_C" curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://$TV_GW_UNDERLAY:9586/metrics"; echo " exit $?"; }
check_output "nothing listens outside loopback" '^000 exit (7|28)' outside

echo "metrics: 1,000 scrapes during iperf3"
# A measurement: wait while someone else measures (/tmp/tv-quiet), mark our own, remove only ours.
for _ in $(seq 240); do [ -e /tmp/tv-quiet ] || break; sleep 1; done
if [ -e /tmp/tv-quiet ]; then
  echo "  info  /tmp/tv-quiet stayed for 4 minutes (someone is measuring): throughput not measured"
  tv_in "$TV_NS_G" python3 scripts/e2e/lib/scrape.py 127.0.0.1 9586 /metrics 1000 >"$TV_DIR/scrapes.log" 2>&1
else
  touch /tmp/tv-quiet
  trap 'rm -f /tmp/tv-quiet; tv_cleanup' EXIT
  tv_spawn "$TV_NS_S" "$TV_DIR/iperf3-server.log" iperf3 -s -B $TV_SRV
  sleep 0.5
  rate() { python3 -c 'import json,sys; print("%.0f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e6))' "$1"; }
  RATES=()
  for run in 1 2 3; do  # alternate: without, with, without, with, … (spread from the repeats)
    tv_in "$TV_NS_C" iperf3 -c $TV_SRV -t 4 -J >"$TV_DIR/base$run.json" 2>&1
    tv_in "$TV_NS_G" python3 scripts/e2e/lib/scrape.py 127.0.0.1 9586 /metrics 1000 >"$TV_DIR/scrapes$run.log" 2>&1 &
    SCRAPER=$!
    tv_in "$TV_NS_C" iperf3 -c $TV_SRV -t 4 -J >"$TV_DIR/scraped$run.json" 2>&1
    wait $SCRAPER
    RATES+=("$(rate "$TV_DIR/base$run.json" 2>/dev/null || echo ?)/$(rate "$TV_DIR/scraped$run.json" 2>/dev/null || echo ?)")
  done
  cat "$TV_DIR"/scrapes[123].log >"$TV_DIR/scrapes.log"
  rm -f /tmp/tv-quiet; trap tv_cleanup EXIT
  check "iperf3 ran every time" sh -c "! printf '%s\n' ${RATES[*]} | grep -q '?'"
  echo "  info  iperf3 through tunneld, Mbit/s without/with 1,000 keep-alive scrapes running, 3 alternating runs of 4 s: ${RATES[*]} (not asserted)"
fi
check_output "every scrape was answered" '^scrapes 1000 ok 1000 failed 0' head -1 "$TV_DIR/scrapes.log"
check "tunneld is still up" kill -0 "$TV_GW_PID"

tv_summary
