// rates: messages in and out per second per queue and per group, and each
// group's lag over the last hour, worked out in the browser from what the
// console polls: the broker's per-queue counters since it started
// (/api/v1/analytics/queue-ops: pushed, acked, dead-lettered) and the group
// list's lag. The broker keeps no history and runs no sampler for it, the
// cost is paid only while someone watches, and the token's tenant and level
// apply as to every other read. History starts when the console is opened
// and lasts while the tab does.
//
// A queue's in is pushes per second; its out is acks and dead-letterings
// per second (every group's). A group takes in what its queue takes in and
// gives out that less the growth of its lag.
//
// Memory is bounded: per queue the last sample and its rates (about 100
// bytes: 1 MB at 10,000 queues); per group a ring of LAG_SLOTS lag points
// in typed arrays (about 1.5 KB), kept for the groups seen in the last
// hour only.
import { h, fmtNum } from "./dom.js";
import { onKept, get } from "./api.js";

export const QUEUES = "/api/v1/resources/queues";
export const GROUPS = "/api/v1/consumer-groups";
export const QUEUE_OPS = "/api/v1/analytics/queue-ops";
export const OPS_AGE = 5e3; // views share one counters answer this long

export const LAG_STEP = 30e3; // one lag point per 30 s...
export const LAG_SLOTS = 121; // ...for an hour, both ends included
const MIN_GAP = 2e3; // samples closer than this make no rate

class Ring {
  constructor() {
    this.t = new Float64Array(LAG_SLOTS);
    this.v = new Float32Array(LAG_SLOTS);
    this.n = 0;
    this.head = 0; // index of the newest point
    this.opened = 0; // when the newest slot was opened
  }
  // add keeps one point per LAG_STEP: within a step the newest replaces
  // the last, so the line always ends at the latest value.
  add(t, v) {
    if (!this.n || t - this.opened >= LAG_STEP) {
      if (this.n) this.head = (this.head + 1) % LAG_SLOTS;
      this.n = Math.min(this.n + 1, LAG_SLOTS);
      this.opened = t;
    }
    this.t[this.head] = t;
    this.v[this.head] = v;
  }
  points() {
    const out = [];
    for (let k = this.n - 1; k >= 0; k--) {
      const i = (this.head - k + LAG_SLOTS) % LAG_SLOTS;
      out.push([this.t[i], this.v[i]]);
    }
    return out;
  }
}

const queues = new Map(); // name -> { t, pushed, done, in, out }
let opsSince = null;
const groups = new Map(); // group + "\n" + queue -> { ring, t, lag, out, seen }

function rate(now, prev, a, b) {
  return Math.max(0, a - b) / ((now - prev) / 1000);
}

export const rates = {
  // sampleOps takes a queue-ops answer: counters since the broker
  // started (since), so a restart starts the rates over.
  // partial answers (some queues only) forget no queue.
  sampleOps(r, now = Date.now(), partial = false) {
    if (r.since !== opsSince) { queues.clear(); opsSince = r.since; }
    for (const q of r.queues) {
      const pushed = q.pushed, done = q.acked + q.deadLettered;
      const s = queues.get(q.queue);
      if (!s) { queues.set(q.queue, { t: now, pushed, done, in: null, out: null }); continue; }
      if (now - s.t < MIN_GAP) continue;
      s.in = rate(now, s.t, pushed, s.pushed);
      s.out = rate(now, s.t, done, s.done);
      s.t = now; s.pushed = pushed; s.done = done;
    }
    if (!partial && queues.size > r.queues.length) {
      const names = new Set(r.queues.map((q) => q.queue));
      for (const k of queues.keys()) if (!names.has(k)) queues.delete(k);
    }
  },
  // sampleGroups takes a /api/v1/consumer-groups list. A group takes in
  // what its queue takes in; it gives out that less the growth of its lag.
  sampleGroups(list, now = Date.now()) {
    for (const g of list) {
      const k = g.name + "\n" + g.queueName;
      let s = groups.get(k);
      if (!s) { s = { ring: new Ring(), t: now, lag: g.totalLag, lagRate: null }; groups.set(k, s); }
      s.seen = now;
      s.ring.add(now, g.totalLag);
      if (now - s.t >= MIN_GAP) {
        s.lagRate = (g.totalLag - s.lag) / ((now - s.t) / 1000);
        s.t = now; s.lag = g.totalLag;
      }
    }
    for (const [k, s] of groups) if (now - s.seen > 3600e3) groups.delete(k);
  },
  queue(name) {
    const s = queues.get(name);
    return s && s.in !== null ? { in: s.in, out: s.out } : null;
  },
  group(name, queue) {
    const s = groups.get(name + "\n" + queue);
    const q = queues.get(queue);
    if (!s) return null;
    const qin = q && q.in !== null ? q.in : null;
    return { in: qin, out: qin !== null && s.lagRate !== null ? Math.max(0, qin - s.lagRate) : null, points: s.ring.points() };
  },
  get sizes() { return { queues: queues.size, groups: groups.size }; },
};

