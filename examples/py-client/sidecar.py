"""Runs comb as a child, the way a Python app would, and talks to it with
the client in docs/embedding.md (comb_client.py beside this file): push
over TCP, pop and ack over TCP and over the Unix socket, a refused push,
then this process dies by SIGKILL. comb sees its stdin reach EOF and shuts
down (--exit-on-stdin-eof).

Usage: python3 sidecar.py COMB DB SOCKET
"""
import json, os, signal, subprocess, sys

from comb_client import Comb, CombError

comb_bin, db, sock = sys.argv[1:4]
comb = subprocess.Popen([comb_bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--unix", sock,
                         "--exit-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
ready = json.loads(comb.stdout.readline())
tcp, unix = Comb(ready["url"]), Comb("unix://" + ready["unix"])

assert tcp.call("GET", "/health")["status"] == "healthy"
assert unix.call("GET", "/health")["status"] == "healthy"
ids = [f"py-{i}" for i in range(10)]
pushed = tcp.push("py", [{"transactionId": i, "payload": {"n": n}} for n, i in enumerate(ids)])
assert [r["status"] for r in pushed] == ["queued"] * 10, pushed
try:
    tcp.push("", [{"payload": 1}])
    raise AssertionError("a push to a nameless queue was accepted")
except CombError as e:
    assert e.status == 400 and e.error, e

acked = []
for client in (tcp, unix):
    msgs = client.pop("py", batch=3)
    assert len(msgs) == 3, msgs
    assert all(r["success"] for r in client.ack(msgs)), msgs
    acked += [m["transactionId"] for m in msgs]
assert Comb(ready["url"]).pop("no-such-queue") == []

print(json.dumps({"ready": ready, "acked": acked}), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # the app crashes; comb's stdin closes
