#!/usr/bin/env bash
# queenctl-e2e.sh: Queen's operator CLI (queenctl), unmodified, runs its own
# end-to-end suite against a real `comb serve` built from this checkout, on a
# fresh database in a temporary directory. Queen's kit must sit beside the
# checkout (../shared/queen) or be named by QUEEN_KIT.
#
#   bash scripts/queenctl-e2e.sh [go test flags for the suite, e.g. -run Tx]
#
# comb sweeps retention every 2 s here. The suite's two retention tests run
# only when QUEEN_RETENTION_INTERVAL_MS=2000 is set: they fail against real
# Queen as they do against comb, because `queenctl queue configure
# --retention N` never sends retentionEnabled, which both brokers require
# before they delete anything, so they are left to skip by default.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${QUEEN_KIT:-../shared/queen}
[ -f "$kit/run-queenctl-e2e.sh" ] || { echo "queenctl-e2e: no $kit/run-queenctl-e2e.sh" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/comb-queenctl.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -o "$work/comb" .
"$work/comb" serve --addr 127.0.0.1:0 --db "$work/comb.db" --retention-interval 2s 2>"$work/serve.log" &
pid=$!
url=
for _ in $(seq 1 100); do
  url=$(sed -n 's/.*msg="comb serving" addr=\([^ ]*\).*/http:\/\/\1/p' "$work/serve.log" | head -1)
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "queenctl-e2e: comb did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
echo "queenctl-e2e: comb at $url"
status=0
bash "$kit/run-queenctl-e2e.sh" "$url" -v "$@" >"$work/e2e.log" 2>&1 || status=$?
# The suite's verdicts, then its tail; the whole log only on failure.
grep -E '^(--- (PASS|FAIL|SKIP)|ok|FAIL|PASS)' "$work/e2e.log" || true
passed=$(grep -c '^--- PASS' "$work/e2e.log" || true)
failed=$(grep -c '^--- FAIL' "$work/e2e.log" || true)
skipped=$(grep -c '^--- SKIP' "$work/e2e.log" || true)
if [ "$status" -ne 0 ]; then
  cat "$work/e2e.log"
  echo "--- comb's log:"; tail -50 "$work/serve.log"
fi
echo "queenctl e2e: $passed passed, $failed failed, $skipped skipped"
exit "$status"
