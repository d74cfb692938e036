// A TypeScript program that runs comb as its child the way a desktop app
// would, and talks to it only through a client generated from
// docs/openapi.json (openapi-typescript for the types in comb.d.ts,
// openapi-fetch for the calls): over TCP, and over the Unix socket with a
// fetch that dials the socket. It pushes, pops and acks, prints what it
// acked, and dies by SIGKILL; comb must follow it down (--exit-with-parent).
//
// Usage: node build/main.js COMB DB SOCKET
import { spawn } from 'node:child_process';
import http from 'node:http';
import { createInterface } from 'node:readline';
import createClient from 'openapi-fetch';
import type { components, paths } from './comb.js';

type PopMessage = components['schemas']['PopMessage'];
type AckRequest = components['schemas']['AckRequest'];

// The ready line comb prints once it accepts connections (docs/embedding.md).
interface Ready {
  ready: boolean;
  url?: string;
  unix?: string;
  pid: number;
  version: string;
}

// unixFetch is a fetch for openapi-fetch that sends each request over the
// Unix socket at path instead of TCP.
function unixFetch(path: string): (req: Request) => Promise<Response> {
  return async (req) => {
    const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
    const url = new URL(req.url);
    return new Promise<Response>((resolve, reject) => {
      const out = http.request(
        { socketPath: path, method: req.method, path: url.pathname + url.search, headers: Object.fromEntries(req.headers) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const headers = new Headers();
            for (const [k, v] of Object.entries(res.headers)) {
              if (typeof v === 'string') headers.set(k, v);
            }
            const status = res.statusCode ?? 0;
            const empty = status === 204 || status === 304;
            resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers }));
          });
        },
      );
      out.on('error', reject);
      out.end(body);
    });
  };
}

function fail(what: string, status: number, error: unknown): never {
  throw new Error(`${what}: ${status} ${JSON.stringify(error)}`);
}

function ackOf(m: PopMessage): AckRequest {
  return { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' };
}

const [comb, db, sock] = process.argv.slice(2);
if (!comb || !db || !sock) throw new Error('usage: main.js COMB DB SOCKET');

const child = spawn(comb, ['serve', '--addr', '127.0.0.1:0', '--db', db, '--unix', sock, '--exit-with-parent'],
  { stdio: ['ignore', 'pipe', 'inherit'] });
const ready = await new Promise<Ready>((resolve, reject) => {
  createInterface({ input: child.stdout }).once('line', (l) => resolve(JSON.parse(l) as Ready));
  child.once('exit', (code) => reject(new Error(`comb exited early: ${code}`)));
});
if (!ready.ready || !ready.url || ready.unix !== sock) throw new Error(`ready line ${JSON.stringify(ready)}`);

const tcp = createClient<paths>({ baseUrl: ready.url });
const unix = createClient<paths>({ baseUrl: 'http://comb', fetch: unixFetch(ready.unix) });

for (const [name, c] of [['tcp', tcp], ['unix', unix]] as const) {
  const { data, error, response } = await c.GET('/health');
  if (!data) fail(`${name} health`, response.status, error);
  if (data.status !== 'healthy') throw new Error(`${name} health: ${data.status}`);
}

{
  const { data, error, response } = await tcp.POST('/api/v1/configure', {
    body: { queue: 'ts', options: { leaseTime: 60, retryLimit: 3 } },
  });
  if (!data) fail('configure', response.status, error);
  if (!data.configured || data.queue !== 'ts') throw new Error(`configure: ${JSON.stringify(data)}`);
}

const ids = Array.from({ length: 10 }, (_, i) => `ts-${i}`);
{
  const { data, error, response } = await tcp.POST('/api/v1/push', {
    body: { items: ids.map((id, i) => ({ queue: 'ts', transactionId: id, payload: { i } })) },
  });
  if (!data) fail('push', response.status, error);
  if (response.status !== 201 || data.length !== ids.length || data.some((r) => r.status !== 'queued')) {
    throw new Error(`push: ${response.status} ${JSON.stringify(data)}`);
  }
}

// A bad push: the error body is typed by the document too.
{
  const { data, error, response } = await tcp.POST('/api/v1/push', { body: { items: [{ queue: '' }] } });
  if (data || response.status !== 400 || !error?.error) throw new Error(`bad push: ${response.status} ${JSON.stringify(error)}`);
}

const acked: string[] = [];

// Over TCP: pop three, ack one alone and two in a batch.
{
  const { data, error, response } = await tcp.GET('/api/v1/pop/queue/{queue}', {
    params: { path: { queue: 'ts' }, query: { batch: 3, wait: 'false' } },
  });
  if (!data) fail('pop over tcp', response.status, error);
  const [first, ...rest] = data.messages;
  if (!first || rest.length !== 2) throw new Error(`pop over tcp: ${JSON.stringify(data)}`);
  const one = await tcp.POST('/api/v1/ack', { body: ackOf(first) });
  if (!one.data || !one.data.every((r) => r.success)) fail('ack', one.response.status, one.error ?? one.data);
  const batch = await tcp.POST('/api/v1/ack/batch', { body: { acknowledgments: rest.map(ackOf) } });
  if (!batch.data || batch.data.length !== 2 || !batch.data.every((r) => r.success)) {
    fail('ack batch', batch.response.status, batch.error ?? batch.data);
  }
  acked.push(...data.messages.map((m) => m.transactionId));
}

// Over the Unix socket: no port, no token; pop three more and ack them.
{
  const { data, error, response } = await unix.GET('/api/v1/pop/queue/{queue}/partition/{partition}', {
    params: { path: { queue: 'ts', partition: 'Default' }, query: { batch: 3, wait: 'false' } },
  });
  if (!data) fail('pop over unix', response.status, error);
  if (data.messages.length !== 3) throw new Error(`pop over unix: ${JSON.stringify(data)}`);
  const batch = await unix.POST('/api/v1/ack/batch', { body: { acknowledgments: data.messages.map(ackOf) } });
  if (!batch.data || !batch.data.every((r) => r.success)) fail('ack batch over unix', batch.response.status, batch.error ?? batch.data);
  acked.push(...data.messages.map((m) => m.transactionId));
}

// The queue's totals, as the document types them: six completed, four left.
{
  const { data, error, response } = await unix.GET('/api/v1/resources/queues/{queue}', { params: { path: { queue: 'ts' } } });
  if (!data) fail('queue detail', response.status, error);
  if (data.totals.completed !== 6 || data.totals.pending !== 4) throw new Error(`queue detail: ${JSON.stringify(data.totals)}`);
}

console.log(JSON.stringify({ ready, acked }));
process.kill(process.pid, 'SIGKILL'); // the app crashes; comb is left behind
