// The seek dialog: pick a target, see the dry-run preview, then apply.
// Apply is enabled only by a preview of exactly the target shown, so what
// the user confirms is what the broker said it would do.
import { h, put, fmtNum, modal } from "./dom.js";
import { get, post, seg } from "./api.js";
import { grid } from "./grid.js";

export function seekDialog(ctx, { group, queue, partition, mode = "end", snapshot = "" }) {
  const path = `/api/v1/consumer-groups/${seg(group)}/queues/${seg(queue)}` +
    (partition ? `/partitions/${seg(partition)}` : "") + "/seek";
  const title = `Seek ${group} on ${queue}` + (partition ? ` / ${partition}` : "");
  return modal(title, (close) => {
    const modeSel = h("select", { id: "seek-mode" },
      [["end", "to the end"], ["time", "to a time"], ["offset", "to an offset"], ["snapshot", "to a snapshot"]]
        .map(([v, l]) => h("option", { value: v, selected: v === mode }, l)));
    const time = h("input", { id: "seek-time", value: new Date(Date.now() - 3600e3).toISOString(), size: 28 });
    const offset = h("input", { id: "seek-offset", type: "number", min: 0, value: 0 });
    const snap = h("select", { id: "seek-snapshot" });
    const fields = {
      time: h("label", {}, "Time (RFC 3339) ", time),
      offset: h("label", {}, "Offset ", offset),
      snapshot: h("label", {}, "Snapshot ", snap),
    };
    const preview = h("div", { id: "seek-preview" });
    const apply = h("button", { type: "button", id: "seek-apply", class: "danger", disabled: true }, "Apply seek");
    let previewed = null; // JSON of the body the preview was made for

    get(`/api/v1/snapshots?consumerGroup=${seg(group)}&queue=${seg(queue)}`).then((r) => {
      put(snap, r.snapshots.map((s) => h("option", { value: s.name, selected: s.name === snapshot }, `${s.name} (${s.createdAt})`)));
      if (!r.snapshots.length) put(snap, h("option", { value: "" }, "no snapshot of this group and queue"));
    }).catch((err) => ctx.fail(err));

    const body = () => {
      switch (modeSel.value) {
        case "time": return { timestamp: time.value.trim() };
        case "offset": return { offset: Number(offset.value) };
        case "snapshot": return { snapshot: snap.value };
        default: return { toEnd: true };
      }
    };
    const showFields = () => {
      for (const [k, el] of Object.entries(fields)) el.hidden = k !== modeSel.value;
    };
    const stale = () => {
      previewed = null;
      apply.disabled = true;
      put(preview);
      showFields();
    };
    for (const el of [modeSel, time, offset, snap]) {
      el.addEventListener("input", stale);
      el.addEventListener("change", stale);
    }
    showFields();

    const doPreview = async () => {
      const b = body();
      try {
        const r = await post(path, { ...b, dryRun: true });
        previewed = JSON.stringify(b);
        put(preview, totals(r), resultTable(ctx, r));
        apply.disabled = false;
      } catch (err) {
        put(preview, h("p", { class: "error" }, err.message));
      }
    };
    apply.addEventListener("click", async () => {
      const b = body();
      if (JSON.stringify(b) !== previewed) return stale();
      try {
        const r = await post(path, b);
        ctx.flash(`Seek applied to ${r.partitionsUpdated ?? r.partitions.length} partition(s) of ${group} on ${queue}`);
        close(true);
      } catch (err) {
        put(preview, h("p", { class: "error" }, err.message));
      }
    });
    // The preview scrolls inside the dialog and the buttons stay below it,
    // so Apply is in reach however many partitions the group has.
    return h("div", { class: "seek" },
      h("div", { class: "row" }, h("label", {}, "Target ", modeSel), fields.time, fields.offset, fields.snapshot),
      preview,
      h("div", { class: "actions sticky" },
        h("button", { type: "button", id: "seek-cancel", onclick: () => close(null) }, "Cancel"),
        h("button", { type: "button", id: "seek-preview-btn", class: "primary", onclick: doPreview }, "Preview"),
        apply));
  });
}

// totals is the preview summed over every partition (the server's
// totals: the reply lists at most 1,000), first, so the whole move can be
// read before any row.
function totals(r) {
  const t = r.totals;
  return h("div", { id: "seek-totals", class: "totals" },
    h("strong", {}, "Preview (dry run, nothing moved): "),
    `${fmtNum(t.partitions)} partition(s), ${fmtNum(t.moving)} would move; redeliver ${fmtNum(t.redeliver)}, skip ${fmtNum(t.skip)}, ` +
    `overshoot bound ${fmtNum(t.overshootBound)}` +
    (t.clamped || r.clamped ? `; clamped ${fmtNum(t.clamped)} partition(s), ${fmtNum(r.framesEvicted)} frames evicted` : "; nothing clamped") +
    (r.partitionsOmitted ? `; the first ${fmtNum(r.partitions.length)} are listed below` : ""));
}

export function resultTable(ctx, r) {
  const g = grid(ctx, {
    id: "seek-result", url: false, what: "partitions", label: "Filter partitions", placeholder: "partition", pageSize: 50, tableClass: "seek-result", split: false,
    columns: [{ label: "Partition", key: "partition", sort: (p) => p.partition }, { label: "From → to", num: true },
      { label: "Redeliver", key: "redeliver", num: true, sort: (p) => p.redeliver }, { label: "Skip", key: "skip", num: true, sort: (p) => p.skip },
      { label: "Overshoot bound", key: "overshoot", num: true, sort: (p) => p.overshootBound }, { label: "Clamped", key: "clamped", sort: (p) => (p.clamped ? 1 : 0) },
      { label: "Frames evicted", key: "evicted", num: true, sort: (p) => p.framesEvicted }],
    key: (p) => p.partition, search: (p) => p.partition,
    row: (p) => h("tr", { "data-partition": p.partition },
      h("td", {}, p.partition), h("td", { class: "num" }, `${fmtNum(p.from)} → ${fmtNum(p.to)}`),
      h("td", { class: "num" }, fmtNum(p.redeliver)), h("td", { class: "num" }, fmtNum(p.skip)),
      h("td", { class: "num" }, fmtNum(p.overshootBound)), h("td", {}, p.clamped ? "yes" : "no"),
      h("td", { class: "num" }, fmtNum(p.framesEvicted))),
  });
  g.set(r.partitions);
  return g.el;
}
