#!/usr/bin/env bash
# End to end: operator events through libsystemd's sd_journal_sendv into a journal socket the test
# owns (issue 17 item 2) — events.sh's checks with EVENTS_VIA=journal (see its header). Needs root; ~35 s.
exec env EVENTS_VIA=journal bash "$(dirname "$0")/events.sh"
