// Consumer groups: who is behind, and the tools to move them: seek with a
// preview, per-partition skip to end, snapshot now, delete.
import { h, put, table, fmtNum, fmtSecs, fmtTime, confirmAction } from "./dom.js";
import { get, post, del, seg } from "./api.js";
import { seekDialog } from "./seek.js";

export function render(ctx, root, params) {
  if (params[0] && params[1]) return detail(ctx, root, params[0], params[1]);
  const list = h("div", { class: "card", id: "group-list" });
  const lagging = h("div", { class: "card", id: "group-lagging" });
  put(root, h("h1", {}, "Consumer groups"), list, lagging);

  async function refresh() {
    try {
      const [gs, lag] = await Promise.all([get("/api/v1/consumer-groups"), get("/api/v1/consumer-groups/lagging?minLagSeconds=0")]);
      put(list, table(["Group", "Queue", "Cursors", "Partitions behind", "Lag", "Max time lag", "State"],
        gs.map((g) => h("tr", { "data-group": g.name },
          h("td", {}, h("a", { href: `#/groups/${seg(g.name)}/${seg(g.queueName)}` }, g.name)), h("td", {}, g.queueName),
          h("td", { class: "num" }, fmtNum(g.partitionCursors)), h("td", { class: "num" }, fmtNum(g.partitionsWithLag)),
          h("td", { class: "num" }, fmtNum(g.totalLag)), h("td", { class: "num" }, fmtSecs(g.maxTimeLag)), h("td", {}, g.state)))));
      const behind = lag.filter((l) => l.offset_lag > 0).sort((a, b) => b.offset_lag - a.offset_lag);
      put(lagging, h("h2", {}, "Lagging partitions"), table(["Group", "Queue", "Partition", "Lag", "Time lag", "Oldest unconsumed", ""],
        behind.map((l) => h("tr", {}, h("td", {}, l.consumer_group), h("td", {}, l.queue_name), h("td", {}, l.partition_name),
          h("td", { class: "num" }, fmtNum(l.offset_lag)), h("td", { class: "num" }, fmtSecs(l.time_lag_seconds)),
          h("td", {}, fmtTime(l.oldest_unconsumed_at)),
          h("td", {}, ctx.can("read-write") ? h("button", { type: "button", class: "small", onclick: () =>
            seekDialog(ctx, { group: l.consumer_group, queue: l.queue_name, partition: l.partition_name }).then(refresh) }, "Skip to end…") : null)))));
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}

function detail(ctx, root, group, queue) {
  const parts = h("div", { class: "card", id: "group-partitions" });
  const tools = h("div", { class: "toolbar", id: "group-tools" });
  put(root, h("p", {}, h("a", { href: "#/groups" }, "← Consumer groups")),
    h("h1", {}, "Group ", h("code", {}, group), " on ", h("a", { href: "#/queues/" + seg(queue) }, queue)), tools, parts);

  if (ctx.can("read-write")) {
    tools.append(
      h("button", { type: "button", id: "seek-open", class: "primary", onclick: () => seekDialog(ctx, { group, queue }).then(refresh) }, "Seek…"),
      h("button", { type: "button", id: "snapshot-now", onclick: snapshotNow }, "Snapshot now"));
  }
  if (ctx.can("admin")) {
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

  async function refresh() {
    try {
      const d = await get("/api/v1/consumer-groups/" + seg(group));
      const ps = (d[queue] || { partitions: [] }).partitions;
      put(parts, h("h2", {}, "Partitions"), table(["Partition", "Committed", "Last offset", "Log start", "Lag", "Time lag", "Consumed", "Last consumed", "Lease", ""],
        ps.map((p) => h("tr", { "data-partition": p.partition }, h("td", {}, p.partition),
          h("td", { class: "num committed" }, fmtNum(p.committedOffset)), h("td", { class: "num" }, fmtNum(p.lastOffset)),
          h("td", { class: "num" }, fmtNum(p.logStart)), h("td", { class: "num lag" }, fmtNum(p.offsetLag)),
          h("td", { class: "num" }, fmtSecs(p.timeLagSeconds)), h("td", { class: "num" }, fmtNum(p.totalConsumed)),
          h("td", {}, fmtTime(p.lastConsumedAt)), h("td", {}, p.leaseActive ? "leased" : "–"),
          h("td", {}, ctx.can("read-write") && p.offsetLag > 0 ? h("button", { type: "button", class: "small skip-end", onclick: () =>
            seekDialog(ctx, { group, queue, partition: p.partition }).then(refresh) }, "Skip to end…") : null)))));
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}
