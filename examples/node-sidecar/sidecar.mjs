// A Node program that runs comb as its child, the way an Electron app's
// main process would: start it, read the ready line, push over TCP, pop
// over the Unix socket, then die by SIGKILL. comb must follow it down
// (--exit-with-parent). Usage: node sidecar.mjs COMB DB SOCKET
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import http from 'node:http';

const [comb, db, sock] = process.argv.slice(2);
const child = spawn(comb, ['serve', '--addr', '127.0.0.1:0', '--db', db, '--unix', sock, '--exit-with-parent'],
  { stdio: ['ignore', 'pipe', 'inherit'] });
const ready = await new Promise((resolve, reject) => {
  createInterface({ input: child.stdout }).once('line', (l) => resolve(JSON.parse(l)));
  child.once('exit', (code) => reject(new Error(`comb exited early: ${code}`)));
});

const items = Array.from({ length: 10 }, (_, i) => ({ queue: 'node', transactionId: `node-${i}`, payload: { i } }));
const pushed = await fetch(`${ready.url}/api/v1/push`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ items }),
});
if (pushed.status !== 201) throw new Error(`push: ${pushed.status}`);

// Over the socket: no port, no token.
const popped = await new Promise((resolve, reject) => {
  http.get({ socketPath: ready.unix, path: '/api/v1/pop/queue/node?batch=4&autoAck=true' }, (res) => {
    let body = '';
    res.on('data', (c) => { body += c; });
    res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(body) }));
  }).on('error', reject);
});
if (popped.status !== 200) throw new Error(`pop: ${popped.status}`);

console.log(JSON.stringify({ ready, acked: popped.body.messages.map((m) => m.transactionId) }));
process.kill(process.pid, 'SIGKILL'); // the app crashes; comb is left behind
