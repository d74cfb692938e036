// DOM helpers. Every piece of data reaches the page as a text node or an
// attribute value set through the DOM, never as markup: a payload or a
// queue name can hold anything.

// h builds an element. attrs: "class", "on<event>" functions, booleans
// (set or not), anything else a string attribute. Children: nodes,
// strings/numbers (text), arrays, null/undefined/false (skipped).
export function h(tag, attrs, ...children) {
  const svg = SVG_TAGS.has(tag);
  const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

const SVG_TAGS = new Set(["svg", "polyline", "line", "text", "g", "rect", "title", "path", "circle"]);

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// clear empties el and appends children.
export function put(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// table is a small table drawn whole. A header stands over its numbers:
// it is right-aligned when the first row's cell below it is numeric.
export function table(headers, rows, attrs) {
  const first = rows[0];
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map((x, i) => h("th", { scope: "col", class: first && first.cells[i] && first.cells[i].classList.contains("num") ? "num" : null }, x)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "nothing here"))));
}

const FOCUSABLE = "a[href], button, input, select, textarea";

// focusMark names the focused control inside root by its id, or by its
// row's data-key and its place in that row, so that it can be found again
// once the row is drawn anew.
export function focusMark(root) {
  const a = document.activeElement;
  if (!a || a === document.body || !root.contains(a)) return null;
  if (a.id) return { id: a.id };
  const row = a.closest("[data-key]");
  if (!row) return null;
  return { key: row.dataset.key, i: [...row.querySelectorAll(FOCUSABLE)].indexOf(a) };
}

// focusRestore focuses the control focusMark named, unless focus has found
// a live home of its own meanwhile.
export function focusRestore(root, m) {
  const a = document.activeElement;
  if (!m || (a && a !== document.body && a.isConnected)) return;
  let el = m.id ? document.getElementById(m.id) : null;
  if (!el && m.key !== undefined) {
    const row = [...root.querySelectorAll("[data-key]")].find((r) => r.dataset.key === m.key);
    el = row ? row.querySelectorAll(FOCUSABLE)[m.i] : null;
  }
  if (el) el.focus({ preventScroll: true });
}

// QUEUE_MODE is the cursor of pops that name no group.
export const QUEUE_MODE = "__QUEUE_MODE__";
export const groupText = (g) => (g === QUEUE_MODE ? "queue mode (no group)" : g || "–");

// fmtOffset shows a committed offset; -1 means the group has consumed
// nothing of the partition yet.
export function fmtOffset(n) {
  if (n === null || n === undefined) return "–";
  return Number(n) < 0 ? "nothing consumed" : fmtNum(n);
}

// One formatter for every number: toLocaleString makes one per call,
// which a page of rows pays hundreds of times.
const NUM = new Intl.NumberFormat("en-US");
export function fmtNum(n) {
  if (n === null || n === undefined) return "–";
  return NUM.format(Number(n));
}

export function fmtTime(s) {
  if (!s) return "–";
  const d = new Date(s);
  if (isNaN(d)) return String(s);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function fmtSecs(s) {
  s = Number(s) || 0;
  if (s < 60) return s + " s";
  if (s < 3600) return Math.round(s / 60) + " min";
  if (s < 86400) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(1) + " d";
}

// payloadText shows a payload as indented JSON text.
export function payloadText(p) {
  if (p === undefined) return "";
  try { return JSON.stringify(p, null, 2); } catch { return String(p); }
}

// modal shows a dialog and resolves with what the content's buttons pass to
// close(value); Escape or Cancel resolve null. build(close) returns the body.
export function modal(title, build) {
  return new Promise((resolve) => {
    const dlg = h("dialog", { class: "modal" });
    let done = false;
    const close = (v) => {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      resolve(v);
    };
    dlg.addEventListener("cancel", (e) => { e.preventDefault(); close(null); });
    put(dlg, h("h2", {}, title), build(close));
    document.body.appendChild(dlg);
    dlg.showModal();
  });
}

// confirmAction asks to confirm a destructive action. With typed set, the
// confirm button stays disabled until the user has typed it exactly.
export function confirmAction(title, text, { typed, label = "Confirm", danger = true } = {}) {
  return modal(title, (close) => {
    const ok = h("button", { type: "button", id: "confirm-ok", class: danger ? "danger" : "primary", onclick: () => close(true) }, label);
    const parts = [h("p", {}, text)];
    if (typed !== undefined) {
      ok.disabled = true;
      const input = h("input", { id: "confirm-typed", autocomplete: "off", spellcheck: "false" });
      input.addEventListener("input", () => { ok.disabled = input.value !== typed; });
      parts.push(h("label", {}, "Type ", h("code", {}, typed), " to confirm", input));
    }
    parts.push(h("div", { class: "actions" }, h("button", { type: "button", id: "confirm-cancel", onclick: () => close(null) }, "Cancel"), ok));
    return h("div", {}, parts);
  });
}
