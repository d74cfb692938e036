// grid: a table over many rows that filters, sorts and pages in the
// browser and draws one page at a time, so a key press in its filter costs
// one page of rows however long the list is. The table, its header and the
// filter stay in place across refreshes (focus and scroll with them); only
// the rows of the page are drawn again. Filter, sort and page live in the
// URL (ctx.query, names under prefix) so a view can be shared and survives
// a reload.
import { h, put, fmtNum, focusMark, focusRestore } from "./dom.js";
import { painted } from "./api.js";

// asciiLower lower-cases ASCII letters only, as the broker's search does.
export const asciiLower = (s) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

// A page drawn for a view just opened, or for a key press, a sort or a
// page turn, draws the rows that reach the bottom of the window in its
// first frame and the rest of the page once that is painted: the style
// and layout of new rows is the largest part of a first paint (tens of
// milliseconds for a screenful on a loaded 2-core machine, more than the
// rows' building), and the operator sees what the window shows only.
// A row is at least ROW px tall.
const ROW = 24;
// PAUSE is the quiet after a key press that the rest of its page waits for.
const PAUSE = 150;

// A list too long to bring to the browser is a remote grid: o.load({ q,
// sort, dir, offset, limit }) returns { rows, total, all } for one page,
// filtered and sorted by the broker, and each key press, sort or page
// asks for that page only. Only the newest answer is drawn. o.match(r, f)
// says whether a row matches the filter f (ASCII lower-cased) as the
// broker matches it: with it, a filter that narrows a list the grid holds
// whole asks nothing.
//
// columns: [{ label, key, num, sort: (r) => value }]; a column with sort
// gets a header button (in a remote grid, sort: true is enough). row(r)
// returns the <tr>; key(r) names the row. search(r) is the text the
// filter matches (lower-cased once per set). split: false draws every
// page whole (a dialog's table, whose buttons sit below it).
export function grid(ctx, o) {
  const { id, columns, key, row, search, prefix = "", pageSize = 100, url = true, what = "rows", load, split: splits = true } = o;
  const name = (k) => prefix + k;
  const q0 = url && ctx.query ? ctx.query : new URLSearchParams();
  let q = q0.get(name("q")) || "";
  let sortKey = q0.get(name("sort")) || o.sort || "";
  let dir = (q0.get(name("dir")) || o.dir || "asc") === "desc" ? "desc" : "asc";
  let page = Math.max(0, (parseInt(q0.get(name("page")), 10) || 1) - 1);
  let all = []; // [{ r, hay }] in sort order
  let shown = []; // the entries of all that match the filter
  let more = false; // the rows set are the first pages of a longer list
  let remote = { rows: [], total: 0, all: 0 }; // the page a remote grid holds
  let asked = 0, drawn = 0; // sequence of a remote grid's requests
  let busy = null, again = false; // the request in flight; another is due
  let hasDrawn = false; // the grid has drawn rows once
  let asked1 = false; // the next draw answers the user (a key, a sort, a page)
  let gen = 0; // draws so far: a rest due from an older draw is dropped

  const input = search || o.filterId ? h("input", { id: o.filterId || id + "-filter", type: "search", value: q, autocomplete: "off", spellcheck: "false",
    placeholder: o.placeholder || "" }) : null;
  const count = h("span", { id: id + "-count", class: "muted count" });
  const prev = h("button", { type: "button", id: id + "-prev", class: "small", "aria-label": `previous page of ${what}` }, "← Prev");
  const next = h("button", { type: "button", id: id + "-next", class: "small", "aria-label": `next page of ${what}` }, "Next →");
  const where = h("span", { class: "muted", id: id + "-page" });
  const heads = columns.map((c) => {
    const th = h("th", { class: c.num ? "num" : null, scope: "col", "data-col": c.key || null });
    if (c.sort && c.key) {
      th.append(h("button", { type: "button", class: "sort", onclick: () => sortBy(c.key) }, c.label));
    } else th.append(c.label || "");
    return th;
  });
  const tbody = h("tbody");
  const table = h("table", { class: o.tableClass || null }, h("thead", {}, h("tr", {}, heads)), tbody);
  const pager = h("div", { class: "pager", id: id + "-pager" }, prev, where, next);
  const el = h("div", { class: "grid", id },
    h("div", { class: "toolbar" }, input ? h("label", { class: "inline filter", for: input.id }, o.label || "Filter", input) : null, count),
    h("div", { class: "scroll" }, table), pager);

  function save() {
    if (!url || !ctx.setQuery) return;
    ctx.setQuery({ [name("q")]: q || null, [name("sort")]: sortKey && sortKey !== o.sort ? sortKey : null,
      [name("dir")]: sortKey && !(sortKey === o.sort && dir === (o.dir || "asc")) ? dir : null, [name("page")]: page ? page + 1 : null });
  }

  function order() {
    const c = columns.find((x) => x.key === sortKey && x.sort);
    for (const th of heads) th.removeAttribute("aria-sort");
    if (!c) return;
    const th = heads[columns.indexOf(c)];
    th.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    const sign = dir === "asc" ? 1 : -1;
    const v = new Map(all.map((e) => [e, c.sort(e.r)]));
    all.sort((a, b) => {
      const x = v.get(a), y = v.get(b);
      if (x === y) return 0;
      if (x === null || x === undefined) return 1; // unknowns last either way
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sign;
    });
  }

  function filter() {
    const f = q.trim().toLowerCase();
    shown = f ? all.filter((e) => e.hay.includes(f)) : all;
  }

  // putRows draws a page's rows in tbody, keeping focus. The first draw
  // and a draw the user asked for (asked1) draw the rows down to the
  // window's bottom at once and the rest once they are painted, with a
  // row standing in for the rest at its height so that what is below the
  // table stays where it will be.
  // A refresh draws the page whole, as does a draw with focus inside the
  // rows (the focused row must be there when the draw returns).
  // It returns whether rows are still to come.
  function putRows(list, make, real) {
    const g = ++gen;
    const split = splits && (!hasDrawn || asked1);
    const typing = hasDrawn && asked1;
    if (real) hasDrawn = true; // a "loading…" row is not a first draw
    asked1 = false;
    delete el.dataset.rest;
    const mark = focusMark(tbody);
    // The rows from the table's top to the window's bottom; the page's
    // layout is clean here (the last frame made it), so this costs little.
    const n = split ? Math.max(1, Math.ceil((window.innerHeight - tbody.getBoundingClientRect().top) / ROW)) : 0;
    if (!split || mark || list.length <= n) {
      put(tbody, list.map(make));
      focusRestore(tbody, mark);
      return false;
    }
    const trs = list.slice(0, n).map(make);
    const stand = h("tr", { class: "rest", "aria-hidden": "true" }, h("td", { colspan: columns.length }));
    put(tbody, trs, stand);
    el.dataset.rest = "coming"; // the rest of the page is still to come
    // Reading the rows' height lays them out now, which the frame would
    // do anyway: it then lays out the stand-in's height only.
    const top = trs[0].offsetTop, last = trs[n - 1];
    stand.style.height = Math.round(((last.offsetTop + last.offsetHeight - top) / n) * (list.length - n)) + "px";
    // After a key press (a sort, a page turn) the rest waits for the
    // typing to pause: a key pressed meanwhile draws its own rows and this
    // rest is dropped, and the next key does not wait for its layout.
    painted().then(() => typing && new Promise((r) => setTimeout(r, PAUSE))).then(() => {
      if (g !== gen || !stand.isConnected) return;
      stand.replaceWith(...list.slice(n).map(make));
      delete el.dataset.rest;
      tellDrawn(true);
    });
    return true;
  }
  // tellDrawn tells listeners (the scale test) that the rows of q are drawn,
  // the first screenful (complete false) or the whole page.
  const tellDrawn = (complete) => el.dispatchEvent(new CustomEvent("comb:drawn", { bubbles: true, detail: { q, complete } }));

  // drawRemote draws the page a remote grid holds.
  function drawRemote() {
    const pages = Math.max(1, Math.ceil(remote.total / pageSize));
    const start = page * pageSize;
    const rest = remote.rows.length ? putRows(remote.rows, (r) => {
      const tr = row(r);
      tr.dataset.key = key(r);
      return tr;
    }, true) : putRows([h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, remote.all ? `no ${what} match` : "nothing here"))], (x) => x, false);
    put(count, remote.total === remote.all || remote.all === null ? `${fmtNum(remote.total)} ${what}` : `${fmtNum(remote.total)} of ${fmtNum(remote.all)} ${what} match`);
    put(where, remote.rows.length ? `${fmtNum(start + 1)}–${fmtNum(start + remote.rows.length)} of ${fmtNum(remote.total)}` : "");
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    pager.hidden = pages < 2;
    tellDrawn(!rest);
  }

  // fetchPage asks for the page the grid shows and draws it, unless a
  // newer request was made meanwhile.
  // One request is in flight at a time: keys pressed meanwhile are asked
  // for together, once it is answered, so fast typing queues nothing up.
  // (Aborting the request in flight for each key instead was slower on a
  // loaded 2-core machine: the broker and the browser still paid for the
  // requests given up.) Where the grid holds every row of the last answer
  // and the filter only narrowed it, the page is worked out here
  // (o.match, the broker's own test) with no answer to wait for.
  // The promise fetchPage returns settles once the newest page asked for
  // is drawn, keys pressed meanwhile included: a refresh that finds a
  // request in flight waits for the rows it brings.
  let held = null; // the params of the answer remote holds
  let chain = null; // the fetch in flight, to its last draw
  function fetchPage() {
    if (busy) { again = true; return chain; }
    chain = fetchOnce();
    return chain;
  }
  async function fetchOnce() {
    const n = ++asked;
    const p = { q: q.trim(), sort: sortKey, dir, offset: page * pageSize, limit: pageSize };
    let r = narrowed(p);
    if (!r) {
      busy = load(p);
      try { r = await busy; } finally { busy = null; }
      if (again) { again = false; held = p; remote = r; return fetchOnce(); }
    }
    if (n < drawn) return;
    drawn = n;
    remote = r;
    held = p;
    const pages = Math.max(1, Math.ceil(r.total / pageSize));
    if (page > pages - 1 && r.total > 0) { page = pages - 1; save(); return fetchOnce(); }
    for (const th of heads) th.removeAttribute("aria-sort");
    const c = columns.find((x) => x.key === sortKey && x.sort);
    if (c) heads[columns.indexOf(c)].setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    drawRemote();
  }
  // narrowed is the answer to p from the rows held, when they are every
  // row that matched a filter p's filter contains, in p's order: the rows
  // of p are those of them that match. A refresh (the same filter) asks
  // the broker.
  function narrowed(p) {
    if (!o.match || !held || p.offset || held.offset || p.sort !== held.sort || p.dir !== held.dir || p.q === held.q) return null;
    const f = asciiLower(p.q), f0 = asciiLower(held.q);
    if (!f.includes(f0) || remote.rows.length !== remote.total) return null;
    const rows = remote.rows.filter((r) => o.match(r, f));
    return { rows, total: rows.length, all: remote.all };
  }
  const reload = () => fetchPage().catch((err) => ctx.fail(err));

  // Rows are built once per entry and kept with it until the rows are set
  // again (a refresh) or their figures move (redraw): a key press that
  // shows rows already built, or the very rows on screen, costs no DOM
  // work but the count.
  let onScreen = [];
  function rowOf(e) {
    if (!e.tr) {
      e.tr = row(e.r);
      e.tr.dataset.key = key(e.r);
    }
    return e.tr;
  }
  function draw() {
    if (load) return drawRemote();
    const pages = Math.max(1, Math.ceil(shown.length / pageSize));
    // A page beyond the rows come so far (a shared link) waits for the rest.
    if (!more) page = Math.min(page, pages - 1);
    const start = page * pageSize;
    const slice = shown.slice(start, start + pageSize);
    let rest = false;
    if (!slice.length || slice.length !== onScreen.length || slice.some((e, i) => e !== onScreen[i])) {
      rest = slice.length ? putRows(slice, rowOf, true)
        : putRows([h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, more ? "loading…" : all.length ? `no ${what} match` : "nothing here"))], (x) => x, false);
      onScreen = slice;
    } else if (asked1) asked1 = false;
    const so = more ? ` so far, loading more…` : "";
    put(count, shown.length === all.length ? `${fmtNum(all.length)} ${what}${so}` : `${fmtNum(shown.length)} of ${fmtNum(all.length)} ${what} match${so}`);
    put(where, shown.length ? `${fmtNum(start + 1)}–${fmtNum(Math.min(start + pageSize, shown.length))} of ${fmtNum(shown.length)}` : "");
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    pager.hidden = pages < 2 && !more;
    tellDrawn(!rest);
  }

  function sortBy(k) {
    asked1 = true;
    if (sortKey === k) dir = dir === "asc" ? "desc" : "asc";
    else { sortKey = k; dir = columns.find((c) => c.key === k).num ? "desc" : "asc"; }
    page = 0;
    save();
    if (load) return reload();
    order();
    filter();
    page = 0;
    draw();
    save();
  }

  if (input) {
    input.addEventListener("input", () => {
      q = input.value;
      page = 0;
      asked1 = true;
      if (load) { save(); reload(); return; }
      filter();
      draw();
      save();
    });
  }
  prev.addEventListener("click", () => { page = Math.max(0, page - 1); asked1 = true; save(); if (load) reload(); else draw(); });
  next.addEventListener("click", () => { page += 1; asked1 = true; save(); if (load) reload(); else draw(); });

  return {
    el,
    // set replaces the rows (a refresh): the filter, sort and page stay.
    // With partial, rows are the first pages of a list still coming: the
    // count says so, and a later set brings the whole list.
    set(rows, partial = false) {
      more = partial;
      all = rows.map((r) => ({ r, hay: search ? search(r).toLowerCase() : "" }));
      order();
      filter();
      draw();
    },
    // fetch asks a remote grid's page again (a refresh).
    fetch: fetchPage,
    // show draws an answer load gave before (a view opened again).
    show(r) { remote = r; drawRemote(); },
    // redraw sorts and draws the same rows again (their rates moved).
    redraw() {
      for (const e of all) e.tr = null;
      onScreen = [];
      order();
      filter();
      draw();
    },
    get rows() { return load ? remote.rows : all.map((e) => e.r); },
    // params is the page a remote grid shows, as load is asked for it.
    params: () => ({ q: q.trim(), sort: sortKey, dir, offset: page * pageSize, limit: pageSize }),
  };
}
