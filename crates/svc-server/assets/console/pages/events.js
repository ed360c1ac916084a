// Events (authorization and workload, contract §3.24–§3.26) and the audit log (§3.23): a time
// window, search and the filters of §3.26, each event's reasons written out (which step failed,
// expected against actual), links to the entities an event names and to "Why denied?".

import { useState, useEffect, useRef } from '../vendor/preact-hooks-11.2.0.mjs';
import { html, Link, useRoute, setQuery, useSession, useLoad, Alert, Loading, Empty, Pager, Time, Outcome, useTitle, navigate, href } from '../ui.js';
import { api, list } from '../api.js';
import { RefName } from '../forms.js';

/** What each reason of §4.11 means, for a reader. */
export const REASONS = {
  NoClientWorkload: 'No active client workload matched the identity the request presented.',
  NoServerWorkload: 'No active server workload matched the requested host, port and protocol.',
  NoAccessPolicy: 'No active access policy connects the matched client and server workloads.',
  MultipleAccessPolicies: 'Several access policies match; set CLIENT_WORKLOAD_ID to choose the client workload.',
  ResourceSetMismatch: 'The request selected another resource set than the one its token was issued in.',
  AttestationFailed: 'None of the policy\'s trust providers attested the workload.',
  ConditionFailed: 'An access condition of the policy failed.',
  NoCredentialProvider: 'The policy has no active credential provider that fits the request.',
  SelectorRequired: 'The policy has several credential providers: the request must say which (connectionMetadata).',
  SelectorMismatch: 'The request\'s connectionMetadata selects no credential provider of the policy.',
  CredentialTypeMismatch: 'The requested credential type is not the one the credential provider issues.',
  UnresolvableClaim: 'A dynamic value of the credential provider could not be resolved from the request.',
  InvalidToken: 'The edge access token was missing, invalid, expired or revoked.',
  InvalidRequest: 'The request body was invalid.',
  InvalidClientId: 'The client ID was malformed.',
  UnknownTrustProvider: 'The client ID names no active trust provider in this resource set.',
  NoDataFound: 'The request carried no evidence of the trust provider\'s kind.',
  InvalidSignature: 'The evidence\'s signature did not verify.',
  InvalidEvidence: 'The evidence was malformed or its claims were not acceptable.',
  StaleEvidence: 'The evidence was too old or not yet valid.',
  MatchRuleFailed: 'The evidence verified, but a match rule of the trust provider did not match.',
  UpstreamError: 'An upstream service could not be reached or answered with an error.',
};
export const reasonText = r => (r && REASONS[r]) || null;

const WINDOWS = [['15m', 'Last 15 minutes', { 'span-last-minutes': 15 }], ['1h', 'Last hour', { 'span-last-minutes': 60 }], ['24h', 'Last 24 hours', { 'span-last-hours': 24 }], ['7d', 'Last 7 days', { 'span-last-hours': 168 }], ['30d', 'Last 30 days', { 'span-last-hours': 720 }], ['custom', 'Custom range', {}]];
const AUDIT_WINDOWS = [['1h', 'Last hour', { 'span-last-minutes': 60 }], ['24h', 'Last 24 hours', { 'span-last-days': 1 }], ['7d', 'Last 7 days', { 'span-last-days': 7 }], ['30d', 'Last 30 days', { 'span-last-days': 30 }], ['90d', 'Last 90 days', { 'span-last-days': 90 }], ['custom', 'Custom range', {}]];

function windowParams(windows, key, start, end) {
  if (key === 'custom') {
    const p = {};
    if (start) p['start-date'] = new Date(start).toISOString();
    if (end) p['end-date'] = new Date(end).toISOString();
    return p;
  }
  return (windows.find(w => w[0] === key) || windows[2])[2];
}

/** The failed check an event recorded in a few words (`detail`: a refused request's, or its first
 * refused trust provider's); never the evidence. */
function eventDetail(ev) {
  return (ev.outcome && ev.outcome.detail) || (ev.trustProviders || []).map(t => t.detail).find(Boolean) || null;
}

/** The reason an authorization event gives: its outcome's, or its first trust provider's. */
export function eventReason(ev) {
  return (ev.outcome && ev.outcome.reason) || (ev.trustProviders && ev.trustProviders[0] && ev.trustProviders[0].reason) || null;
}

