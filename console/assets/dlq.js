// Dead letters: filter, see the top errors, redrive or purge a selection
// or every match (total shown first, then what moved and what remains).
import { h, put, table, fmtNum, fmtTime, payloadText, groupText, confirmAction, modal } from "./dom.js";
import { get, post, del, qs } from "./api.js";

const PAGE = 100;
const CUT = 160; // payload characters shown in the table

// cut shortens text to n characters, with an ellipsis when it did.
export function cut(text, n) {
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

export function render(ctx, root) {
  const q0 = ctx.query;
  const input = (id, key, placeholder, size) => h("input", { id, placeholder, size, value: q0.get(key) || "", autocomplete: "off" });
  const f = {
    queue: input("dlq-queue", "queue", "any queue"),
    consumerGroup: input("dlq-group", "consumerGroup", "any group"),
    partition: input("dlq-partition", "partition", "any partition"),
    from: input("dlq-from", "from", "RFC 3339", 22),
    to: input("dlq-to", "to", "RFC 3339", 22),
  };
  const labels = { queue: "Queue", consumerGroup: "Consumer group", partition: "Partition", from: "Failed from", to: "Failed to" };
  let offset = Math.max(0, parseInt(q0.get("offset"), 10) || 0);
  let rows = [];
  const selected = new Set();
  const summary = h("div", { id: "dlq-summary", class: "muted" });
  const errors = h("div", { class: "card", id: "dlq-errors" });
  const list = h("div", { class: "card", id: "dlq-list" });
  const result = h("div", { id: "dlq-result" });
  const pager = h("div", { class: "pager" });
  const form = h("form", { class: "toolbar", id: "dlq-filter" }, Object.entries(f).map(([k, el]) => h("label", {}, labels[k], el)),
    h("button", { type: "submit", class: "primary" }, "Filter"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    offset = 0;
    selected.clear();
    ctx.setQuery({ ...filters(), offset: null });
    refresh();
  });
  const tools = h("div", { class: "toolbar" });
  if (ctx.can("read-write")) {
    tools.append(h("button", { type: "button", id: "dlq-redrive-selected", onclick: redriveSelected }, "Redrive selected"),
      h("button", { type: "button", id: "dlq-redrive-all", class: "primary", onclick: redriveAll }, "Redrive all matching…"));
  }
  if (ctx.can("admin")) {
    tools.append(h("button", { type: "button", id: "dlq-purge-selected", class: "danger", onclick: purgeSelected }, "Purge selected"),
      h("button", { type: "button", id: "dlq-purge-all", class: "danger", onclick: purgeAll }, "Purge all matching…"));
  }
  const quarantined = h("div", { id: "dlq-quarantine" });
  put(root, h("h1", {}, "Dead letters"), form, summary, tools, result, h("div", { class: "two wide-left" }, list, errors), pager, quarantined);

  const filters = () => Object.fromEntries(Object.entries(f).map(([k, el]) => [k, el.value.trim()]));

  function showResult(what, r) {
    put(result, h("div", { class: "card result" }, h("strong", {}, what + ": "),
      `redriven ${fmtNum(r.redriven)}, duplicates ${fmtNum(r.duplicates)}, removed from the DLQ ${fmtNum(r.deleted)}, remaining ${fmtNum(r.remaining)}`));
  }

  async function redriveSelected() {
    const picked = rows.filter((m) => selected.has(m.id));
    if (!picked.length) return ctx.flash("Select rows first", "error");
    // One call per queue: a redrive names its queue.
    const byQueue = new Map();
    for (const m of picked) byQueue.set(m.queue, [...(byQueue.get(m.queue) || []), m.id]);
    if (!await confirmAction("Redrive", `Redrive ${picked.length} selected dead letter(s) to their queues?`, { label: "Redrive", danger: false })) return;
    const sum = { redriven: 0, duplicates: 0, deleted: 0, remaining: 0 };
    try {
      for (const [queue, ids] of byQueue) {
        const r = await post("/api/v1/dlq/redrive", { queue, ids });
        for (const k of Object.keys(sum)) sum[k] += r[k];
      }
      showResult("Selected rows", sum);
      selected.clear();
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  async function redriveAll() {
    const q = filters();
    if (!q.queue) return ctx.flash("Filter by a queue first: a redrive moves the messages of one queue", "error");
    try {
      const count = await get("/api/v1/dlq" + qs({ ...q, limit: 1 }));
      const where = [q.queue, q.consumerGroup && `group ${q.consumerGroup}`, q.partition && `partition ${q.partition}`].filter(Boolean).join(", ");
      if (!await confirmAction("Redrive all matching", `${fmtNum(count.total)} dead letter(s) match (${where}). Redrive them all?`, { label: `Redrive ${count.total}`, danger: false })) return;
      const body = { queue: q.queue };
      if (q.consumerGroup) body.consumerGroup = q.consumerGroup;
      if (q.partition) body.partition = q.partition;
      const r = await post("/api/v1/dlq/redrive", body);
      showResult(`All of ${fmtNum(count.total)} matching`, r);
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  function showPurged(what, deleted, remaining) {
    put(result, h("div", { class: "card result" }, h("strong", {}, what + ": "),
      `deleted ${fmtNum(deleted)}, remaining ${fmtNum(remaining)}`));
  }

  async function purgeSelected() {
    const ids = rows.filter((m) => selected.has(m.id)).map((m) => m.id);
    if (!ids.length) return ctx.flash("Select rows first", "error");
    if (!await confirmAction("Purge", `Delete ${ids.length} selected dead letter(s) for good? They are not redriven.`, { label: "Purge" })) return;
    try {
      const r = await del("/api/v1/dlq" + qs({ ids: ids.join(",") }));
      showPurged("Selected rows", r.deleted, r.remaining);
      selected.clear();
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  // A purge of every match runs in bounded batches until none is left.
  // With no filter the broker wants all=true, and the user types it too.
  async function purgeAll() {
    const q = filters();
    const unfiltered = Object.values(q).every((v) => !v);
    try {
      const count = await get("/api/v1/dlq" + qs({ ...q, limit: 1 }));
      if (!count.total) return ctx.flash("No dead letter matches", "error");
      const text = unfiltered ? `${fmtNum(count.total)} dead letter(s) match: no filter is set, so this is every dead letter. Delete them all for good?`
        : `${fmtNum(count.total)} dead letter(s) match. Delete them all for good? They are not redriven.`;
      if (!await confirmAction("Purge all matching", text, { label: `Purge ${count.total}`, typed: unfiltered ? "purge all" : undefined })) return;
      const query = qs(unfiltered ? { all: "true" } : q);
      let deleted = 0;
      let r;
      do {
        r = await del("/api/v1/dlq" + query);
        deleted += r.deleted;
      } while (r.remaining > 0 && r.deleted > 0);
      showPurged(`All of ${fmtNum(count.total)} matching`, deleted, r.remaining);
      selected.clear();
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  // Damaged segments a group met and moved past: their messages were not
  // delivered to it. Shown only when there are any.
  async function refreshQuarantine() {
    const q = filters();
    const r = await get("/api/v1/quarantine" + qs({ queue: q.queue, partition: q.partition, limit: PAGE }));
    if (!r.total) return put(quarantined);
    const restore = (s) => h("button", { type: "button", class: "quarantine-restore", onclick: async () => {
      if (!await confirmAction("Try again", `Re-verify segment ${s.id} (${s.queue}/${s.partition}, offsets ${s.firstOffset}–${s.lastOffset}) and, if it now reads, dead-letter its ${s.frames} message(s) for the groups past it?`, { label: "Try again", danger: false })) return;
      try {
        const res = await post(`/api/v1/quarantine/${s.id}/restore`, {});
        ctx.flash(`${fmtNum(res.deadLettered)} dead letter(s) written from segment ${s.id}`);
        refresh();
      } catch (err) { ctx.fail(err); }
    } }, "Try again");
    put(quarantined, h("div", { class: "card" }, h("h2", {}, "Damaged segments set aside"),
      h("p", { class: "muted" }, `${fmtNum(r.total)} segment(s) failed their checksum or did not decode; the groups past each did not receive its offsets.`),
      table(["Set aside", "Queue", "Partition", "Offsets", "Messages", "Groups past it", "Reason", ""], r.segments.map((s) =>
        h("tr", { "data-quarantine-id": s.id }, h("td", {}, fmtTime(s.quarantinedAt)), h("td", {}, s.queue), h("td", {}, s.partition),
          h("td", {}, `${s.firstOffset}–${s.lastOffset}`), h("td", { class: "num" }, fmtNum(s.frames)),
          h("td", {}, s.passedBy.length ? s.passedBy.join(", ") : "–"), h("td", {}, s.reason),
          h("td", {}, ctx.can("admin") ? restore(s) : null))))));
  }

  function showPayload(m, text) {
    return modal(`Dead letter ${m.transactionId || m.id}`, (close) => h("div", {},
      h("p", { class: "muted" }, `${m.queue}/${m.partition}, ${groupText(m.consumerGroup)}, failed ${fmtTime(m.failedAt)}: ${m.errorMessage || "no error text"}`),
      h("pre", { class: "payload", id: "dlq-payload" }, text),
      h("div", { class: "actions" }, h("button", { type: "button", id: "dlq-payload-close", onclick: () => close(null) }, "Close"))));
  }

  // Only the newest refresh paints (see messages.js).
  let seq = 0;
  async function refresh() {
    const my = ++seq;
    try {
      await refreshQuarantine();
      const r = await get("/api/v1/dlq" + qs({ ...filters(), limit: PAGE, offset }));
      if (my !== seq) return;
      rows = r.messages;
      put(summary, `${fmtNum(r.total)} dead letter(s) match`);
      const box = (m) => {
        const c = h("input", { type: "checkbox", class: "dlq-pick", checked: selected.has(m.id),
          "aria-label": `select dead letter ${m.transactionId || m.id} of ${m.queue}/${m.partition}, failed ${fmtTime(m.failedAt)}` });
        c.addEventListener("change", () => (c.checked ? selected.add(m.id) : selected.delete(m.id)));
        return c;
      };
      put(list, table([ctx.can("read-write") ? "Select" : "", "Failed", "Queue", "Partition", "Group", "Retries", "Error", "Payload"], rows.map((m) => {
        const text = payloadText(m.data);
        return h("tr", { "data-id": m.id, "data-key": m.id }, h("td", {}, ctx.can("read-write") ? box(m) : null), h("td", {}, fmtTime(m.failedAt)), h("td", {}, m.queue),
          h("td", {}, m.partition), h("td", {}, groupText(m.consumerGroup)), h("td", { class: "num" }, fmtNum(m.retryCount)),
          h("td", {}, m.errorMessage || "–"), h("td", { class: "payload-cell" }, h("code", { class: "clip" }, cut(text.replace(/\s+/g, " "), CUT)),
            h("button", { type: "button", class: "small link-like dlq-open", "aria-label": `open the full payload of dead letter ${m.transactionId || m.id}`,
              onclick: () => showPayload(m, text) }, "Full payload")));
      })));
      const counts = new Map();
      for (const m of rows) counts.set(m.errorMessage || "(no error text)", (counts.get(m.errorMessage || "(no error text)") || 0) + 1);
      put(errors, h("h2", {}, "Top errors"), h("p", { class: "muted" }, rows.length < r.total ? `in these ${rows.length} rows` : "in all matches"),
        table(["Error", "Count"], [...counts].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([e, n]) => h("tr", {}, h("td", {}, e), h("td", { class: "num" }, fmtNum(n))))));
      const go = (to) => { offset = to; ctx.setQuery({ offset: offset || null }); refresh(); };
      put(pager,
        h("button", { type: "button", disabled: offset === 0, onclick: () => go(Math.max(0, offset - PAGE)) }, "← Newer"),
        h("span", { class: "muted" }, ` rows ${r.total ? offset + 1 : 0}–${offset + rows.length} of ${fmtNum(r.total)} `),
        h("button", { type: "button", disabled: offset + rows.length >= r.total, onclick: () => go(offset + PAGE) }, "Older →"));
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}
