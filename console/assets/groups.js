// Consumer groups: who is behind and how fast each group moves, and the
// tools to move them: seek with a preview, per-partition skip to end,
// snapshot now, delete. Queue-mode cursors (pops that name no group) are
// listed apart: they are not a group.
import { h, put, fmtNum, fmtSecs, fmtTime, fmtOffset, groupText, QUEUE_MODE, confirmAction } from "./dom.js";
import { getKept, lastSeen, get, post, del, seg, painted } from "./api.js";
import { grid } from "./grid.js";
import { seekDialog } from "./seek.js";
import { rates, fmtRate, sparkline, sampleQueues, GROUPS } from "./rates.js";

const LAGGING = "/api/v1/consumer-groups/lagging?minLagSeconds=0";
const PAGE = 100; // rows a grid shows at once
const groupHref = (g, q) => `#/groups/${seg(g)}/${seg(q)}`;

function groupGrid(ctx, id, prefix, what, label) {
  const r = (g) => rates.group(g.name, g.queueName);
  return grid(ctx, {
    id, prefix, what, label, placeholder: "group or queue",
    columns: [
      { label: "Group", key: "name", sort: (g) => g.name }, { label: "Queue", key: "queue", sort: (g) => g.queueName },
      { label: "Cursors", key: "cursors", num: true, sort: (g) => g.partitionCursors },
      { label: "Partitions behind", key: "behind", num: true, sort: (g) => g.partitionsWithLag },
      { label: "Lag", key: "lag", num: true, sort: (g) => g.totalLag }, { label: "Max time lag", key: "tlag", num: true, sort: (g) => g.maxTimeLag },
      { label: "In /s", key: "in", num: true, sort: (g) => (r(g) || {}).in }, { label: "Out /s", key: "out", num: true, sort: (g) => (r(g) || {}).out },
      { label: "Lag, last hour" }, { label: "State", key: "state", sort: (g) => g.state },
    ],
    key: (g) => g.name + "\n" + g.queueName,
    search: (g) => `${groupText(g.name)}\n${g.queueName}`,
    row: (g) => {
      const s = r(g);
      return h("tr", { "data-group": g.name, "data-queue": g.queueName },
        h("td", {}, h("a", { href: groupHref(g.name, g.queueName) }, groupText(g.name))),
        h("td", {}, h("a", { href: "#/queues/" + seg(g.queueName) }, g.queueName)),
        h("td", { class: "num" }, fmtNum(g.partitionCursors)), h("td", { class: "num" }, fmtNum(g.partitionsWithLag)),
        h("td", { class: "num" }, fmtNum(g.totalLag)), h("td", { class: "num" }, fmtSecs(g.maxTimeLag)),
        h("td", { class: "num rate-in" }, fmtRate(s && s.in)), h("td", { class: "num rate-out" }, fmtRate(s && s.out)),
        h("td", { class: "spark-cell" }, sparkline(s ? s.points : [], { label: `lag of ${groupText(g.name)} on ${g.queueName}` })),
        h("td", {}, g.state));
    },
  });
}