function Tabs({ tab, onTab }) {
  const tabs = [['authorization', 'Authorization events'], ['workload', 'Workload events']];
  const refs = useRef({});
  const key = (e, i) => {
    const n = e.key === 'ArrowRight' ? (i + 1) % tabs.length : e.key === 'ArrowLeft' ? (i + tabs.length - 1) % tabs.length : null;
    if (n === null) return;
    e.preventDefault(); onTab(tabs[n][0]); setTimeout(() => refs.current[tabs[n][0]] && refs.current[tabs[n][0]].focus());
  };
  return html`<div role="tablist" aria-label="Kind of events" class="tabs">${tabs.map(([k, label], i) => html`
    <button type="button" role="tab" id=${`tab-${k}`} ref=${el => { refs.current[k] = el; }} aria-selected=${tab === k ? 'true' : 'false'} aria-controls="events-panel" tabindex=${tab === k ? 0 : -1} onClick=${() => onTab(k)} onKeyDown=${e => key(e, i)}>${label}</button>`)}</div>`;
}

export function EventsPage() {
  const { query } = useRoute();
  const session = useSession();
  const tab = query.get('tab') === 'workload' ? 'workload' : 'authorization';
  useTitle(tab === 'workload' ? 'Workload events' : 'Authorization events');
  const win = query.get('window') || '24h';
  const page = Number(query.get('page') || 1);
  const perPage = Number(query.get('per-page') || 25);
  const search = query.get('search') || '';
  const type = query.get('type') || '';
  const severity = query.get('severity') || '';
  const protocol = query.get('protocol') || '';
  const start = query.get('start') || '';
  const end = query.get('end') || '';
  const [text, setText] = useState(search);
  const all = { tab: tab === 'workload' ? 'workload' : '', window: win !== '24h' ? win : '', page: page > 1 ? page : '', 'per-page': perPage !== 25 ? perPage : '', search, type, severity, protocol, start, end };
  const q = o => setQuery({ ...all, ...o });
  useEffect(() => {
    if (text === search) return;
    const t = setTimeout(() => q({ search: text, page: '' }), 300);
    return () => clearTimeout(t);
  }, [text]);

  const r = useLoad(() => {
    const p = { page, 'per-page': perPage, search, severity, ...windowParams(WINDOWS, win, start, end) };
    if (tab === 'authorization') return list('/api/v1/authorization-events', 'authorizationEvents', { ...p, 'event-type': type });
    return list('/api/v1/workload-events', 'workloadEvents', { ...p, 'application-protocol': protocol });
  }, [tab, win, page, perPage, search, type, severity, protocol, start, end, session.rs]);

  const open = (e, to) => { if (e.target.closest('a,button')) return; navigate(href(to)); };
  return html`<div class="page">
    <h1>Events</h1>
    <p class="muted small">Resource set <strong>${session.rsName}</strong>. Every request to the Edge API writes authorization events; a credential request that names a server workload also writes a workload event.</p>
    <${Tabs} tab=${tab} onTab=${k => setQuery({ ...all, tab: k === 'workload' ? 'workload' : '', page: '', type: '' })} />
    <div id="events-panel" role="tabpanel" aria-labelledby=${`tab-${tab}`}>
      <form class="toolbar wrap" role="search" onSubmit=${e => { e.preventDefault(); q({ search: text, page: '' }); }}>
        <div class="field"><label for="ev-search">Search</label>
          <input id="ev-search" type="search" value=${text} onInput=${e => setText(e.currentTarget.value)} placeholder=${tab === 'authorization' ? 'event type, client IP, or a name' : 'action or IP'} /></div>
        <div class="field"><label for="ev-window">Time</label>
          <select id="ev-window" value=${win} onChange=${e => q({ window: e.currentTarget.value, page: '' })}>${WINDOWS.map(([k, l]) => html`<option value=${k}>${l}</option>`)}</select></div>
        ${win === 'custom' && html`<div class="field"><label for="ev-start">From</label><input id="ev-start" type="datetime-local" value=${start} onChange=${e => q({ start: e.currentTarget.value, page: '' })} /></div>
          <div class="field"><label for="ev-end">Until</label><input id="ev-end" type="datetime-local" value=${end} onChange=${e => q({ end: e.currentTarget.value, page: '' })} /></div>`}
        ${tab === 'authorization' ? html`<div class="field"><label for="ev-type">Event type</label>
          <select id="ev-type" value=${type} onChange=${e => q({ type: e.currentTarget.value, page: '' })}>
            <option value="">All</option>${['access.authentication', 'access.request', 'access.authorization', 'access.credential'].map(t => html`<option value=${t}>${t}</option>`)}
          </select></div>` : html`<div class="field"><label for="ev-proto">Protocol</label>
          <select id="ev-proto" value=${protocol} onChange=${e => q({ protocol: e.currentTarget.value, page: '' })}>
            <option value="">All</option>${['HTTP', 'MCP', 'OAuth', 'PostgreSQL', 'MySQL', 'Redis', 'Oracle Database', 'CloudA Warehouse', 'DataWarehouseA'].map(t => html`<option value=${t}>${t}</option>`)}
          </select></div>`}
        <div class="field"><label for="ev-sev">Severity</label>
          <select id="ev-sev" value=${severity} onChange=${e => q({ severity: e.currentTarget.value, page: '' })}>
            <option value="">All</option><option value="Info">Info</option><option value="Warning">Warning (denied)</option><option value="Error">Error</option>
          </select></div>
      </form>
      ${r.error ? html`<${Alert} error=${r.error} />`
        : !r.data ? html`<${Loading} what="Loading events" />`
        : r.data.items.length === 0 ? html`<${Empty}><p>No ${tab} events ${search || type || severity ? 'match these filters' : 'in this time window'}.</p>
            <p class="muted">Events appear when workloads call /edge/v1/auth and /edge/v1/credentials in resource set ${session.rsName}. Widen the time window, or pick another resource set.</p></${Empty}>`
        : html`<div class="table-wrap" aria-busy=${r.loading ? 'true' : 'false'}><table class="events">
          <caption class="sr-only">${tab === 'authorization' ? 'Authorization events' : 'Workload events'}, newest first</caption>
          ${tab === 'authorization' ? html`<thead><tr><th scope="col">Time</th><th scope="col">Event type</th><th scope="col">Result</th><th scope="col">Reason</th><th scope="col">Client IP</th><th scope="col">Workloads and policy</th></tr></thead>
          <tbody>${r.data.items.map(ev => {
            const to = `events/authorization/${ev.meta.eventId}`;
            const reason = eventReason(ev);
            return html`<tr class="clickable" onClick=${e => open(e, to)}>
              <td><${Time} value=${ev.meta.timestamp} /></td>
              <td><${Link} to=${to}>${ev.meta.eventType}</${Link}></td>
              <td><${Outcome} value=${ev.outcome && ev.outcome.result} /></td>
              <td>${reason ? html`<span title=${reasonText(reason) || ''}>${reason}</span>` : html`<span class="muted">—</span>`}</td>
              <td class="mono">${ev.meta.clientIP || '—'}</td>
              <td class="small">${[ev.clientWorkload && ev.clientWorkload.name, ev.serverWorkload && ev.serverWorkload.name].filter(Boolean).join(' → ')}${ev.accessPolicy ? html`<div class="muted">${ev.accessPolicy.name}</div>` : ''}${!ev.clientWorkload && ev.trustProviders && ev.trustProviders[0] ? html`<div class="muted">${ev.trustProviders[0].name}</div>` : ''}${ev.credentialProvider ? html`<div class="muted">${ev.credentialProvider.name} (${ev.credentialProvider.result})</div>` : ''}</td>
            </tr>`;
          })}</tbody>` : html`<thead><tr><th scope="col">Time</th><th scope="col">Event type</th><th scope="col">Result</th><th scope="col">Reason</th><th scope="col">Client IP</th><th scope="col">Protocol</th></tr></thead>
          <tbody>${r.data.items.map(ev => {
            const to = `events/workload/${ev.meta.eventId}`;
            return html`<tr class="clickable" onClick=${e => open(e, to)}>
              <td><${Time} value=${ev.meta.timestamp} /></td>
              <td><${Link} to=${to}>${ev.meta.eventType}</${Link}></td>
              <td><${Outcome} value=${ev.outcome && ev.outcome.result} /></td>
              <td>${ev.meta.action}</td>
              <td class="mono">${(ev.network && ev.network.clientWorkloadIP) || '—'}</td>
              <td>${ev.meta.applicationProtocol || '—'}</td>
            </tr>`;
          })}</tbody>`}
        </table></div>
        <${Pager} page=${page} perPage=${perPage} total=${r.data.total} onPage=${p => q({ page: p })} onPerPage=${n => q({ 'per-page': n, page: '' })} />`}
    </div>
  </div>`;
}

