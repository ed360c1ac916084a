// Overview: what an operator checks first. Counts per family, credentials issued and denied over
// the last hour and day (hourly bars), the most frequent denial reasons with links to their
// events, log streams with errored deliveries, integrations whose last sync failed.

import { useState, useEffect } from '../vendor/preact-hooks-11.2.0.mjs';
import { html, Link, useSession, useLoad, Alert, Loading, Empty, Time, useTitle } from '../ui.js';
import { api, list, count } from '../api.js';
import { FAMILY } from '../families.js';
import { eventReason, reasonText } from './events.js';

const COUNTED = ['access-policies', 'client-workloads', 'server-workloads', 'trust-providers', 'credential-providers', 'access-conditions', 'integrations', 'log-streams', 'users', 'roles', 'sso-idps', 'resource-sets'];

/** Runs the async functions with at most `n` at a time (the browser's connections are few). */
async function limited(fns, n = 4) {
  const out = new Array(fns.length);
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < fns.length) { const k = i++; out[k] = await fns[k]().catch(() => null); }
  }));
  return out;
}

function Counts({ session }) {
  const r = useLoad(() => limited(COUNTED.map(k => () => {
    const f = FAMILY[k];
    const q = f.rsFilter ? { filter: `resourceSet:${session.rs}` } : {};
    return count(f.path, f.itemsKey, q);
  })), [session.rs]);
  return html`<section aria-labelledby="counts-h"><h2 id="counts-h">Configuration</h2>
    <ul class="cards">${COUNTED.map((k, i) => html`<li class="card"><${Link} to=${k}>
      <span class="card-n">${r.data ? (r.data[i] === null ? '—' : r.data[i]) : '…'}</span>
      <span class="card-l">${FAMILY[k].title}</span></${Link}></li>`)}</ul>
    ${r.data && r.data.some(x => x === null) && html`<p class="muted small">— : your role cannot read that family here.</p>`}
  </section>`;
}

const HOUR = 3600e3;
function Activity({ session }) {
  const r = useLoad(async () => {
    const now = Date.now();
    const end = Math.ceil(now / HOUR) * HOUR;
    const slots = Array.from({ length: 24 }, (_, i) => [end - (24 - i) * HOUR, end - (23 - i) * HOUR]);
    const issued = (a, b) => () => count('/api/v1/workload-events', 'workloadEvents', { search: 'CredentialIssued', 'start-date': new Date(a).toISOString(), 'end-date': new Date(b).toISOString() });
    const denied = (a, b) => () => count('/api/v1/authorization-events', 'authorizationEvents', { 'event-type': 'access.authorization', severity: 'Warning', 'start-date': new Date(a).toISOString(), 'end-date': new Date(b).toISOString() });
    const authFail = (a, b) => () => count('/api/v1/authorization-events', 'authorizationEvents', { 'event-type': 'access.authentication', severity: 'Warning', 'start-date': new Date(a).toISOString(), 'end-date': new Date(b).toISOString() });
    const h = now - HOUR, d = now - 24 * HOUR;
    const [i1, d1, a1, i24, d24, a24, ...bars] = await limited([
      issued(h, now + 1), denied(h, now + 1), authFail(h, now + 1), issued(d, now + 1), denied(d, now + 1), authFail(d, now + 1),
      ...slots.flatMap(([a, b]) => [issued(a, b), denied(a, b)]),
    ]);
    return { i1, d1, a1, i24, d24, a24, slots: slots.map((s, k) => ({ t: s[0], issued: bars[2 * k] || 0, denied: bars[2 * k + 1] || 0 })) };
  }, [session.rs]);
  if (r.error) return html`<${Alert} error=${r.error} />`;
  const d = r.data;
  return html`<section aria-labelledby="act-h"><h2 id="act-h">Credentials</h2>
    ${!d ? html`<${Loading} what="Counting events" />` : html`
      <dl class="stats">
        <div><dt>Issued, last hour</dt><dd>${d.i1 ?? '—'}</dd></div>
        <div><dt>Denied, last hour</dt><dd class=${d.d1 ? 'bad' : ''}>${d.d1 ?? '—'}</dd></div>
        <div><dt>Issued, last 24 hours</dt><dd>${d.i24 ?? '—'}</dd></div>
        <div><dt>Denied, last 24 hours</dt><dd class=${d.d24 ? 'bad' : ''}>${d.d24 ?? '—'}</dd></div>
        <div><dt>Failed sign-ins of workloads, 24 hours</dt><dd class=${d.a24 ? 'bad' : ''}>${d.a24 ?? '—'}</dd></div>
      </dl>
      <${Chart} slots=${d.slots} />`}
  </section>`;
}

