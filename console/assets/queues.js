// Queues: a filterable, sortable, paged list, and one queue's
// configuration, retention, partitions and each group's committed offset
// and lag per partition.
import { h, put, table, fmtNum, fmtTime, fmtOffset, groupText, confirmAction } from "./dom.js";
import { getKept, lastSeen, get, del, seg, qs, painted } from "./api.js";
import { grid, asciiLower } from "./grid.js";
import { seekDialog } from "./seek.js";
import { rates, fmtRate, sampleQueues, QUEUES, GROUPS } from "./rates.js";

// The broker filters, sorts and pages the queue list: at 10,000 queues the
// whole list is 2 MB and a table of it a second's work per key press.
const SORTS = { name: "name", ns: "namespace", task: "task", partitions: "partitions", total: "total", pending: "pending", processing: "processing" };
const PAGE = 100;

// every is the count of every queue the console last saw.
let every = null;

// queuesPath is the listing path of one page of queues.
function queuesPath({ q, sort, dir, offset, limit }) {
  return QUEUES + qs({ search: q, sort: SORTS[sort], dir: SORTS[sort] ? dir : null, offset: offset || null, limit });
}

export function render(ctx, root, params) {
  if (params[0]) return detail(ctx, root, params[0]);
  const rate = (q, k) => { const r = rates.queue(q.name); return r ? r[k] : null; };
  // The count of every queue, for "9 of 10,000 match": an unfiltered page
  // says it; a filtered one is asked for it once.
  // An unfiltered page is kept, so the view opened again paints it at
  // once; filtered pages are not, each key press would push out what
  // other views keep.
  const page = (r) => ({ rows: r.queues, total: r.pagination ? r.pagination.total : r.queues.length });
  const load = async (p) => {
    const [r, all] = await Promise.all([p.q ? get(queuesPath(p)) : getKept(queuesPath(p), false),
      p.q && every === null ? get(QUEUES + "?limit=1").then((x) => x.pagination.total) : null]);
    const { rows, total } = page(r);
    if (!p.q) every = total;
    else if (all !== null) every = all;
    return { rows, total, all: every };
  };
  const g = grid(ctx, {
    id: "queue-list", filterId: "queue-filter", what: "queues", label: "Filter queues", placeholder: "name, namespace or task",
    pageSize: PAGE, load,
    // The broker's search: a substring of name, namespace and task.
    match: (q, f) => asciiLower(`${q.name}\n${q.namespace || ""}\n${q.task || ""}`).includes(f),
    columns: [
      { label: "Queue", key: "name", sort: true },
      { label: "Namespace", key: "ns", sort: true },
      { label: "Task", key: "task", sort: true },
      { label: "Partitions", key: "partitions", num: true, sort: true },
      { label: "Total", key: "total", num: true, sort: true },
      { label: "Pending", key: "pending", num: true, sort: true },
      { label: "Processing", key: "processing", num: true, sort: true },
      { label: "In /s", key: "in", num: true },
      { label: "Out /s", key: "out", num: true },
      { label: "" },
    ],
    key: (q) => q.name,
    row: (q) => h("tr", { "data-queue": q.name },
      h("td", {}, h("a", { href: "#/queues/" + seg(q.name) }, q.name)), h("td", {}, q.namespace), h("td", {}, q.task),
      h("td", { class: "num" }, fmtNum(q.partitions)), h("td", { class: "num" }, fmtNum(q.messages.total)),
      h("td", { class: "num" }, fmtNum(q.messages.pending)), h("td", { class: "num" }, fmtNum(q.messages.processing)),
      h("td", { class: "num rate-in" }, fmtRate(rate(q, "in"))), h("td", { class: "num rate-out" }, fmtRate(rate(q, "out"))),
      h("td", {}, ctx.can("admin") ? h("button", { type: "button", class: "danger small delete-queue", "aria-label": `delete queue ${q.name}`,
        onclick: () => remove(q.name) }, "Delete") : null)),
  });
  put(root, h("h1", {}, "Queues"), g.el);
  const seen = !g.params().q && lastSeen(queuesPath(g.params()));
  if (seen) g.show({ ...page(seen), all: every });

  async function remove(name) {
    const ok = await confirmAction("Delete queue", `Deleting queue "${name}" removes its partitions, messages, cursors and dead letters. This cannot be undone.`, { typed: name, label: "Delete queue" });
    if (!ok) return;
    try {
      await del("/api/v1/resources/queues/" + seg(name));
      ctx.flash(`Queue ${name} deleted`);
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  // The rates the rows show, to draw them again only when they moved: a
  // view's first sample has none yet, and a page of rows drawn again is
  // a page of layout.
  const shownRates = () => g.rows.map((q) => `${fmtRate(rate(q, "in"))} ${fmtRate(rate(q, "out"))}`).join("\n");
  async function refresh() {
    try {
      await g.fetch();
      const before = shownRates();
      await sampleQueues(g.rows.map((q) => q.name));
      if (shownRates() !== before) g.redraw();
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}

function detail(ctx, root, name) {
  const conf = h("div", { class: "card", id: "queue-config" });
  const parts = h("div", { class: "card", id: "queue-partitions" });
  const groups = h("div", { class: "card", id: "queue-groups" });
  const seekButtons = h("div", { class: "actions" });
  const partGrid = grid(ctx, {
    id: "queue-partition-list", what: "partitions", prefix: "p", label: "Filter partitions", placeholder: "partition",
    columns: [{ label: "Partition", key: "name", sort: (p) => p.name }, { label: "Last offset", key: "last", num: true, sort: (p) => p.head },
      { label: "Total", key: "total", num: true, sort: (p) => p.stats.total }, { label: "Pending", key: "pending", num: true, sort: (p) => p.stats.pending },
      { label: "Processing", num: true }, { label: "Dead", key: "dead", num: true, sort: (p) => p.stats.deadLetter },
      { label: "Oldest", key: "oldest", sort: (p) => p.oldestMessage }, { label: "Newest", key: "newest", sort: (p) => p.newestMessage }],
    key: (p) => p.name, search: (p) => p.name,
    row: (p) => h("tr", {}, h("td", {}, p.name), h("td", { class: "num" }, p.head === undefined ? "–" : fmtNum(p.head)),
      h("td", { class: "num" }, fmtNum(p.stats.total)), h("td", { class: "num" }, fmtNum(p.stats.pending)),
      h("td", { class: "num" }, fmtNum(p.stats.processing)), h("td", { class: "num" }, fmtNum(p.stats.deadLetter)),
      h("td", {}, fmtTime(p.oldestMessage)), h("td", {}, fmtTime(p.newestMessage))),
  });
  const groupGrid = grid(ctx, {
    id: "queue-group-list", what: "cursors", prefix: "g", label: "Filter groups", placeholder: "group or partition",
    columns: [{ label: "Group", key: "group", sort: (c) => c.group }, { label: "Partition", key: "partition", sort: (c) => c.p.partition },
      { label: "Committed offset", key: "committed", num: true, sort: (c) => c.p.committedOffset },
      { label: "Lag", key: "lag", num: true, sort: (c) => c.p.offsetLag }, { label: "Time lag", key: "tlag", num: true, sort: (c) => c.p.timeLagSeconds },
      { label: "Last consumed", key: "consumed", sort: (c) => c.p.lastConsumedAt }],
    key: (c) => c.group + "\n" + c.p.partition, search: (c) => `${groupText(c.group)}\n${c.p.partition}`,
    row: (c) => h("tr", {}, h("td", {}, h("a", { href: `#/groups/${seg(c.group)}/${seg(name)}` }, groupText(c.group))), h("td", {}, c.p.partition),
      h("td", { class: "num" }, fmtOffset(c.p.committedOffset)), h("td", { class: "num" }, fmtNum(c.p.offsetLag)),
      h("td", { class: "num" }, fmtNum(c.p.timeLagSeconds) + " s"), h("td", {}, fmtTime(c.p.lastConsumedAt))),
  });
  put(parts, h("h2", {}, "Partitions"), partGrid.el);
  put(groups, h("h2", {}, "Consumer groups on this queue"), groupGrid.el, seekButtons);
  put(root, h("p", {}, h("a", { href: "#/queues" }, "← Queues")), h("h1", {}, "Queue ", h("code", {}, name)), h("div", { class: "two" }, conf, parts), groups);

  // Each part paints as its answer comes: the retention figures and the
  // groups' cursors take longer than the partitions on a big broker.
  let heads = {};
  let partitions = null;
  let config = [];
  let retention = [];
  const drawConf = () => put(conf, h("h2", {}, "Configuration"), h("dl", { class: "kv" }, [...config, ...retention].map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])));
  let partsMore = false; // partitions holds the first pages only
  const drawParts = () => { if (partitions) partGrid.set(partitions.map((p) => ({ ...p, head: heads[p.name] })), partsMore); };

  // Every partition, a page of 1,000 at a time, so the table filters and
  // sorts them all; the configuration comes with the retention figures of
  // this queue alone. A view opened again paints at once from the answers
  // the console kept; opened the first time, it asks a small first page
  // of each list and draws it while the rest comes.
  const partsPath = "/api/v1/resources/queues/" + seg(name) + "?limit=1000";
  const groupPath = (g) => "/api/v1/consumer-groups/" + seg(g);
  const kept = lastSeen(partsPath);
  if (kept) partitions = kept.partitions; // drawn below, once
  // drawGroups draws the cursors of the groups on this queue from their
  // details (by group name), partial while some are still coming.
  const drawGroups = (qGroups, details, partial) => {
    const next = {};
    const cursors = [];
    for (const g of qGroups) {
      for (const p of ((details[g.name] || {})[name] || { partitions: [] }).partitions) {
        if (p.lastOffset != null) next[p.partition] = p.lastOffset;
        cursors.push({ group: g.name, p });
      }
    }
    heads = next;
    drawParts();
    groupGrid.set(cursors, partial);
    groupsUp();
    put(seekButtons, ctx.can("read-write") ? qGroups.map((g) =>
      h("button", { type: "button", class: "seek-group", onclick: () => seekDialog(ctx, { group: g.name, queue: name }).then(refresh) }, `Seek ${groupText(g.name)}…`)) : null);
  };
  // The groups on this queue alone: the tenant's whole listing reads
  // every queue, a second's work at 10,000 queues on a loaded broker.
  const groupsPath = GROUPS + "?queue=" + encodeURIComponent(name);
  const seenGroups = () => lastSeen(groupsPath) || (lastSeen(GROUPS) || []).filter((g) => g.queueName === name);
  const keptGroups = seenGroups();
  const keptDetails = Object.fromEntries(keptGroups.map((g) => [g.name, lastSeen(groupPath(g.name))]));
  let drawn = { parts: !!kept, groups: keptGroups.every((g) => keptDetails[g.name]) && !!(lastSeen(groupsPath) || lastSeen(GROUPS)) };
  // The view's first paint is the first rows of both lists. What it does
  // not need (the lists' later pages, the configuration and retention
  // figures) is asked once that is painted: asked beside it, it took the
  // broker's cores and the page's thread from it.
  let partsUp, groupsUp;
  const firstPaint = Promise.all([new Promise((r) => { partsUp = r; }), new Promise((r) => { groupsUp = r; })]).then(painted);
  if (drawn.parts) partsUp();
  if (drawn.groups) { drawGroups(keptGroups, keptDetails, false); groupsUp(); }
  else drawParts();
  put(conf, h("h2", {}, "Configuration"), h("p", { class: "muted" }, "loading…"));

  async function refresh() {
    const fail = (err) => ctx.fail(err);
    // Partial pages are drawn only while nothing is shown: a refresh
    // replaces the rows once it has them all, so a page the user is on
    // stays.
    const first = (what, onPage) => (drawn[what] ? undefined : { first: PAGE, onPage, rest: () => firstPaint });
    const secondary = drawn.parts && drawn.groups ? Promise.resolve() : firstPaint;
    await Promise.all([
      getKept(partsPath, true, first("parts", (st) => { partitions = st.partitions; partsMore = true; drawParts(); partsUp(); }))
        .then((st) => {
          drawn.parts = true;
          partitions = st.partitions;
          partsMore = false;
          drawParts();
        }, fail).finally(partsUp),
      secondary.then(() => get("/api/v1/analytics/retention?queue=" + seg(name))).then((ret) => {
        const r = (ret.queues || []).find((x) => x.queue === name) || {};
        config = [["namespace", r.namespace || "–"], ["task", r.task || "–"], ["created", fmtTime(r.createdAt)], ["priority", r.priority],
          ...Object.entries(r.config || {}).map(([k, v]) => [k, String(v)])];
        retention = [["retention enabled", String(!!r.retentionEnabled)], ["retention seconds", fmtNum(r.retentionSeconds)],
          ["completed retention seconds", fmtNum(r.completedRetentionSeconds)], ["frames evicted so far", fmtNum(r.evicted)]];
        drawConf();
      }, fail),
      (async () => {
        // Committed offsets and each partition's head come with the group
        // detail, a read-only route. The details of the groups last seen
        // on this queue are asked at once; a group the list of its groups
        // names anew is asked when the list comes.
        const asked = new Map(); // group -> its detail, coming
        const details = {};
        let on = []; // the groups on this queue, as last seen or listed
        const detail = (g) => {
          if (!asked.has(g)) {
            const p = getKept(groupPath(g), true, first("groups", (d) => { details[g] = d; drawGroups(on, details, true); }))
              .then((d) => { details[g] = d; if (!drawn.groups && on.some((x) => x.name === g)) drawGroups(on, details, true); });
            // A group gone meanwhile fails here, not the view, and holds
            // nothing back.
            p.catch(groupsUp);
            asked.set(g, p);
          }
          return asked.get(g);
        };
        on = seenGroups();
        for (const g of on) detail(g.name);
        // The list that confirms the groups seen before is not needed to
        // draw their cursors: it is asked once they are painted.
        if (on.length && !drawn.groups) await firstPaint;
        on = (await getKept(groupsPath)).filter((g) => g.queueName === name);
        await Promise.all(on.map((g) => detail(g.name)));
        drawn.groups = true;
        drawGroups(on, details, false);
      })().catch(fail).finally(groupsUp),
    ]);
  }
  refresh();
  return { refresh };
}
