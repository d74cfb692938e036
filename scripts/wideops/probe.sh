#!/bin/bash
# probe.sh: one request against a fresh `comb serve` on a copy of a large
# database, with a pusher to another queue beside it: prints the request's
# status, time and size, the longest push meanwhile, and the server's
# peak RSS (VmHWM). An optional request made first, on a server stopped
# before the measured one starts, prepares the copy (a snapshot to seek to).
#
#   BASE=/tmp/w/p1000000.db probe.sh BIN NAME METHOD PATH BODY [PREP_METHOD PREP_PATH PREP_BODY]
#
# BASE: the database to copy (scripts/scale builds one); DIR (default the
# directory of BASE) holds the copy; PORT (default 7812); PUSHSECS bounds
# the pusher (default 300 s; it stops when the request ends).
set -u
BIN=$1 NAME=$2 M=$3 P=$4 B=$5
DIR=${DIR:-$(dirname "$BASE")} PORT=${PORT:-7812} U=http://127.0.0.1:${PORT:-7812}
cd "$DIR" || exit 1
rm -f c.db c.db-wal c.db-shm c.db.reserve; cp "$BASE" c.db
serve() { "$BIN" serve --db c.db --addr 127.0.0.1:$PORT > c.log 2>&1 & PID=$!; until curl -s -o /dev/null $U/health; do sleep 0.2; done; }
serve
curl -s -o /dev/null "$U/api/v1/pop/queue/scale?consumerGroup=g1&batch=1&wait=false"
if [ $# -ge 8 ]; then curl -s -o /dev/null -w "prep %{http_code} %{time_total}\n" -X "$6" "$U$7" -H 'content-type: application/json' -d "$8"; fi
kill $PID; wait $PID 2>/dev/null
serve # a fresh peak RSS
rm -f stop
python3 - "$U" "${PUSHSECS:-300}" > lat.txt <<'PY' &
import sys, time, json, os, urllib.request
u, secs = sys.argv[1], float(sys.argv[2])
mx, n, t0 = 0.0, 0, time.time()
while time.time() - t0 < secs and not os.path.exists("stop"):
    t = time.time()
    urllib.request.urlopen(urllib.request.Request(u + "/api/v1/push", data=json.dumps({"items": [{"queue": "other", "payload": {"n": n}}]}).encode(),
                                                  headers={"content-type": "application/json"}), timeout=600).read()
    mx, n = max(mx, time.time() - t), n + 1
    time.sleep(0.02)
print("pushes", n, "longest push ms", round(mx * 1000))
PY
LP=$!; sleep 1
curl -s -o out.json -w "$NAME %{http_code} %{time_total}s %{size_download}B\n" -X "$M" "$U$P" -H 'content-type: application/json' -d "$B"
sleep 0.5; touch stop; wait $LP; cat lat.txt; rm -f stop
grep VmHWM /proc/$PID/status; kill $PID; wait $PID 2>/dev/null
