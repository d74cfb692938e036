// Uses of the generated client that the document must reject. Compiled with
// main.ts and never run: if the document lost a schema's types or required
// fields, a line below would compile, and tsc would fail the build on its
// now unused expect-error directive.
import createClient from 'openapi-fetch';
import type { paths } from './comb.js';

export async function rejected(): Promise<void> {
  const c = createClient<paths>({ baseUrl: 'http://127.0.0.1:1' });
  // @ts-expect-error an item names its queue
  await c.POST('/api/v1/push', { body: { items: [{ payload: 1 }] } });
  // @ts-expect-error a queue name is a string
  await c.POST('/api/v1/push', { body: { items: [{ queue: 7 }] } });
  // @ts-expect-error an ack names the message's partition
  await c.POST('/api/v1/ack', { body: { transactionId: 't' } });
  // @ts-expect-error an ack's status is one of four words
  await c.POST('/api/v1/ack', { body: { transactionId: 't', partitionId: 'p', status: 'done' } });
  // @ts-expect-error a pop names its queue
  await c.GET('/api/v1/pop/queue/{queue}', { params: { path: {} } });
  // @ts-expect-error batch is a number
  await c.GET('/api/v1/pop/queue/{queue}', { params: { path: { queue: 'q' }, query: { batch: '3' } } });
  // @ts-expect-error no such route
  await c.GET('/api/v1/nothing');

  // @ts-expect-error a snapshot names its queue
  await c.POST('/api/v1/snapshots', { body: { name: 's', consumerGroup: 'g' } });
  // @ts-expect-error a stream cycle names its query
  await c.POST('/streams/v1/cycle', { body: { partition_id: 'p' } });
  const status = await c.GET('/api/v1/status');
  // @ts-expect-error the status counts are numbers
  const pending: string | undefined = status.data?.messages.pending;
  void pending;

  const { data } = await c.GET('/api/v1/pop/queue/{queue}', { params: { path: { queue: 'q' } } });
  // @ts-expect-error a popped message has no such field
  data?.messages[0]?.payload;
  const id: string | undefined = data?.messages[0]?.transactionId;
  // @ts-expect-error a lease id is a string, not a number
  const lease: number | undefined = data?.messages[0]?.leaseId;
  void id, lease;
}
