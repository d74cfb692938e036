// Messages: filter and page the log, open one message with its payload
// (as text) and trace, delete it.
import { h, put, table, fmtTime, payloadText, confirmAction } from "./dom.js";
import { get, del, seg, qs } from "./api.js";

const PAGE = 50;

export function render(ctx, root) {
  const f = {
    queue: h("input", { id: "msg-queue", placeholder: "queue" }),
    partition: h("input", { id: "msg-partition", placeholder: "partition" }),
    status: h("select", { id: "msg-status" }, ["", "pending", "processing", "completed", "dead_letter"].map((s) => h("option", { value: s }, s || "any status"))),
    from: h("input", { id: "msg-from", placeholder: "from (RFC 3339; default 1 h ago)", size: 26 }),
    to: h("input", { id: "msg-to", placeholder: "to (default now)", size: 26 }),
  };
  let offset = 0;
  const list = h("div", { class: "card", id: "message-list" });
  const detailEl = h("div", { class: "card", id: "message-detail", hidden: true });
  const pager = h("div", { class: "pager" });
  const form = h("form", { class: "toolbar", id: "message-filter" }, Object.values(f), h("button", { type: "submit", class: "primary" }, "Filter"));
  form.addEventListener("submit", (e) => { e.preventDefault(); offset = 0; refresh(); });
  put(root, h("h1", {}, "Messages"), form, detailEl, list, pager);

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
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  async function refresh() {
    try {
      const r = await get("/api/v1/messages" + qs({ queue: f.queue.value.trim(), partition: f.partition.value.trim(), status: f.status.value,
        from: f.from.value.trim(), to: f.to.value.trim(), limit: PAGE, offset }));
      put(list, table(["Created", "Queue", "Partition", "Transaction", "Status", ""], r.messages.map((m) =>
        h("tr", { "data-txn": m.transactionId }, h("td", {}, fmtTime(m.createdAt)), h("td", {}, m.queue), h("td", {}, m.partition),
          h("td", {}, h("code", {}, m.transactionId)), h("td", {}, m.status),
          h("td", {}, h("button", { type: "button", class: "small open-message", onclick: () => open(m) }, "Open"))))));
      put(pager,
        h("button", { type: "button", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); refresh(); } }, "← Newer"),
        h("span", { class: "muted" }, ` rows ${offset + 1}–${offset + r.messages.length} `),
        h("button", { type: "button", disabled: r.messages.length < PAGE, onclick: () => { offset += PAGE; refresh(); } }, "Older →"));
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}
