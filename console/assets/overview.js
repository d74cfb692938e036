// Overview: counts, throughput over time, top queues by pending, groups by lag.
import { h, put, table, fmtNum, fmtSecs, QUEUE_MODE } from "./dom.js";
import { get, getKept, lastSeen, seg, painted } from "./api.js";
import { rates, fmtRate, sparkline, sampleQueues, QUEUES, GROUPS } from "./rates.js";

// The broker sorts the queues by pending and sends the top ones only; the
// status answer is asked for one queue, since the chart reads its series.
const TOP = QUEUES + "?sort=pending&dir=desc&limit=8";
const STATUS = "/api/v1/status?limit=1";

export function render(ctx, root) {
  const cards = h("div", { class: "cards", id: "ov-cards" });
  const chart = h("div", { class: "card", id: "ov-chart" });
  const topQueues = h("div", { class: "card", id: "ov-queues" });
  const topGroups = h("div", { class: "card", id: "ov-groups" });
  put(root, h("h1", {}, "Overview"), cards, chart, h("div", { class: "two" }, topQueues, topGroups));

  const card = (label, value, cls) => h("div", { class: "stat " + (cls || "") }, h("div", { class: "value" }, fmtNum(value)), h("div", { class: "label" }, label));
  let ov = null, gs = null, quar = null, top = null;
  function drawCards() {
    if (!ov) return;
    const m = ov.messages;
    // Queue-mode cursors are not a group.
    const groups = gs ? gs.filter((g) => g.name !== QUEUE_MODE).length : null;
    put(cards, card("queues", ov.queues), card("partitions", ov.partitions), card("messages", m.total),
      card("pending", m.pending), card("processing", m.processing), card("completed", m.completed),
      card("dead letters", m.deadLetter, m.deadLetter ? "bad" : ""), card("groups", groups),
      quar && quar.total ? h("a", { href: "#/dlq", id: "ov-quarantined" }, card("damaged segments set aside", quar.total, "bad")) : null);
  }
  function drawQueues(qs) {
    const byPending = qs.queues.slice(0, 8);
    put(topQueues, h("h2", {}, "Top queues by pending"), table(["Queue", "Partitions", "Pending", "Total", "In /s", "Out /s"],
      byPending.map((q) => {
        const r = rates.queue(q.name);
        return h("tr", { "data-key": q.name }, h("td", {}, h("a", { href: "#/queues/" + seg(q.name) }, q.name)),
          h("td", { class: "num" }, fmtNum(q.partitions)), h("td", { class: "num" }, fmtNum(q.messages.pending)),
          h("td", { class: "num" }, fmtNum(q.messages.total)), h("td", { class: "num" }, fmtRate(r && r.in)), h("td", { class: "num" }, fmtRate(r && r.out)));
      })));
  }
  function drawGroups() {
    const byLag = gs.filter((g) => g.name !== QUEUE_MODE).sort((a, b) => b.totalLag - a.totalLag || b.maxTimeLag - a.maxTimeLag).slice(0, 8);
    put(topGroups, h("h2", {}, "Consumer groups by lag"), table(["Group", "Queue", "Lag", "Max time lag", "Lag, last hour", "State"],
      byLag.map((g) => {
        const r = rates.group(g.name, g.queueName);
        return h("tr", { "data-key": g.name + "\n" + g.queueName }, h("td", {}, h("a", { href: "#/groups/" + seg(g.name) + "/" + seg(g.queueName) }, g.name)),
          h("td", {}, h("a", { href: "#/queues/" + seg(g.queueName) }, g.queueName)), h("td", { class: "num" }, fmtNum(g.totalLag)),
          h("td", { class: "num" }, fmtSecs(g.maxTimeLag)), h("td", { class: "spark-cell" }, sparkline(r ? r.points : [], { label: `lag of ${g.name}` })),
          h("td", {}, g.state));
      })));
  }
  const seenQueues = lastSeen(TOP);
  if (seenQueues) drawQueues(seenQueues);

  // Each part paints as its answer comes. The chart, which the cards and
  // tables do not need and which costs the broker tens of milliseconds at
  // 10,000 queues, is asked on the view's first open once they are
  // painted: asked beside them, it took the broker's cores from them.
  let opened = false;
  async function refresh() {
    const fail = (err) => ctx.fail(err);
    const tables = [
      getKept("/api/v1/resources/overview").then((r) => { ov = r; drawCards(); }, fail),
      getKept(GROUPS).then((r) => { gs = r; drawCards(); drawGroups(); }, fail),
      get("/api/v1/quarantine?limit=1").then((r) => { quar = r; drawCards(); }, fail),
      getKept(TOP, false).then((qs) => { top = qs; drawQueues(qs); if (gs) drawGroups(); }, fail),
    ];
    const before = opened ? Promise.resolve() : Promise.all(tables).then(painted);
    opened = true;
    await Promise.all([...tables,
      before.then(() => get(STATUS)).then((status) => put(chart, h("h2", {}, "Throughput (messages per bucket of " + status.bucketMinutes + " min)"),
        throughputChart(status.throughput || [], chart.clientWidth - 30)), fail)]);
    // Rates of the queues the tables show, then the tables again.
    await sampleQueues([...(top ? top.queues.map((q) => q.name) : []), ...(gs ? gs.map((g) => g.queueName) : [])]).catch(fail);
    if (gs) drawGroups();
    if (top) drawQueues(top);
  }
  ov = lastSeen("/api/v1/resources/overview") || null;
  gs = lastSeen(GROUPS) || null;
  drawCards();
  if (gs) drawGroups();
  refresh();
  return { refresh };
}

// throughputChart draws ingested and processed counts as two polylines.
function throughputChart(points, width) {
  const W = Math.max(480, Math.round(width) || 720), H = 160, L = 44, B = 20, T = 8;
  const max = Math.max(1, ...points.map((p) => Math.max(p.ingested, p.processed)));
  const x = (i) => L + (points.length > 1 ? (i * (W - L - 8)) / (points.length - 1) : 0);
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const line = (key, cls) => h("polyline", { class: cls, points: points.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ") });
  const first = points[0], last = points[points.length - 1];
  const label = (p) => (p ? new Date(p.timestamp).toISOString().slice(11, 16) : "");
  return h("div", {},
    h("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": "throughput" },
      h("line", { class: "axis", x1: L, y1: H - B, x2: W - 8, y2: H - B }),
      h("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
      h("text", { x: L - 4, y: T + 8, class: "tick end" }, fmtNum(max)),
      h("text", { x: L - 4, y: H - B, class: "tick end" }, "0"),
      h("text", { x: L, y: H - 4, class: "tick" }, label(first)),
      h("text", { x: W - 8, y: H - 4, class: "tick end" }, label(last)),
      points.length ? [line("ingested", "series in"), line("processed", "series out")] : null),
    h("div", { class: "legend" }, h("span", { class: "key in" }, "ingested"), h("span", { class: "key out" }, "processed"),
      h("span", { class: "muted" }, ` ${fmtNum(points.reduce((s, p) => s + p.ingested, 0))} in, ${fmtNum(points.reduce((s, p) => s + p.processed, 0))} out over the last hour`)));
}
