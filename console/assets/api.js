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
  return data;
}

export const get = (p) => api("GET", p);

// Lists the views poll are kept (the last answer of a few routes), so a
// view opened again paints at once from what the console last saw and then
// brings it up to date.
// Listeners (onKept) see each such answer as it arrives: live rates are
// worked out from them.
const kept = new Map(); // path -> { v, at }
const listeners = new Map();
export function lastSeen(p) { const k = kept.get(p); return k ? k.v : undefined; }
export function onKept(p, fn) { listeners.set(p, [...(listeners.get(p) || []), fn]); }
export async function getKept(p) {
  const v = await get(p);
  kept.delete(p);
  kept.set(p, { v, at: Date.now() });
  if (kept.size > 12) kept.delete(kept.keys().next().value);
  for (const fn of listeners.get(p) || []) fn(v);
  return v;
}
// getFresh answers from what was kept when it is younger than maxAge ms.
export function getFresh(p, maxAge) {
  const k = kept.get(p);
  return k && Date.now() - k.at < maxAge ? Promise.resolve(k.v) : getKept(p);
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
