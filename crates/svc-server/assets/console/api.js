// The management API client of the console: the bearer token (sessionStorage only, never
// localStorage or a cookie), the selected resource set (sent as X-Svc-ResourceSet on every
// call), and errors carrying the API's `message` (contract §1.8).

const TOKEN = 'svc.token';
const RS = 'svc.resourceSet';
export const DEFAULT_RS = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message || `The server answered ${status}.`);
    this.status = status;
    this.body = body;
  }
  /** The JSON path a validation message starts with (`serviceEndpoint.port: must be …`). */
  get field() {
    if (this.status !== 400) return null;
    const m = /^([A-Za-z_][\w.\[\]]*): /.exec(this.message);
    return m ? m[1] : null;
  }
}

let onSignedOut = () => {};
/** Called when the API answers 401 to a signed-in call: the session ended. */
export function whenSignedOut(f) { onSignedOut = f; }

export function token() { return sessionStorage.getItem(TOKEN); }
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN, t); else sessionStorage.removeItem(TOKEN);
}
export function resourceSet() { return sessionStorage.getItem(RS) || DEFAULT_RS; }
export function setResourceSet(id) { sessionStorage.setItem(RS, id); }

/** The token's claims (not verified here: the API verifies every call). */
export function claims() {
  const t = token();
  if (!t) return null;
  try {
    const p = t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(decodeURIComponent(escape(atob(p))));
  } catch { return null; }
}

function qs(query) {
  if (!query) return '';
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach(x => p.append(k, x)); else p.append(k, String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}

/**
 * One API call. Resolves to {status, data, headers}; rejects with ApiError for every status ≥ 400
 * (and for 401 on a signed-in call, after forgetting the token). `binding`: send the SSO binding
 * cookie (only `POST /api/v1/sso/exchange`).
 */
export async function api(method, path, { body, query, rs, auth = true, binding = false } = {}) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (auth && t) headers.Authorization = `Bearer ${t}`;
  headers['X-Svc-ResourceSet'] = rs || resourceSet();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path + qs(query), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      // Cookies only for an SSO sign-in's exchange: its HttpOnly binding cookie ties the code to
      // the browser that started the sign-in (docs/sso.md). The token is never a cookie.
      credentials: binding ? 'same-origin' : 'omit', cache: 'no-store', redirect: 'error',
    });
  } catch (e) {
    throw new ApiError(0, 'The service cannot be reached. Check that it runs and try again.');
  }
  const text = await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch { data = text; } }
  if (res.status >= 400) {
    const message = data && typeof data === 'object' ? data.message : null;
    if (res.status === 401 && auth && t) {
      setToken(null);
      onSignedOut(message);
    }
    throw new ApiError(res.status, message, data);
  }
  return { status: res.status, data, headers: res.headers };
}

export const get = (path, query, opts = {}) => api('GET', path, { ...opts, query });

/** A list page: {items, total, page, perPage, order}. */
export async function list(path, itemsKey, query, opts) {
  const { data } = await get(path, query, opts);
  return {
    items: (data && data[itemsKey]) || [],
    total: data ? data.recordsTotal : 0,
    page: data ? data.page : 1,
    perPage: data ? data.perPage : 0,
    order: data ? data.order : null,
  };
}

/** Only the count of a list (per-page 1). */
export async function count(path, itemsKey, query, opts) {
  return (await list(path, itemsKey, { ...query, page: 1, 'per-page': 1 }, opts)).total;
}
