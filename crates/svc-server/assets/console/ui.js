// Shared pieces of the console: the router (paths under /console/, History API), links, the
// session context, and the small components every page uses (alerts, loading and empty states,
// the pager, the confirmation dialog, time formatting).

import { h, createContext } from './vendor/preact-11.2.0.mjs';
import { useState, useEffect, useRef, useContext, useCallback } from './vendor/preact-hooks-11.2.0.mjs';
import htm from './vendor/htm-3.1.1.mjs';

export const html = htm.bind(h);
export const BASE = '/console';

// ---- routing ---------------------------------------------------------------------------------

const listeners = new Set();
export function navigate(to, { replace = false } = {}) {
  const url = to.startsWith('/') ? to : `${BASE}/${to}`;
  if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
  listeners.forEach(f => f());
  if (!replace) window.scrollTo(0, 0);
}
window.addEventListener('popstate', () => listeners.forEach(f => f()));

/** The current route: {path: 'client-workloads/…' (without /console/), query: URLSearchParams}. */
export function useRoute() {
  const [, set] = useState(0);
  useEffect(() => {
    const f = () => set(n => n + 1);
    listeners.add(f);
    return () => listeners.delete(f);
  }, []);
  let path = location.pathname;
  if (path.startsWith(`${BASE}/`)) path = path.slice(BASE.length + 1); else path = '';
  return { path: path.replace(/\/+$/, ''), query: new URLSearchParams(location.search) };
}

/** Replaces the current query string (keeps the path), e.g. a list's page and filter. */
export function setQuery(q) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  navigate(location.pathname + (s ? `?${s}` : ''), { replace: true });
}

/** Lower-case for the middle of a sentence, keeping acronyms: `API key`, `SSO identity providers`. */
export const lower = s => (/^[A-Z][A-Z]/.test(s) ? s : s.charAt(0).toLowerCase() + s.slice(1));

export function href(path) { return `${BASE}/${path}`; }

export function Link({ to, children, ...rest }) {
  const url = to.startsWith('/') ? to : href(to);
  const onClick = e => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(url);
  };
  return html`<a href=${url} onClick=${onClick} ...${rest}>${children}</a>`;
}

// ---- session ---------------------------------------------------------------------------------

export const Session = createContext(null);
export const useSession = () => useContext(Session);

// ---- data loading ----------------------------------------------------------------------------

/**
 * Runs `load` (async) whenever `deps` change: {data, error, loading, reload}. A slower answer of
 * older deps never overwrites a newer one.
 */
export function useLoad(load, deps) {
  const [st, set] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const run = useCallback(() => {
    const n = ++seq.current;
    set(s => ({ ...s, loading: true, error: null }));
    Promise.resolve().then(load).then(
      data => { if (n === seq.current) set({ data, error: null, loading: false }); },
      error => { if (n === seq.current) set({ data: null, error, loading: false }); },
    );
  }, deps);
  useEffect(run, [run]);
  return { ...st, reload: run };
}

// ---- small components ------------------------------------------------------------------------

/** The API's message in an element with role `alert` (contract: errors). */
export function Alert({ error, children }) {
  if (!error && !children) return null;
  const msg = error ? (error.message || String(error)) : null;
  const hint = error && error.status === 403
    ? ' Your role does not allow this here; ask an administrator, or pick another resource set.' : '';
  return html`<div class="alert" role="alert">${msg}${hint}${children}</div>`;
}

export function Notice({ children }) {
  return html`<div class="notice" role="status">${children}</div>`;
}

export function Loading({ what = 'Loading' }) {
  return html`<p class="loading" role="status" aria-live="polite"><span class="spinner" aria-hidden="true"></span>${what}…</p>`;
}

export function Empty({ children }) {
  return html`<div class="empty">${children}</div>`;
}

/** "1–25 of 130" with Previous / Next and the page size. */
export function Pager({ page, perPage, total, onPage, onPerPage }) {
  const first = total === 0 ? 0 : (page - 1) * perPage + 1;
  const last = Math.min(total, page * perPage);
  const pages = Math.max(1, Math.ceil(total / perPage));
  return html`<div class="pager">
    <span aria-live="polite">${first}–${last} of ${total}</span>
    <label class="inline">Per page
      <select value=${String(perPage)} onChange=${e => onPerPage(Number(e.currentTarget.value))}>
        ${[10, 25, 50, 100].map(n => html`<option value=${String(n)}>${n}</option>`)}
      </select>
    </label>
    <button type="button" class="secondary" disabled=${page <= 1} onClick=${() => onPage(page - 1)}>Previous page</button>
    <span>Page ${page} of ${pages}</span>
    <button type="button" class="secondary" disabled=${page >= pages} onClick=${() => onPage(page + 1)}>Next page</button>
  </div>`;
}

/** A modal confirmation (`<dialog>`, role dialog); `confirm` names its confirming button. */
export function ConfirmDialog({ open, title, children, confirm, danger = true, onConfirm, onCancel, busy }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return html`<dialog ref=${ref} aria-labelledby="dlg-title" onCancel=${e => { e.preventDefault(); onCancel(); }}>
    <h2 id="dlg-title">${title}</h2>
    <div>${children}</div>
    <div class="actions">
      <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
      <button type="button" class=${danger ? 'danger' : ''} disabled=${busy} onClick=${onConfirm}>${confirm}</button>
    </div>
  </dialog>`;
}

const pad = n => String(n).padStart(2, '0');
/** Local time `2026-11-21 10:15:30`, the UTC value in the title. */
export function Time({ value }) {
  if (!value) return html`<span class="muted">—</span>`;
  const d = new Date(value);
  if (isNaN(d)) return value;
  const s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return html`<time datetime=${value} title=${value}>${s}</time>`;
}

export function Bool({ value, yes = 'Yes', no = 'No' }) {
  return value ? html`<span class="badge ok">${yes}</span>` : html`<span class="badge">${no}</span>`;
}

/** A badge for an outcome (`Authorized`, `Unauthorized`, `Failed`, …). */
export function Outcome({ value }) {
  if (!value) return html`<span class="muted">—</span>`;
  const good = ['Authorized', 'Success', 'Passed', 'Attested', 'Retrieved', 'Identified', 'Received', 'CredentialIssued'];
  const bad = ['Unauthorized', 'Failure', 'Failed', 'Error', 'CredentialDenied', 'CredentialError', 'NotRetrieved'];
  const cls = good.includes(value) ? 'ok' : bad.includes(value) ? 'bad' : '';
  return html`<span class=${`badge ${cls}`}>${value}</span>`;
}

/** Sets the document title: `<page> · Svc console`. */
export function useTitle(t) {
  useEffect(() => { document.title = t ? `${t} · Svc console` : 'Svc console'; }, [t]);
}

/** Copies text to the clipboard, with a button that says so. */
export function CopyButton({ text, label = 'Copy' }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try { await navigator.clipboard.writeText(text); setDone(true); setTimeout(() => setDone(false), 1500); } catch { /* no clipboard */ }
  };
  return html`<button type="button" class="secondary small" onClick=${copy} aria-label=${`${label}: ${text}`}>${done ? 'Copied' : label}</button>`;
}