export function render(ctx, root, params) {
  if (params[0] && params[1]) return detail(ctx, root, params[0], params[1]);
  const groups = groupGrid(ctx, "group-list", "", "groups", "Filter groups");
  const queueMode = groupGrid(ctx, "queue-mode-list", "m", "queues", "Filter queues");
  const lagging = grid(ctx, {
    id: "group-lagging", prefix: "l", what: "partitions", label: "Filter lagging partitions", placeholder: "group, queue or partition",
    sort: "lag", dir: "desc",
    columns: [{ label: "Group", key: "group", sort: (l) => l.consumer_group }, { label: "Queue", key: "queue", sort: (l) => l.queue_name },
      { label: "Partition", key: "partition", sort: (l) => l.partition_name }, { label: "Lag", key: "lag", num: true, sort: (l) => l.offset_lag },
      { label: "Time lag", key: "tlag", num: true, sort: (l) => l.time_lag_seconds },
      { label: "Oldest unconsumed", key: "oldest", sort: (l) => l.oldest_unconsumed_at }, { label: "" }],
    key: (l) => `${l.consumer_group}\n${l.queue_name}\n${l.partition_name}`,
    search: (l) => `${groupText(l.consumer_group)}\n${l.queue_name}\n${l.partition_name}`,
    row: (l) => h("tr", {},
      h("td", {}, h("a", { href: groupHref(l.consumer_group, l.queue_name), class: "group-link" }, groupText(l.consumer_group))),
      h("td", {}, h("a", { href: "#/queues/" + seg(l.queue_name), class: "queue-link" }, l.queue_name)), h("td", {}, l.partition_name),
      h("td", { class: "num" }, fmtNum(l.offset_lag)), h("td", { class: "num" }, fmtSecs(l.time_lag_seconds)),
      h("td", {}, fmtTime(l.oldest_unconsumed_at)),
      h("td", {}, ctx.can("read-write") ? h("button", { type: "button", class: "small", "aria-label": `skip ${l.partition_name} of ${l.queue_name} to its end for ${groupText(l.consumer_group)}`,
        onclick: () => seekDialog(ctx, { group: l.consumer_group, queue: l.queue_name, partition: l.partition_name }).then(refresh) }, "Skip to end…") : null)),
  });
  const qmCard = h("div", { class: "card", id: "queue-mode" }, h("h2", {}, "Queue mode (no group)"),
    h("p", { class: "muted" }, "Cursors of pops that name no consumer group, one per queue. They are not a group and are not counted as one."), queueMode.el);
  put(root, h("h1", {}, "Consumer groups"), h("div", { class: "card" }, groups.el), qmCard,
    h("div", { class: "card" }, h("h2", {}, "Lagging partitions"), lagging.el));

  const show = (gs, lag) => {
    if (gs) {
      groups.set(gs.filter((g) => g.name !== QUEUE_MODE));
      const qm = gs.filter((g) => g.name === QUEUE_MODE);
      queueMode.set(qm);
      qmCard.hidden = !qm.length;
    }
    if (lag) lagging.set(lag.filter((l) => l.offset_lag > 0));
  };
  show(lastSeen(GROUPS), lastSeen(LAGGING));

  async function refresh() {
    try {
      // Each table is drawn as its answer comes.
      const [gs] = await Promise.all([getKept(GROUPS).then((gs) => { show(gs, null); return gs; }),
        getKept(LAGGING).then((lag) => show(null, lag))]);
      // A group takes in what its queue takes in: the queues' counters
      // bring those rates, after the tables are up.
      await sampleQueues(gs.map((g) => g.queueName));
      groups.redraw();
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}

function detail(ctx, root, group, queue) {
  const tools = h("div", { class: "toolbar", id: "group-tools" });
  const live = h("div", { class: "card", id: "group-live" });
  const parts = grid(ctx, {
    id: "group-partition-list", what: "partitions", label: "Filter partitions", placeholder: "partition",
    columns: [{ label: "Partition", key: "partition", sort: (p) => p.partition },
      { label: "Committed", key: "committed", num: true, sort: (p) => p.committedOffset },
      { label: "Last offset", key: "last", num: true, sort: (p) => p.lastOffset }, { label: "Log start", key: "start", num: true, sort: (p) => p.logStart },
      { label: "Lag", key: "lag", num: true, sort: (p) => p.offsetLag }, { label: "Time lag", key: "tlag", num: true, sort: (p) => p.timeLagSeconds },
      { label: "Consumed", key: "consumed", num: true, sort: (p) => p.totalConsumed },
      { label: "Last consumed", key: "lastConsumed", sort: (p) => p.lastConsumedAt }, { label: "Lease" }, { label: "" }],
    key: (p) => p.partition, search: (p) => p.partition,
    row: (p) => h("tr", { "data-partition": p.partition }, h("td", {}, p.partition),
      h("td", { class: "num committed", title: p.committedOffset < 0 ? "committed offset -1" : null }, fmtOffset(p.committedOffset)),
      h("td", { class: "num" }, fmtNum(p.lastOffset)),
      h("td", { class: "num" }, fmtNum(p.logStart)), h("td", { class: "num lag" }, fmtNum(p.offsetLag)),
      h("td", { class: "num" }, fmtSecs(p.timeLagSeconds)), h("td", { class: "num" }, fmtNum(p.totalConsumed)),
      h("td", {}, fmtTime(p.lastConsumedAt)), h("td", {}, p.leaseActive ? "leased" : "–"),
      h("td", {}, ctx.can("read-write") && p.offsetLag > 0 ? h("button", { type: "button", class: "small skip-end", "aria-label": `skip ${p.partition} to its end`,
        onclick: () => seekDialog(ctx, { group, queue, partition: p.partition }).then(refresh) }, "Skip to end…") : null)),
  });
  put(root, h("p", {}, h("a", { href: "#/groups" }, "← Consumer groups")),
    h("h1", {}, group === QUEUE_MODE ? "Queue mode (no group)" : ["Group ", h("code", {}, group)], " on ", h("a", { href: "#/queues/" + seg(queue) }, queue)),
    tools, live, h("div", { class: "card", id: "group-partitions" }, h("h2", {}, "Partitions"), parts.el));

  if (ctx.can("read-write")) {
    tools.append(
      h("button", { type: "button", id: "seek-open", class: "primary", onclick: () => seekDialog(ctx, { group, queue }).then(refresh) }, "Seek…"),
      h("button", { type: "button", id: "snapshot-now", onclick: snapshotNow }, "Snapshot now"));
  }
  if (ctx.can("admin") && group !== QUEUE_MODE) {
    tools.append(h("button", { type: "button", id: "group-delete", class: "danger", onclick: remove }, "Delete group"));
  }

  async function snapshotNow() {
    const safe = (s) => s.replace(/[^A-Za-z0-9_.-]/g, "_");
    const name = `${safe(group)}.${safe(queue)}.${new Date().toISOString().replace(/[:]/g, "").replace(/\.\d+Z$/, "Z")}`.slice(0, 255);
    try {
      await post(`/api/v1/consumer-groups/${seg(group)}/queues/${seg(queue)}/snapshots`, { name });
      ctx.flash(`Snapshot ${name} created`);
    } catch (err) { ctx.fail(err); }
  }

  async function remove() {
    const ok = await confirmAction("Delete consumer group", `Deleting group "${group}" drops its cursors on every queue: its consumers will start over from their subscription position.`, { typed: group, label: "Delete group" });
    if (!ok) return;
    try {
      await del("/api/v1/consumer-groups/" + seg(group));
      ctx.flash(`Group ${group} deleted`);
      location.hash = "#/groups";
    } catch (err) { ctx.fail(err); }
  }

  function drawLive() {
    const s = rates.group(group, queue);
    put(live, h("h2", {}, "Live"), h("div", { class: "live" },
      h("div", { class: "stat" }, h("div", { class: "value", id: "group-rate-in" }, fmtRate(s && s.in)), h("div", { class: "label" }, "in /s")),
      h("div", { class: "stat" }, h("div", { class: "value", id: "group-rate-out" }, fmtRate(s && s.out)), h("div", { class: "label" }, "out /s")),
      h("div", { class: "spark-big", id: "group-spark" }, sparkline(s ? s.points : [], { width: 480, height: 64, label: `lag of ${groupText(group)} on ${queue}` }),
        h("div", { class: "muted" }, "lag, last hour (sampled while the console is open)"))));
  }

  const kept = lastSeen("/api/v1/consumer-groups/" + seg(group));
  if (kept) parts.set((kept[queue] || { partitions: [] }).partitions);
  let drawn = !!kept; // a refresh replaces rows shown only once it has them all

  // The first rows come in a small first page and are drawn at once; the
  // rest of a group over many partitions follows once they are painted.
  async function refresh() {
    try {
      const d = await getKept("/api/v1/consumer-groups/" + seg(group), true,
        drawn ? undefined : { first: PAGE, onPage: (d) => parts.set((d[queue] || { partitions: [] }).partitions, true), rest: painted });
      drawn = true;
      parts.set((d[queue] || { partitions: [] }).partitions);
      drawLive();
      await sampleQueues([queue]);
      await getKept(GROUPS + "?queue=" + encodeURIComponent(queue)); // its lag, for the rates
      drawLive();
    } catch (err) { ctx.fail(err); }
  }
  drawLive();
  refresh();
  return { refresh };
}
