// The seek dialog: pick a target, see the dry-run preview, then apply.
// Apply is enabled only by a preview of exactly the target shown, so what
// the user confirms is what the broker said it would do.
import { h, put, table, fmtNum, modal } from "./dom.js";
import { get, post, seg } from "./api.js";

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
        put(preview, h("p", {}, `Preview (dry run, nothing moved): ${r.partitions.length} partition(s)`,
          r.clamped ? `, clamped; ${fmtNum(r.framesEvicted)} frames evicted` : ""),
        resultTable(r));
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
    return h("div", { class: "seek" },
      h("div", { class: "row" }, h("label", {}, "Target ", modeSel), fields.time, fields.offset, fields.snapshot),
      preview,
      h("div", { class: "actions" },
        h("button", { type: "button", id: "seek-cancel", onclick: () => close(null) }, "Cancel"),
        h("button", { type: "button", id: "seek-preview-btn", class: "primary", onclick: doPreview }, "Preview"),
        apply));
  });
}

export function resultTable(r) {
  return table(["Partition", "From → to", "Redeliver", "Skip", "Overshoot bound", "Clamped", "Frames evicted"],
    r.partitions.map((p) => h("tr", { "data-partition": p.partition },
      h("td", {}, p.partition), h("td", { class: "num" }, `${fmtNum(p.from)} → ${fmtNum(p.to)}`),
      h("td", { class: "num" }, fmtNum(p.redeliver)), h("td", { class: "num" }, fmtNum(p.skip)),
      h("td", { class: "num" }, fmtNum(p.overshootBound)), h("td", {}, p.clamped ? "yes" : "no"),
      h("td", { class: "num" }, fmtNum(p.framesEvicted)))), { class: "seek-result" });
}
