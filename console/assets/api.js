// The console's only way to the broker: the public JSON API, same origin,
// with the token kept for this tab.

const KEY = "comb.token";

export const token = {
  get: () => sessionStorage.getItem(KEY) || "",
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function api(method, path, body) {
  return (await call(method, path, body)).data;
}

// call is api with the reply's headers: a paged listing says where its
// next page is in Link.
async function call(method, path, body) {
  const headers = {};
  const t = token.get();
  if (t) headers.Authorization = "Bearer " + t;
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!res.ok) {
    const msg = data && typeof data === "object" && data.error ? data.error : res.status + " " + res.statusText;
    throw new APIError(res.status, msg);
  }
  return { data, headers: res.headers };
}

// nextPage is the path of the page after a reply, from its Link header
// (rel="next"), or null on the last page.
function nextPage(headers) {
  const m = /<([^>]*)>\s*;\s*rel="next"/.exec(headers.get("Link") || "");
  return m ? m[1] : null;
}

// getAll reads a paged listing to its end, following Link from page to
// page, and joins the pages: arrays end to end, and objects keyed by queue
// ({queue: {partitions: [...]}}) queue by queue, and an object's own
// lists ({partitions: [...]}) end to end. The broker answers at most
// 1,000 rows a reply, so a group over more partitions takes several.
// With first, the first page asks for that many rows only and the pages
// after it for the path's own limit, and onPage sees the rows joined so
// far after each page but the last: a view draws its first rows at once
// and the rest when they come. With rest (a function returning a
// promise), the pages after the first wait for it: a view asks for the
// rest once its first rows are painted, so the larger pages do not take
// the broker's and the page's time from that first paint.
export async function getAll(p, { first, onPage, rest } = {}) {
  const limit = (u, n) => {
    const x = new URL(u, location.origin);
    x.searchParams.set("limit", String(n));
    return x.pathname + x.search;
  };
  // 1,000 is the broker's largest page and its default.
  const size = new URL(p, location.origin).searchParams.get("limit") || 1000;
  let { data, headers } = await call("GET", first ? limit(p, first) : p);
  for (let next = nextPage(headers), n = 0; next && n < 1000; n++) {
    if (onPage) onPage(data);
    if (rest && n === 0) await rest();
    const r = await call("GET", first ? limit(next, size) : next);
    if (Array.isArray(data)) data = data.concat(r.data || []);
    else {
      for (const [k, v] of Object.entries(r.data || {})) {
        if (Array.isArray(data[k]) && Array.isArray(v)) data[k] = data[k].concat(v);
        else if (data[k] && Array.isArray(data[k].partitions) && v && Array.isArray(v.partitions)) data[k] = { ...data[k], partitions: data[k].partitions.concat(v.partitions) };
        else data[k] = v;
      }
    }
    next = nextPage(r.headers);
  }
  return data;
}

export const get = (p) => api("GET", p);

// painted resolves once what the page changed before it has been painted:
// after the next frame's paint, or in half a second where no frame comes
// (a tab in the background draws none).
export const painted = () => new Promise((r) => { requestAnimationFrame(() => setTimeout(r)); setTimeout(r, 500); });

// Lists the views poll are kept (the last answer of a few routes), so a
// view opened again paints at once from what the console last saw and then
// brings it up to date.
// Listeners (onKept) see each such answer as it arrives, of the path or
// of the path with a query: live rates are worked out from them.
const kept = new Map(); // path -> { v, at }
const listeners = new Map();
export function lastSeen(p) { const k = kept.get(p); return k ? k.v : undefined; }
export function onKept(p, fn) { listeners.set(p, [...(listeners.get(p) || []), fn]); }
// A kept listing is read to its end (getAll) unless follow is false: a
// path that asks for one page of a longer list.
// opts (first, onPage) are getAll's.
export async function getKept(p, follow = true, opts) {
  const v = follow ? await getAll(p, opts) : await get(p);
  kept.delete(p);
  kept.set(p, { v, at: Date.now() });
  if (kept.size > 12) kept.delete(kept.keys().next().value);
  for (const fn of listeners.get(p.split("?")[0]) || []) fn(v);
  return v;
}
export const post = (p, b) => api("POST", p, b === undefined ? {} : b);
export const put = (p, b) => api("PUT", p, b);
export const del = (p) => api("DELETE", p);

// seg escapes one path segment: names may hold "/" or spaces.
export const seg = encodeURIComponent;

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  const s = u.toString();
  return s ? "?" + s : "";
}
