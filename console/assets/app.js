// comb console: a hash-routed single page over the public JSON API.
import { h, put, focusMark, focusRestore } from "./dom.js";
import { get, getKept, post, token, APIError } from "./api.js";
import { GROUPS, LAG_STEP } from "./rates.js";
import * as overview from "./overview.js";
import * as queues from "./queues.js";
import * as groups from "./groups.js";
import * as snapshots from "./snapshots.js";
import * as messages from "./messages.js";
import * as dlq from "./dlq.js";

const LEVELS = { "public": 0, "read-only": 1, "read-write": 2, "admin": 3 };
const views = { overview, queues, groups, snapshots, messages, dlq };

const main = document.getElementById("main");
const flashEl = document.getElementById("flash");

// ctx is what every view gets: who the caller is and how to report.
const ctx = {
  level: "read-only",
  can(level) { return LEVELS[this.level] >= LEVELS[level]; },
  flash(msg, kind = "ok") {
    put(flashEl, h("div", { class: "flash " + kind }, msg));
    clearTimeout(ctx.flashTimer);
    ctx.flashTimer = setTimeout(() => put(flashEl), kind === "error" ? 10000 : 5000);
  },
  fail(err) {
    if (err instanceof APIError && err.status === 401) return signIn(err.message);
    ctx.flash(err.message || String(err), "error");
  },
};

let current = null; // {refresh} of the shown view

// The hash is "#/view/arg/arg?filters": the part after "?" holds a view's
// filters, sort and page, so a filtered view can be shared and survives a
// reload. Views change it with ctx.setQuery, which replaces the history
// entry without routing again.
function splitHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const i = raw.indexOf("?");
  return i < 0 ? [raw, ""] : [raw.slice(0, i), raw.slice(i + 1)];
}
ctx.query = new URLSearchParams();
ctx.setQuery = (changes) => {
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") ctx.query.delete(k);
    else ctx.query.set(k, String(v));
  }
  const s = ctx.query.toString();
  history.replaceState(history.state, "", "#/" + splitHash()[0] + (s ? "?" + s : ""));
};

function route() {
  const [path, query] = splitHash();
  ctx.query = new URLSearchParams(query);
  const parts = path.split("/").map(decodeURIComponent);
  const name = views[parts[0]] ? parts[0] : "overview";
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === name);
  const section = h("section", { id: "view-" + name, class: "view" });
  put(main, section);
  current = views[name].render(ctx, section, parts.slice(1)) || null;
}

// signIn forgets whoever was signed in, header included, and asks for a
// token.
function signIn(message) {
  current = null;
  ctx.level = "read-only";
  delete document.body.dataset.level;
  put(document.getElementById("who"));
  put(document.getElementById("maint"));
  document.getElementById("signout").hidden = true;
  const input = h("input", { id: "token", type: "password", autocomplete: "off", placeholder: "eyJ…", size: 60 });
  const form = h("form", { id: "signin", class: "card" },
    h("h2", {}, "Sign in"),
    h("p", {}, "This broker checks bearer tokens. Paste a token: it is kept for this tab only (sessionStorage)."),
    message ? h("p", { class: "error" }, message) : null,
    h("label", {}, "Token ", input),
    h("div", { class: "actions" }, h("button", { type: "submit", id: "token-save", class: "primary" }, "Sign in")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    token.set(input.value.trim());
    start();
  });
  put(main, form);
  input.focus();
}

async function start() {
  try {
    const me = await get("/api/v1/whoami");
    ctx.level = me.level;
    put(document.getElementById("who"), me.auth ? `${me.subject || "token"} · ${me.level}${me.tenant ? " · tenant " + me.tenant : ""}` : "no auth");
    document.getElementById("signout").hidden = !me.auth;
    document.body.dataset.level = me.level;
  } catch (err) {
    if (err instanceof APIError && (err.status === 401 || err.status === 403)) return signIn(token.get() ? err.message : "");
    return ctx.flash(err.message, "error");
  }
  header();
  route();
}

async function header() {
  try {
    const health = await get("/health");
    put(document.getElementById("version"), "v" + (health.version || "?"));
  } catch { /* the version is decoration */ }
  const slot = document.getElementById("maint");
  put(slot);
  if (!ctx.can("admin")) return;
  try {
    const m = await get("/api/v1/system/maintenance");
    const toggle = (id, what, on, path, title) => {
      const box = h("input", { type: "checkbox", id, checked: on });
      box.addEventListener("change", async () => {
        try {
          await post(path, { enabled: box.checked });
          ctx.flash(`${what} maintenance ${box.checked ? "on" : "off"}`);
        } catch (err) {
          box.checked = !box.checked;
          ctx.fail(err);
        }
      });
      return h("label", { class: "inline maint", title }, box, what);
    };
    put(slot, h("span", { class: "muted" }, "maintenance"),
      toggle("maint-push", "push", m.maintenanceMode, "/api/v1/system/maintenance", "buffer pushes durably instead of appending them"),
      toggle("maint-pop", "pop", m.popMaintenanceMode, "/api/v1/system/maintenance/pop", "answer pops with nothing"));
  } catch (err) { ctx.fail(err); }
}

// Refresh: the shown view reloads its data every N seconds, not while the
// tab is hidden and not while a dialog is open (it would move under the
// user's hand).
let timer = null;
function schedule() {
  clearInterval(timer);
  const secs = Number(document.getElementById("refresh").value);
  if (!secs || document.hidden) return;
  timer = setInterval(refreshShown, secs * 1000);
}

// refreshShown reloads the shown view in place. Views redraw rows, not
// whole pages, but a focused button inside a redrawn row is a new node:
// focus goes back to its counterpart, and the scroll position is kept if
// the page shrank for a moment.
let refreshing = false;
async function refreshShown() {
  if (refreshing || !current || !current.refresh || document.querySelector("dialog[open]")) return;
  refreshing = true;
  const mark = focusMark(main);
  const y = window.scrollY;
  try {
    await current.refresh();
  } finally {
    refreshing = false;
  }
  focusRestore(main, mark);
  if (window.scrollY < y) window.scrollTo(window.scrollX, y);
  document.dispatchEvent(new Event("comb:refreshed"));
}
// Group lag is sampled every LAG_STEP while the tab shows, whatever the
// view, so the sparklines have their hour when someone looks.
let sampler = null;
function sample() {
  clearInterval(sampler);
  if (document.hidden) return;
  sampler = setInterval(() => {
    if (document.body.dataset.level) getKept(GROUPS).catch(() => {});
  }, LAG_STEP);
}

document.getElementById("refresh").addEventListener("change", schedule);
document.getElementById("refresh-now").addEventListener("click", refreshShown);
document.addEventListener("visibilitychange", sample);
document.addEventListener("visibilitychange", schedule);
document.getElementById("signout").addEventListener("click", () => { token.clear(); signIn(""); });
window.addEventListener("hashchange", () => { if (document.getElementById("signin")) return; route(); });

schedule();
sample();
start();