/** Hourly bars of issued and denied credentials (SVG; the table beside it says the same in text). */
function Chart({ slots }) {
  const max = Math.max(1, ...slots.map(s => Math.max(s.issued, s.denied)));
  const W = 24 * 20, H = 120;
  const hh = t => String(new Date(t).getHours()).padStart(2, '0');
  const none = !slots.some(s => s.issued || s.denied);
  return html`<figure class="chart">
    ${none && html`<p class="muted chart-empty">No credential requests in the last 24 hours. Workloads appear here once they call /edge/v1/credentials.</p>`}
    <svg viewBox=${`0 0 ${W} ${H + 18}`} role="img" aria-labelledby="chart-cap" preserveAspectRatio="none">
      ${slots.map((s, i) => {
        const hi = (s.issued / max) * H, hd = (s.denied / max) * H;
        return html`<g><rect class="bar-ok" x=${i * 20 + 2} y=${H - hi} width="7" height=${hi}><title>${hh(s.t)}:00 issued ${s.issued}</title></rect>
          <rect class="bar-bad" x=${i * 20 + 10} y=${H - hd} width="7" height=${hd}><title>${hh(s.t)}:00 denied ${s.denied}</title></rect>
          ${i % 3 === 0 && html`<text x=${i * 20 + 2} y=${H + 14} class="axis">${hh(s.t)}h</text>`}</g>`;
      })}
      <line x1="0" y1=${H} x2=${W} y2=${H} class="axis-line" />
    </svg>
    <figcaption id="chart-cap">Credentials issued (<span class="key ok">■</span>) and denied (<span class="key bad">■</span>) per hour, last 24 hours; most in one hour: ${max === 1 && !slots.some(s => s.issued || s.denied) ? 0 : max}.</figcaption>
    <details><summary>As a table</summary><table class="small"><thead><tr><th scope="col">Hour</th><th scope="col">Issued</th><th scope="col">Denied</th></tr></thead>
      <tbody>${slots.map(s => html`<tr><td>${hh(s.t)}:00</td><td class="num">${s.issued}</td><td class="num">${s.denied}</td></tr>`)}</tbody></table></details>
  </figure>`;
}

function Denials({ session }) {
  const r = useLoad(async () => {
    const res = await list('/api/v1/authorization-events', 'authorizationEvents', { severity: 'Warning', 'span-last-hours': 24, 'per-page': 500 });
    const by = new Map();
    for (const ev of res.items) {
      const k = eventReason(ev) || 'Unknown';
      const cur = by.get(k) || { reason: k, n: 0, latest: ev, type: ev.meta.eventType };
      cur.n += 1;
      by.set(k, cur);
    }
    return { rows: [...by.values()].sort((a, b) => b.n - a.n).slice(0, 6), sampled: res.items.length, total: res.total };
  }, [session.rs]);
  return html`<section aria-labelledby="den-h"><h2 id="den-h">Most frequent denial reasons, last 24 hours</h2>
    ${r.error ? html`<${Alert} error=${r.error} />` : !r.data ? html`<${Loading} what="Reading denials" />`
      : r.data.rows.length === 0 ? html`<${Empty}><p>No denials in the last 24 hours.</p></${Empty}>`
      : html`<div class="table-wrap"><table><thead><tr><th scope="col">Reason</th><th scope="col" class="num">Events</th><th scope="col">Latest</th></tr></thead><tbody>
        ${r.data.rows.map(x => html`<tr><td><strong>${x.reason}</strong><div class="small muted">${reasonText(x.reason) || ''}</div></td><td class="num">${x.n}</td>
          <td><${Link} to=${`events/authorization/${x.latest.meta.eventId}`}><${Time} value=${x.latest.meta.timestamp} /><span class="sr-only"> (the latest ${x.reason} event)</span></${Link}></td></tr>`)}
        </tbody></table></div>
        <p class="small"><${Link} to="events?severity=Warning">All denied events</${Link}>${r.data.total > r.data.sampled ? ` (counted over the newest ${r.data.sampled} of ${r.data.total})` : ''}</p>`}
  </section>`;
}

function Health({ session }) {
  const r = useLoad(async () => {
    const [streams, integ, disc] = await Promise.all([
      list('/api/v1/log-streams', 'logStreams', { 'per-page': 1000 }).catch(() => null),
      list('/api/v2/integrations', 'integrations', { 'per-page': 1000 }).catch(() => null),
      list('/api/v1/discovery-integrations', 'integrations', { 'per-page': 1000 }).catch(() => null),
    ]);
    const failing = s => s.isActive && s.lastSyncStatus && s.lastSyncStatus !== 'Success';
    return {
      streams: streams && streams.items.filter(s => s.isActive && (s.erroredTransactionCount || 0) > 0),
      integrations: integ && [...integ.items.filter(failing).map(i => ['integrations', i]), ...((disc && disc.items.filter(failing)) || []).map(i => ['discovery-integrations', i])],
    };
  }, [session.rs]);
  const d = r.data;
  return html`<section aria-labelledby="health-h"><h2 id="health-h">Needs attention</h2>
    ${!d ? html`<${Loading} what="Checking streams and integrations" />` : html`
      <h3>Log streams with errored deliveries</h3>
      ${d.streams === null ? html`<p class="muted">Your role cannot read log streams.</p>` : d.streams.length === 0 ? html`<p class="ok-text">None: every active stream delivers.</p>`
        : html`<ul class="plain">${d.streams.map(s => html`<li><${Link} to=${`log-streams/${s.externalId}`}>${s.name}</${Link}>: ${s.erroredTransactionCount} errored, ${s.completedTransactionCount || 0} delivered</li>`)}</ul>`}
      <h3>Integrations whose last sync failed</h3>
      ${d.integrations === null ? html`<p class="muted">Your role cannot read integrations here.</p>` : d.integrations.length === 0 ? html`<p class="ok-text">None.</p>`
        : html`<ul class="plain">${d.integrations.map(([k, i]) => html`<li><${Link} to=${`${k}/${i.externalId}`}>${i.name}</${Link}>: ${i.lastSyncStatus} (<${Time} value=${i.lastSync} />)</li>`)}</ul>`}`}
  </section>`;
}

export function Overview() {
  const session = useSession();
  useTitle('Overview');
  return html`<div class="page">
    <h1>Overview</h1>
    <p class="muted small">Resource set <strong>${session.rsName}</strong>${session.userFullName ? html` · signed in as ${session.userFullName}` : ''}.</p>
    <div class="overview">
      <${Activity} session=${session} />
      <${Denials} session=${session} />
      <${Health} session=${session} />
      <${Counts} session=${session} />
    </div>
  </div>`;
}