// ---- one event --------------------------------------------------------------------------------

function Attestations({ title, items, family }) {
  if (!items || !items.length) return null;
  return html`<section><h2>${title}</h2><div class="table-wrap"><table>
    <thead><tr><th scope="col">Name</th><th scope="col">Result</th><th scope="col">Reason</th><th scope="col">Attribute</th><th scope="col">Expected</th><th scope="col">Actual</th></tr></thead>
    <tbody>${items.map(a => html`<tr>
      <td><${RefName} family=${family} id=${a.id} name=${a.name} /></td>
      <td><${Outcome} value=${a.result} /></td>
      <td>${a.reason ? html`<strong>${a.reason}</strong>${reasonText(a.reason) ? html`<div class="small">${reasonText(a.reason)}</div>` : ''}${a.detail ? html`<div class="small mono">${a.detail}</div>` : ''}` : html`<span class="muted">—</span>`}</td>
      <td>${a.attribute || html`<span class="muted">—</span>`}</td>
      <td class="mono">${a.expectedValues && a.expectedValues.length ? a.expectedValues.join(' or ') : (a.expectedValue ?? html`<span class="muted">—</span>`)}</td>
      <td class="mono">${a.actualValue ?? html`<span class="muted">—</span>`}</td>
    </tr>`)}</tbody></table></div></section>`;
}

