// Messages: filter and page the log, find a message by its transactionId
// or traceId, open one with its payload (as text) and trace, delete it.
// The filter lives in the URL.
import { h, put, table, fmtNum, fmtTime, payloadText, confirmAction } from "./dom.js";
import { get, del, seg, qs } from "./api.js";

const PAGE = 50;
const FIND_PAGE = 1000; // rows per request while finding...
const FIND_PAGES = 20; // ...and at most this many requests

export function render(ctx, root) {
  const q = ctx.query;
  const input = (id, key, placeholder, size) => h("input", { id, placeholder, size, value: q.get(key) || "", autocomplete: "off" });
  const f = {
    queue: input("msg-queue", "queue", "any queue"),
    partition: input("msg-partition", "partition", "any partition"),
    status: h("select", { id: "msg-status" }, ["", "pending", "processing", "completed", "dead_letter"].map((s) =>
      h("option", { value: s, selected: s === (q.get("status") || "") }, s || "any status"))),
    from: input("msg-from", "from", "RFC 3339; default 1 h ago", 26),
    to: input("msg-to", "to", "default now", 26),
  };
  const labels = { queue: "Queue", partition: "Partition", status: "Status", from: "From", to: "To" };
  const find = input("msg-find", "find", "transactionId or traceId", 38);
  let offset = Math.max(0, parseInt(q.get("offset"), 10) || 0);
  const list = h("div", { class: "card", id: "message-list" });
  const detailEl = h("div", { class: "card", id: "message-detail", hidden: true });
  const found = h("div", { id: "message-found", role: "status" });
  const pager = h("div", { class: "pager" });
  const form = h("form", { class: "toolbar", id: "message-filter" },
    Object.entries(f).map(([k, el]) => h("label", {}, labels[k], el)), h("button", { type: "submit", class: "primary" }, "Filter"));
  const findForm = h("form", { class: "toolbar find", id: "message-find" }, h("label", {}, "Find a message", find),
    h("button", { type: "submit", id: "msg-find-go" }, "Find"),
    h("span", { class: "muted" }, "within the queue, partition and time window above"));
  const filters = () => ({ queue: f.queue.value.trim(), partition: f.partition.value.trim(), status: f.status.value,
    from: f.from.value.trim(), to: f.to.value.trim() });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    offset = 0;
    ctx.setQuery({ ...filters(), offset: null });
    refresh();
  });
  findForm.addEventListener("submit", (e) => {
    e.preventDefault();
    ctx.setQuery({ ...filters(), find: find.value.trim() });
    lookup();
  });
  put(root, h("h1", {}, "Messages"), form, findForm, found, detailEl, list, pager);

  // lookup pages through the listing, which carries both ids, newest
  // first, and stops at the first page with a match or after FIND_PAGES.
  async function lookup() {
    const want = find.value.trim();
    if (!want) return put(found);
    put(found, h("p", { class: "muted" }, "Searching…"));
    try {
      let seen = 0;
      for (let page = 0; page < FIND_PAGES; page++) {
        const r = await get("/api/v1/messages" + qs({ ...filters(), limit: FIND_PAGE, offset: page * FIND_PAGE }));
        seen += r.messages.length;
        const hits = r.messages.filter((m) => m.transactionId === want || m.traceId === want);
        if (hits.length) {
          put(found, h("div", { class: "card result" }, h("strong", {}, `${fmtNum(hits.length)} message(s) with id ${want}`),
            messageTable(hits, "found")));
          if (hits.length === 1) open(hits[0]);
          return;
        }
        if (r.messages.length < FIND_PAGE) break;
      }
      put(found, h("p", { class: "error", id: "message-not-found" }, `No message with transactionId or traceId ${want} among the ${fmtNum(seen)} newest in this window` +
        (seen >= FIND_PAGE * FIND_PAGES ? " (search stopped there: narrow the queue or the time window)" : "") + "."));
    } catch (err) { ctx.fail(err); }
  }

  async function open(m) {
    try {
      const [d, tr] = await Promise.all([get(`/api/v1/messages/${seg(m.partitionId)}/${seg(m.transactionId)}`),
        get(`/api/v1/traces/${seg(m.partitionId)}/${seg(m.transactionId)}`).catch(() => ({ traces: [] }))]);
      detailEl.hidden = false;
      const kv = [["queue", d.queuePath], ["transaction", d.transactionId], ["status", d.status], ["created", fmtTime(d.createdAt)],
        ["retries", d.retryCount], ["error", d.errorMessage || "–"], ["trace id", d.traceId || "–"], ["producer", d.producerSub || "–"],
        ["groups", (d.consumerGroups || []).map((g) => `${g.name}${g.consumed ? " ✓" : ""}`).join(", ") || "–"]];
      put(detailEl, h("h2", {}, "Message ", h("code", {}, d.transactionId)),
        h("dl", { class: "kv" }, kv.map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])),
        h("h3", {}, "Payload"), h("pre", { id: "message-payload", class: "payload" }, payloadText(d.payload)),
        h("h3", {}, "Trace"), table(["Time", "Event", "Group", "Worker", "Names", "Data"], (tr.traces || []).map((t) =>
          h("tr", {}, h("td", {}, fmtTime(t.created_at)), h("td", {}, t.event_type), h("td", {}, t.consumer_group),
            h("td", {}, t.worker_id || "–"), h("td", {}, (t.trace_names || []).join(", ")), h("td", {}, h("code", {}, payloadText(t.data)))))),
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: () => { detailEl.hidden = true; } }, "Close"),
          ctx.can("read-write") ? h("button", { type: "button", class: "danger", id: "message-delete", onclick: () => remove(d) }, "Delete message") : null));
      detailEl.scrollIntoView({ block: "nearest" });
    } catch (err) { ctx.fail(err); }
  }

  async function remove(d) {
    if (!await confirmAction("Delete message", `Delete message ${d.transactionId} from ${d.queuePath}?`, { label: "Delete message" })) return;
    try {
      await del(`/api/v1/messages/${seg(d.partitionId)}/${seg(d.transactionId)}`);
      ctx.flash(`Message ${d.transactionId} deleted`);
      detailEl.hidden = true;
      put(found);
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  function messageTable(rows, cls) {
    return table(["Created", "Queue", "Partition", "Transaction", "Trace", "Status", ""], rows.map((m) =>
      h("tr", { "data-txn": m.transactionId, "data-key": m.partitionId + "/" + m.transactionId, class: cls || null },
        h("td", {}, fmtTime(m.createdAt)), h("td", {}, m.queue), h("td", {}, m.partition),
        h("td", {}, h("code", {}, m.transactionId)), h("td", {}, m.traceId ? h("code", {}, m.traceId) : "–"), h("td", {}, m.status),
        h("td", {}, h("button", { type: "button", class: "small open-message", "aria-label": `open message ${m.transactionId} of ${m.queuePath}`,
          onclick: () => open(m) }, "Open")))));
  }

  // Only the newest refresh paints: under load an answer to an earlier
  // one (an auto-refresh in flight when a message was deleted) can arrive
  // last and would bring the deleted row back.
  let seq = 0;
  async function refresh() {
    const my = ++seq;
    try {
      const r = await get("/api/v1/messages" + qs({ ...filters(), limit: PAGE, offset }));
      if (my !== seq) return;
      put(list, messageTable(r.messages));
      const go = (to) => { offset = to; ctx.setQuery({ offset: offset || null }); refresh(); };
      put(pager,
        h("button", { type: "button", disabled: offset === 0, onclick: () => go(Math.max(0, offset - PAGE)) }, "← Newer"),
        h("span", { class: "muted" }, ` rows ${offset + 1}–${offset + r.messages.length} `),
        h("button", { type: "button", disabled: r.messages.length < PAGE, onclick: () => go(offset + PAGE) }, "Older →"));
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  if (find.value.trim()) lookup();
  return { refresh };
}
