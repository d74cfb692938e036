// Snapshots: saved cursor positions of a group on a queue, to seek back to.
import { h, put, fmtTime, groupText, confirmAction, modal } from "./dom.js";
import { get, post, put as putJSON, del, seg } from "./api.js";
import { grid } from "./grid.js";
import { seekDialog } from "./seek.js";

function parseLabels(s) {
  const out = {};
  for (const part of s.split(",")) {
    const t = part.trim();
    if (!t) continue;
    const i = t.indexOf("=");
    if (i <= 0) throw new Error(`label "${t}" is not key=value`);
    out[t.slice(0, i).trim()] = t.slice(i + 1).trim();
  }
  return out;
}
const labelText = (l) => Object.entries(l || {}).map(([k, v]) => `${k}=${v}`).join(", ");

export function render(ctx, root) {
  const create = h("form", { class: "card", id: "snapshot-create" });
  const g = grid(ctx, {
    id: "snapshot-grid", what: "snapshots", label: "Filter snapshots", placeholder: "name, group, queue or label",
    sort: "created", dir: "desc",
    columns: [{ label: "Name", key: "name", sort: (s) => s.name }, { label: "Group", key: "group", sort: (s) => s.consumerGroup },
      { label: "Queue", key: "queue", sort: (s) => s.queue }, { label: "Labels" }, { label: "Created", key: "created", sort: (s) => s.createdAt },
      { label: "Expires", key: "expires", sort: (s) => s.expireTime }, { label: "" }],
    key: (s) => s.name, search: (s) => `${s.name}\n${groupText(s.consumerGroup)}\n${s.queue}\n${labelText(s.labels)}`,
    row: (s) => h("tr", { "data-snapshot": s.name }, h("td", {}, s.name), h("td", {}, groupText(s.consumerGroup)), h("td", {}, s.queue),
      h("td", {}, labelText(s.labels)), h("td", {}, fmtTime(s.createdAt)), h("td", {}, fmtTime(s.expireTime)),
      h("td", { class: "buttons" },
        ctx.can("read-write") && s.consumerGroup ? h("button", { type: "button", class: "small seek-here", "aria-label": `seek ${groupText(s.consumerGroup)} to snapshot ${s.name}`, onclick: () =>
          seekDialog(ctx, { group: s.consumerGroup, queue: s.queue, mode: "snapshot", snapshot: s.name }).then(refresh) }, "Seek a group here…") : null,
        ctx.can("read-write") ? h("button", { type: "button", class: "small edit-snapshot", "aria-label": `edit snapshot ${s.name}`, onclick: () => edit(s) }, "Edit") : null,
        ctx.can("admin") ? h("button", { type: "button", class: "small danger delete-snapshot", "aria-label": `delete snapshot ${s.name}`, onclick: () => remove(s) }, "Delete") : null)),
  });
  const list = h("div", { class: "card", id: "snapshot-list" }, h("h2", {}, "Snapshots"), g.el);
  put(root, h("h1", {}, "Snapshots"), ctx.can("read-write") ? create : null, list);

  if (ctx.can("read-write")) {
    const name = h("input", { id: "snap-name", required: true, pattern: "[A-Za-z0-9_.\\-]{1,255}", placeholder: "before-deploy" });
    const group = h("input", { id: "snap-group", placeholder: "consumer group" });
    const queue = h("input", { id: "snap-queue", required: true, placeholder: "queue" });
    const labels = h("input", { id: "snap-labels", placeholder: "k=v, k=v" });
    const ttl = h("input", { id: "snap-ttl", type: "number", min: 1, placeholder: "hours (empty: default)" });
    put(create, h("h2", {}, "Create a snapshot"), h("div", { class: "row" },
      h("label", {}, "Name ", name), h("label", {}, "Group ", group), h("label", {}, "Queue ", queue),
      h("label", {}, "Labels ", labels), h("label", {}, "Expires in ", ttl),
      h("button", { type: "submit", class: "primary", id: "snap-create" }, "Create")));
    create.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const body = { name: name.value.trim(), consumerGroup: group.value.trim(), queue: queue.value.trim(), labels: parseLabels(labels.value) };
        if (ttl.value) body.ttlSeconds = Math.round(Number(ttl.value) * 3600);
        await post("/api/v1/snapshots", body);
        ctx.flash(`Snapshot ${body.name} created`);
        create.reset();
        refresh();
      } catch (err) { ctx.fail(err); }
    });
  }

  async function edit(s) {
    const saved = await modal(`Edit snapshot ${s.name}`, (close) => {
      const labels = h("input", { id: "edit-labels", value: labelText(s.labels), size: 40 });
      const exp = h("input", { id: "edit-expire", value: s.expireTime, size: 28 });
      const err = h("p", { class: "error" });
      const save = async () => {
        try {
          const r = await putJSON("/api/v1/snapshots/" + seg(s.name), { labels: parseLabels(labels.value), expireTime: exp.value.trim() });
          close(r);
        } catch (e) { put(err, e.message); }
      };
      return h("div", {}, h("label", {}, "Labels ", labels), h("label", {}, "Expires (RFC 3339) ", exp), err,
        h("div", { class: "actions" }, h("button", { type: "button", onclick: () => close(null) }, "Cancel"),
          h("button", { type: "button", class: "primary", id: "edit-save", onclick: save }, "Save")));
    });
    if (saved) { ctx.flash(`Snapshot ${s.name} updated`); refresh(); }
  }

  async function remove(s) {
    if (!await confirmAction("Delete snapshot", `Delete snapshot "${s.name}"? Seeking to it will no longer be possible.`, { label: "Delete snapshot" })) return;
    try {
      await del("/api/v1/snapshots/" + seg(s.name));
      ctx.flash(`Snapshot ${s.name} deleted`);
      refresh();
    } catch (err) { ctx.fail(err); }
  }

  // Only the newest refresh paints (see messages.js).
  let seq = 0;
  async function refresh() {
    const my = ++seq;
    try {
      const r = await get("/api/v1/snapshots");
      if (my === seq) g.set(r.snapshots);
    } catch (err) { ctx.fail(err); }
  }
  refresh();
  return { refresh };
}
