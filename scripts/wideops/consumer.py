#!/usr/bin/env python3
# consumer.py URL SERVER_PID SECONDS (POPWAIT="wait=true&timeout=5000" for long-polls)
# A consumer beside a trickle of pushes on a queue of many partitions:
# pushes one message to a random partition every 20 ms; one consumer pops
# (batch 10, no wait) and acks what it gets. Prints pop latencies, what was
# consumed and the server's CPU.
import sys, time, json, random, threading, urllib.request, os
u, pid, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def req(method, path, body=None):
    r = urllib.request.Request(u + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                               headers={"content-type": "application/json"})
    with urllib.request.urlopen(r, timeout=120) as resp:
        data = resp.read()
        return resp.status, (json.loads(data) if data else None)
def cpu():
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
stop = time.time() + secs
pushed = [0]
def pusher():
    while time.time() < stop:
        req("POST", "/api/v1/push", {"items": [{"queue": "scale", "partition": "p%07d" % random.randrange(1000000), "payload": 1}]})
        pushed[0] += 1
        time.sleep(0.02)
t = threading.Thread(target=pusher); t.start()
c0 = cpu(); lat = []; got = 0
while time.time() < stop:
    t0 = time.time()
    st, body = req("GET", "/api/v1/pop/queue/scale?consumerGroup=g1&batch=10&" + os.environ.get("POPWAIT", "wait=false"))
    lat.append(time.time() - t0)
    if st == 200 and body and body.get("messages"):
        ms = body["messages"]
        got += len(ms)
        req("POST", "/api/v1/ack/batch", {"acknowledgments": [{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
             "leaseId": m.get("leaseId"), "status": "completed"} for m in ms], "consumerGroup": "g1"})
t.join(); c1 = cpu()
lat.sort()
q = lambda p: round(lat[min(len(lat)-1, int(p*len(lat)))]*1000, 1)
print(f"pops {len(lat)} p50 {q(0.5)} ms p99 {q(0.99)} ms max {round(lat[-1]*1000,1)} ms; pushed {pushed[0]} consumed {got}; server CPU {round(c1-c0,1)} s in {secs} s")
