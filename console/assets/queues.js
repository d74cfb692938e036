// Queues: a filterable list, and one queue's configuration, retention,
// partitions and each group's committed offset and lag per partition.
import { h, put, table, fmtNum, fmtTime, confirmAction } from "./dom.js";
import { get, del, seg } from "./api.js";
import { seekDialog } from "./seek.js";

export function render(ctx, root, params) {
  if (params[0]) return detail(ctx, root, params[0]);
  const filter = h("input", { id: "queue-filter", type: "search", placeholder: "filter by name, namespace or task" });
  const list = h("div", { id: "queue-list" });
  put(root, h("h1", {}, "Queues"), h("div", { class: "toolbar" }, filter), list);
  let rows = [];

  function draw() {
    const f = filter.value.trim().toLowerCase();
    const shown = rows.filter((q) => !f || [q.name, q.namespace, q.task].some((s) => (s || "").toLowerCase().includes(f)));
    put(list, table(["Queue", "Namespace", "Task", "Partitions", "Total", "Pending", "Processing", ""],
      shown.map((q) => h("tr", { "data-queue": q.name },
        h("td", {}, h("a", { href: "#/queues/" + seg(q.name) }, q.name)), h("td", {}, q.namespace), h("td", {}, q.task),
        h("td", { class: "num" }, fmtNum(q.partitions)), h("td", { class: "num" }, fmtNum(q.messages.total)),
        h("td", { class: "num" }, fmtNum(q.messages.pending)), h("td", { class: "num" }, fmtNum(q.messages.processing)),
        h("td", {}, ctx.can("admin") ? h("button", { type: "button", class: "danger small delete-queue", onclick: () => remove(q.name) }, "Delete") : null)))));
  }

  async function remove(name) {
    const ok = await confirmAction("Delete queue", `Deleting queue "${name}" removes its partitions, messages, cursors and dead letters. This cannot be undone.`, { typed: name, label: "Delete queue" });
    if (!ok) return;
    try {
      await del("/api/v1/resources/queues/" + seg(name));
      ctx.flash(`Queue ${name} deleted`);
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  async function refresh() {
    try {
      rows = (await get("/api/v1/resources/queues")).queues;
      draw();
    } catch (err) { ctx.fail(err); }
  }
  filter.addEventListener("input", draw);
  refresh();
  return { refresh };
}

function detail(ctx, root, name) {
  const conf = h("div", { class: "card", id: "queue-config" });
  const parts = h("div", { class: "card", id: "queue-partitions" });
  const groups = h("div", { class: "card", id: "queue-groups" });
  put(root, h("p", {}, h("a", { href: "#/queues" }, "← Queues")), h("h1", {}, "Queue ", h("code", {}, name)), h("div", { class: "two" }, conf, parts), groups);

  async function refresh() {
    try {
      const [st, ret, gs] = await Promise.all([get("/api/v1/status/queues/" + seg(name)),
        get("/api/v1/analytics/retention"), get("/api/v1/consumer-groups")]);
      const q = st.queue;
      const r = (ret.queues || []).find((x) => x.queue === name) || {};
      const kv = [["namespace", q.namespace || "–"], ["task", q.task || "–"], ["created", fmtTime(q.createdAt)], ["priority", q.priority],
        ...Object.entries(q.config || {}).map(([k, v]) => [k, String(v)]),
        ["retention enabled", String(!!r.retentionEnabled)], ["retention seconds", fmtNum(r.retentionSeconds)],
        ["completed retention seconds", fmtNum(r.completedRetentionSeconds)], ["frames evicted so far", fmtNum(r.evicted)]];
      put(conf, h("h2", {}, "Configuration"), h("dl", { class: "kv" }, kv.map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])));

      const qGroups = gs.filter((g) => g.queueName === name);
      // Committed offsets and each partition's head come with the group
      // detail, a read-only route.
      const heads = {};
      const detailByGroup = {};
      await Promise.all(qGroups.map(async (g) => {
        const d = await get("/api/v1/consumer-groups/" + seg(g.name));
        detailByGroup[g.name] = (d[name] || { partitions: [] }).partitions;
        for (const p of detailByGroup[g.name]) if (p.lastOffset != null) heads[p.partition] = p.lastOffset;
      }));
      put(parts, h("h2", {}, "Partitions"), table(["Partition", "Last offset", "Total", "Pending", "Processing", "Dead", "Oldest", "Newest"],
        st.partitions.map((p) => h("tr", {}, h("td", {}, p.name), h("td", { class: "num" }, heads[p.name] === undefined ? "–" : fmtNum(heads[p.name])),
          h("td", { class: "num" }, fmtNum(p.stats.total)), h("td", { class: "num" }, fmtNum(p.stats.pending)),
          h("td", { class: "num" }, fmtNum(p.stats.processing)), h("td", { class: "num" }, fmtNum(p.stats.deadLetter)),
          h("td", {}, fmtTime(p.oldestMessage)), h("td", {}, fmtTime(p.newestMessage))))));

      const rows = [];
      for (const g of qGroups) {
        const ps = detailByGroup[g.name] || [];
        for (const p of ps) {
          const c = p.committedOffset;
          rows.push(h("tr", {}, h("td", {}, h("a", { href: `#/groups/${seg(g.name)}/${seg(name)}` }, g.name)), h("td", {}, p.partition),
            h("td", { class: "num" }, c == null ? "–" : fmtNum(c)), h("td", { class: "num" }, fmtNum(p.offsetLag)),
            h("td", { class: "num" }, fmtNum(p.timeLagSeconds) + " s"), h("td", {}, fmtTime(p.lastConsumedAt))));
        }
      }
      put(groups, h("h2", {}, "Consumer groups on this queue"),
        table(["Group", "Partition", "Committed offset", "Lag", "Time lag", "Last consumed"], rows),
        ctx.can("read-write") && qGroups.length ? h("div", { class: "actions" }, qGroups.map((g) =>
          h("button", { type: "button", onclick: () => seekDialog(ctx, { group: g.name, queue: name }).then(refresh) }, `Seek ${g.name}…`))) : null);
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}
