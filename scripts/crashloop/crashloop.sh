#!/usr/bin/env bash
# Runs N kill -9 cycles of comb serve under mixed load (pushes, pops, acks,
# autoAck pops, seeks, retention sweeps) on one database file, checking after
# every restart that no answered push is lost, nothing consumed comes back
# and comb check is clean. Every second cycle also runs what users run beside
# a server, at random points before the kill: sqlite3 sessions that open,
# read and close the file (needs the sqlite3 shell, Debian package sqlite3),
# comb check in its own process, and online backups.
# Usage: scripts/crashloop/crashloop.sh [cycles]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/../.."
cycles="${1:-100}"
exec go test ./cli -run '^TestKillNineUnderMixedLoadLosesNothing$' -count=1 -v -timeout 0 -crash.cycles="$cycles"
