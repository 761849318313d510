#!/usr/bin/env bash
# End to end: operator events through libsystemd's sd_journal_sendv into a journal socket the test
# owns (issue 17 item 2) — events.sh's checks with EVENTS_VIA=journal (see its header); the result
# line names journal.sh. Needs root; ~90 s.
exec env EVENTS_VIA=journal TV_SCRIPT=journal.sh bash "$(dirname "$0")/events.sh"