function Entity({ label, family, x, many }) {
  if (!x && !(many && many.length)) return null;
  return html`<div class="dl-row"><dt>${label}</dt><dd>
    ${x && html`<${RefName} family=${family} id=${x.id} name=${x.name} /> <${Outcome} value=${x.result} />`}
    ${many && many.length > 1 && html`<div class="small">Candidates: ${many.map((m, i) => html`${i ? ', ' : ''}<${RefName} family=${family} id=${m.id} name=${m.name} />`)}</div>`}
  </dd></div>`;
}

/** Facts of `environment` as rows `host.hostname = …` (null values left out). */
function flatten(o, prefix = '', out = []) {
  if (o === null || o === undefined) return out;
  if (typeof o !== 'object' || Array.isArray(o)) { out.push([prefix, Array.isArray(o) ? o.join(', ') : String(o)]); return out; }
  for (const [k, v] of Object.entries(o)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  return out;
}

export function EventPage({ kind, id }) {
  const wl = kind === 'workload';
  useTitle(wl ? 'Workload event' : 'Authorization event');
  const r = useLoad(async () => (await api('GET', `/api/v1/${wl ? 'workload' : 'authorization'}-events/${id}`)).data, [kind, id]);
  const ev = r.data;
  // The other events of the same request: same time, same contextId.
  const sib = useLoad(async () => {
    if (!ev || wl) return [];
    const t = new Date(ev.meta.timestamp).getTime();
    const res = await list('/api/v1/authorization-events', 'authorizationEvents', { 'start-date': new Date(t).toISOString(), 'end-date': new Date(t + 1).toISOString(), 'per-page': 100, order: 'timestamp asc' });
    return res.items.filter(x => x.meta.contextId === ev.meta.contextId && x.meta.eventId !== ev.meta.eventId);
  }, [ev]);
  if (r.error) return html`<div class="page"><h1>Event</h1><${Alert} error=${r.error} /></div>`;
  if (!ev) return r.loading ? html`<div class="page"><${Loading} what="Loading the event" /></div>` : html`<div class="page"><h1>Event not found</h1><p>It may be older than the retention period, or in another resource set. <${Link} to="events">Back to events</${Link}></p></div>`;

  if (wl) {
    return html`<div class="page"><p class="crumbs"><${Link} to="events?tab=workload">Workload events</${Link}> ›</p>
      <h1>${ev.meta.action} <${Outcome} value=${ev.outcome && ev.outcome.result} /></h1>
      <dl class="facts">
        <div class="dl-row"><dt>Time</dt><dd><${Time} value=${ev.meta.timestamp} /></dd></div>
        <div class="dl-row"><dt>Event type</dt><dd>${ev.meta.eventType}</dd></div>
        <div class="dl-row"><dt>Severity</dt><dd>${ev.meta.severity}</dd></div>
        ${ev.meta.clientWorkloadId && html`<div class="dl-row"><dt>Client workload</dt><dd><${RefName} family="client-workloads" id=${ev.meta.clientWorkloadId} /></dd></div>`}
        ${ev.meta.serverWorkloadId && html`<div class="dl-row"><dt>Server workload</dt><dd><${RefName} family="server-workloads" id=${ev.meta.serverWorkloadId} /></dd></div>`}
        ${ev.meta.policyId && html`<div class="dl-row"><dt>Access policy</dt><dd><${RefName} family="access-policies" id=${ev.meta.policyId} /></dd></div>`}
        <div class="dl-row"><dt>Protocol</dt><dd>${ev.meta.applicationProtocol || '—'}</dd></div>
        <div class="dl-row"><dt>Client</dt><dd class="mono">${ev.network && `${ev.network.clientWorkloadIP || '?'}:${ev.network.clientWorkloadPort ?? ''}`}</dd></div>
        <div class="dl-row"><dt>Server port</dt><dd>${ev.network && ev.network.serverWorkloadPort}</dd></div>
        <div class="dl-row"><dt>Request (connection ID)</dt><dd class="mono">${ev.meta.connectionId}</dd></div>
      </dl></div>`;
  }

  const reason = eventReason(ev);
  const denied = ev.outcome && (ev.outcome.result === 'Unauthorized' || ev.outcome.result === 'Error');
  const net = (ev.clientRequest && ev.clientRequest.network) || {};
  const tp = ev.trustProviders && ev.trustProviders.find(t => t.result === 'Attested') || (ev.trustProviders || [])[0];
  // The edge client ID the workload used is among the facts (environment.svc.clientId).
  const cid = ev.environment && ev.environment.svc && ev.environment.svc.clientId;
  const explain = `why-denied?${new URLSearchParams({ event: ev.meta.eventId, ...(net.targetHost ? { host: net.targetHost } : {}), ...(net.targetPort ? { port: net.targetPort } : {}), ...(cid ? { client: cid } : tp ? { tp: tp.id } : {}) })}`;
  const env = flatten(ev.environment);
  return html`<div class="page">
    <p class="crumbs"><${Link} to="events">Authorization events</${Link}> ›</p>
    <div class="page-head"><h1>${ev.meta.eventType}</h1><${Outcome} value=${ev.outcome && ev.outcome.result} /></div>
    ${reason && html`<div class=${denied ? 'verdict bad' : 'verdict'}><strong>${reason}</strong>${reasonText(reason) ? html` — ${reasonText(reason)}` : ''}${eventDetail(ev) ? html`<div class="small">Failed check: <span class="mono">${eventDetail(ev)}</span></div>` : ''}</div>`}
    ${denied && ev.meta.eventType !== 'access.authentication' && html`<p><${Link} to=${explain} class="button">Why denied? Explain against today's configuration</${Link}></p>`}
    ${denied && ev.meta.eventType === 'access.authentication' && html`<p><${Link} to=${explain} class="button secondary">Check this workload's evidence in “Why denied?”</${Link}></p>`}
    <section><h2>Decision</h2><dl class="facts">
      <div class="dl-row"><dt>Time</dt><dd><${Time} value=${ev.meta.timestamp} /></dd></div>
      <div class="dl-row"><dt>Severity</dt><dd>${ev.meta.severity}</dd></div>
      <div class="dl-row"><dt>Client IP</dt><dd class="mono">${ev.meta.clientIP || '—'}</dd></div>
      ${net.targetHost && html`<div class="dl-row"><dt>Requested server</dt><dd class="mono">${net.transportProtocol || 'TCP'} ${net.targetHost}:${net.targetPort}</dd></div>`}
      <${Entity} label="Client workload" family="client-workloads" x=${ev.clientWorkload} many=${ev.clientWorkloads} />
      <${Entity} label="Server workload" family="server-workloads" x=${ev.serverWorkload} many=${ev.serverWorkloads} />
      <${Entity} label="Access policy" family="access-policies" x=${ev.accessPolicy} many=${ev.accessPolicies} />
      ${ev.credentialProvider && html`<div class="dl-row"><dt>Credential provider</dt><dd><${RefName} family="credential-providers" id=${ev.credentialProvider.id} name=${ev.credentialProvider.name} /> (${ev.credentialProvider.type}) <${Outcome} value=${ev.credentialProvider.result} />${ev.credentialProvider.reason ? html`<div class="small">${ev.credentialProvider.reason}</div>` : ''}</dd></div>`}
      <div class="dl-row"><dt>Request (context ID)</dt><dd class="mono">${ev.meta.contextId}</dd></div>
    </dl></section>
    <${Attestations} title="Trust providers" items=${ev.trustProviders} family="trust-providers" />
    <${Attestations} title="Access conditions" items=${ev.accessConditions} family="access-conditions" />
    <${Attestations} title="Content security" items=${ev.contentSecurity} family="content-security" />
    ${env.length > 0 && html`<section><h2>Facts the workload presented</h2><table class="kv"><tbody>${env.map(([k, v]) => html`<tr><th scope="row" class="mono">${k}</th><td class="mono">${v}</td></tr>`)}</tbody></table></section>`}
    ${sib.data && sib.data.length > 0 && html`<section><h2>Other events of this request</h2><ul class="plain">${sib.data.map(x => html`<li><${Link} to=${`events/authorization/${x.meta.eventId}`}>${x.meta.eventType}</${Link}> <${Outcome} value=${x.outcome && x.outcome.result} /> ${eventReason(x) || ''}</li>`)}</ul></section>`}
  </div>`;
}

// ---- audit log --------------------------------------------------------------------------------

/** The family whose entities an audit category names (for links to the target). */
const CATEGORY_FAMILY = {
  Authentication: 'users', AccessConditions: 'access-conditions', AccessPolicies: 'access-policies', AgentControllers: 'agent-controllers', ClientWorkloads: 'client-workloads',
  ContentSecurity: 'content-security', CredentialProviders: 'credential-providers', CredentialProviderIntegrations: 'credential-integrations',
  DiscoveryIntegrations: 'discovery-integrations', IdentityProviders: 'sso-idps', Integrations: 'integrations', LogStreams: 'log-streams',
  ResourceSets: 'resource-sets', Roles: 'roles', Routings: 'routings', ServerWorkloads: 'server-workloads', TrustProviders: 'trust-providers', Users: 'users',
};
const CATEGORIES = ['', ...Object.keys(CATEGORY_FAMILY), 'ComplianceSettings', 'SignOnPolicy'].sort();
const isUuid = s => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s || '');

function Target({ a }) {
  const fam = CATEGORY_FAMILY[a.category];
  if (fam && isUuid(a.target) && a.activity !== 'Deleted') return html`<${RefName} family=${fam} id=${a.target} />`;
  return html`<span class="mono">${a.target || '—'}</span>`;
}

export function AuditPage() {
  const { query } = useRoute();
  const session = useSession();
  useTitle('Audit log');
  const win = query.get('window') || '30d';
  const page = Number(query.get('page') || 1);
  const perPage = Number(query.get('per-page') || 25);
  const search = query.get('search') || '';
  const category = query.get('category') || '';
  const severity = query.get('severity') || '';
  const start = query.get('start') || '';
  const end = query.get('end') || '';
  const [text, setText] = useState(search);
  const all = { window: win !== '30d' ? win : '', page: page > 1 ? page : '', 'per-page': perPage !== 25 ? perPage : '', search, category, severity, start, end };
  const q = o => setQuery({ ...all, ...o });
  useEffect(() => {
    if (text === search) return;
    const t = setTimeout(() => q({ search: text, page: '' }), 300);
    return () => clearTimeout(t);
  }, [text]);
  const r = useLoad(() => list('/api/v1/audit-logs', 'auditLogs', { page, 'per-page': perPage, search, category, severity, ...windowParams(AUDIT_WINDOWS, win, start, end) }), [win, page, perPage, search, category, severity, start, end, session.rs]);
  const open = (e, to) => { if (e.target.closest('a,button')) return; navigate(href(to)); };
  return html`<div class="page">
    <h1>Audit log</h1>
    <p class="muted small">Every change made through the management API, and every sign-in, in resource set <strong>${session.rsName}</strong> (global entities and sign-ins are in the default set).</p>
    <form class="toolbar wrap" role="search" onSubmit=${e => { e.preventDefault(); q({ search: text, page: '' }); }}>
      <div class="field"><label for="au-search">Search</label><input id="au-search" type="search" value=${text} onInput=${e => setText(e.currentTarget.value)} placeholder="activity, target, category or actor" /></div>
      <div class="field"><label for="au-window">Time</label><select id="au-window" value=${win} onChange=${e => q({ window: e.currentTarget.value, page: '' })}>${AUDIT_WINDOWS.map(([k, l]) => html`<option value=${k}>${l}</option>`)}</select></div>
      ${win === 'custom' && html`<div class="field"><label for="au-start">From</label><input id="au-start" type="datetime-local" value=${start} onChange=${e => q({ start: e.currentTarget.value, page: '' })} /></div>
        <div class="field"><label for="au-end">Until</label><input id="au-end" type="datetime-local" value=${end} onChange=${e => q({ end: e.currentTarget.value, page: '' })} /></div>`}
      <div class="field"><label for="au-cat">Category</label><select id="au-cat" value=${category} onChange=${e => q({ category: e.currentTarget.value, page: '' })}>${CATEGORIES.map(c => html`<option value=${c}>${c || 'All'}</option>`)}</select></div>
      <div class="field"><label for="au-sev">Severity</label><select id="au-sev" value=${severity} onChange=${e => q({ severity: e.currentTarget.value, page: '' })}><option value="">All</option><option value="Info">Info</option><option value="Warning">Warning</option></select></div>
    </form>
    ${r.error ? html`<${Alert} error=${r.error} />`
      : !r.data ? html`<${Loading} what="Loading the audit log" />`
      : r.data.items.length === 0 ? html`<${Empty}><p>No audit entries ${search || category || severity ? 'match these filters' : 'in this time window'}.</p><p class="muted">Widen the time window or pick another resource set.</p></${Empty}>`
      : html`<div class="table-wrap"><table>
        <caption class="sr-only">Audit log, newest first</caption>
        <thead><tr><th scope="col">Time</th><th scope="col">Activity</th><th scope="col">Category</th><th scope="col">Target</th><th scope="col">Actor</th><th scope="col">Result</th><th scope="col">Client IP</th></tr></thead>
        <tbody>${r.data.items.map(a => {
          const to = `audit-log/${a.externalId}`;
          return html`<tr class="clickable" onClick=${e => open(e, to)}>
            <td><${Time} value=${a.createdAt} /></td>
            <td><${Link} to=${to}>${a.activity}</${Link}></td>
            <td>${a.category}</td>
            <td><${Target} a=${a} /></td>
            <td>${(a.actor && (a.actor.email || a.actor.displayName || a.actor.type)) || '—'}</td>
            <td><${Outcome} value=${a.outcome && a.outcome.result} />${a.outcome && a.outcome.reason ? html`<div class="small">${a.outcome.reason}</div>` : ''}</td>
            <td class="mono">${(a.client && a.client.ipAddress) || '—'}</td>
          </tr>`;
        })}</tbody></table></div>
        <${Pager} page=${page} perPage=${perPage} total=${r.data.total} onPage=${p => q({ page: p })} onPerPage=${n => q({ 'per-page': n, page: '' })} />`}
  </div>`;
}

export function AuditEntryPage({ id }) {
  useTitle('Audit entry');
  const r = useLoad(async () => (await api('GET', `/api/v1/audit-logs/${id}`)).data, [id]);
  const a = r.data;
  if (r.error) return html`<div class="page"><h1>Audit entry</h1><${Alert} error=${r.error} /></div>`;
  if (!a) return r.loading ? html`<div class="page"><${Loading} what="Loading the audit entry" /></div>` : html`<div class="page"><h1>Audit entry not found</h1><p><${Link} to="audit-log">Back to the audit log</${Link}></p></div>`;
  const rows = [['Time', html`<${Time} value=${a.createdAt} />`], ['Category', a.category], ['Activity', a.activity], ['Target', html`<${Target} a=${a} />`],
    ['Result', html`<${Outcome} value=${a.outcome && a.outcome.result} /> ${(a.outcome && a.outcome.reason) || ''}`], ['Severity', a.severity],
    ['Actor', [a.actor.type, a.actor.displayName, a.actor.email].filter(Boolean).join(' · ')],
    ['Client', [a.client.ipAddress, a.client.userAgent && (a.client.userAgent.browser || a.client.userAgent.raw)].filter(Boolean).join(' · ')], ['Entry ID', a.externalId]];
  return html`<div class="page"><p class="crumbs"><${Link} to="audit-log">Audit log</${Link}> ›</p>
    <h1>${a.activity} · ${a.category}</h1>
    <dl class="facts">${rows.map(([k, v]) => html`<div class="dl-row"><dt>${k}</dt><dd>${v || '—'}</dd></div>`)}</dl></div>`;
}