onKept(GROUPS, (list) => rates.sampleGroups(list));

// sampleQueues brings the counters of the queues names (every queue when
// names is null) that were not sampled in the last OPS_AGE, so a view asks
// for the queues it shows and views share what was just read: at 10,000
// queues the whole answer is 660 KB.
const sampledAt = new Map(); // queue -> when an answer last held it
let everyAt = 0;
export async function sampleQueues(names) {
  const now = Date.now();
  if (names === null) {
    if (now - everyAt < OPS_AGE) return;
  } else {
    names = [...new Set(names)].filter((n) => !(now - (sampledAt.get(n) || 0) < OPS_AGE));
    if (!names.length || now - everyAt < OPS_AGE) return;
  }
  const r = await get(QUEUE_OPS + (names ? "?" + names.map((n) => "queue=" + encodeURIComponent(n)).join("&") : ""));
  if (!names) { everyAt = now; sampledAt.clear(); }
  for (const q of r.queues) sampledAt.set(q.queue, now);
  rates.sampleOps(r, now, names !== null);
}

export function fmtRate(r) {
  if (r === null || r === undefined) return "–";
  return r >= 100 ? fmtNum(Math.round(r)) : r >= 10 ? r.toFixed(1) : r.toFixed(2);
}

// sparkline draws points ([t, v]) as a small line over the last hour, with
// the newest value in its title for screen readers and tooltips.
export function sparkline(points, { width = 120, height = 24, label = "lag over the last hour" } = {}) {
  const now = points.length ? points[points.length - 1][0] : Date.now();
  // The line spans the hour, or what was sampled of it so far.
  const t0 = Math.max(now - 3600e3, points.length ? points[0][0] : now);
  const span = Math.max(1, now - t0);
  const max = Math.max(1, ...points.map((p) => p[1]));
  const x = (t) => ((Math.max(t, t0) - t0) / span) * (width - 2) + 1;
  const y = (v) => height - 2 - (v / max) * (height - 4);
  const last = points.length ? points[points.length - 1][1] : null;
  const first = points.length ? points[0][0] : now;
  const text = points.length ? `${label}: now ${fmtNum(last)}, peak ${fmtNum(max)}, ${points.length} samples since ${new Date(first).toISOString().slice(11, 16)}Z` : `${label}: no samples yet`;
  return h("svg", { class: "spark", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": text },
    h("title", {}, text),
    h("line", { class: "base", x1: 1, y1: height - 2, x2: width - 1, y2: height - 2 }),
    points.length > 1 ? h("polyline", { class: "series lag", points: points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ") }) : null,
    points.length ? h("circle", { class: "dot", cx: x(now).toFixed(1), cy: y(last).toFixed(1), r: 2 }) : null);
}
