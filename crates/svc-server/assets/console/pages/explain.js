// "Why denied?": POST /api/v1/access-policies/evaluate (docs/API-CONVENTIONS.md "Explain") from a
// form, or from a stored denied event (its host, port and trust provider filled in; the evidence,
// which events never keep, pasted by the operator). Shows the status /edge/v1/credentials would
// answer, its reason, and each step with its candidates and the failing comparison.

import { useState, useEffect, useRef } from '../vendor/preact-hooks-11.2.0.mjs';
import { html, Link, useRoute, useSession, Alert, Loading, Outcome, useTitle, Time } from '../ui.js';
import { api, list } from '../api.js';
import { RefName } from '../forms.js';
import { reasonText, eventReason } from './events.js';

const TYPES = ['ApiKey', 'UsernamePassword', 'OAuthToken', 'CloudAStsFederation', 'CloudCWorkloadIdentityFederation', 'X509Svid'];
const STEP_LABELS = {
  rateLimit: 'Rate limit', edgeToken: 'Edge token (the evidence, verified as /edge/v1/auth would)', requestBody: 'Request body', resourceSet: 'Resource set',
  clientWorkloads: 'Client workload', serverWorkloads: 'Server workload', accessPolicy: 'Access policy', attestation: 'Attestation by the policy\'s trust providers',
  trustProvider: 'Trust provider', accessConditions: 'Access conditions', credentialProvider: 'Credential provider', credentialType: 'Credential type', fetch: 'Fetch the credential',
};
/** What to do when a step fails with this reason. */
const FIX = {
  NoClientWorkload: 'Check the client workload\'s identities against the facts below, or create a client workload for this workload.',
  NoServerWorkload: 'Check host, port and protocol of the server workloads, or create one for this target.',
  NoAccessPolicy: 'Create an access policy for this client and server workload, or activate the existing one.',
  AttestationFailed: 'Compare the expected and actual values of the failing trust provider; fix its match rules or the workload.',
  ConditionFailed: 'See which access condition failed and why.',
  CredentialTypeMismatch: 'Request the credential type the provider issues, or map another provider.',
  MatchRuleFailed: 'The trust provider\'s match rule expects another value than the evidence carries.',
};

const FAMILY_OF = { clientWorkloads: 'client-workloads', serverWorkloads: 'server-workloads', accessPolicy: 'access-policies', credentialProvider: 'credential-providers', trustProvider: 'trust-providers', attestation: 'trust-providers' };

function Detail({ s }) {
  const d = s.detail || {};
  const fam = FAMILY_OF[s.name];
  const parts = [];
  if (d.message) parts.push(html`<p>${d.message}</p>`);
  if (d.authStatus) parts.push(html`<p>/edge/v1/auth would answer <strong>${d.authStatus}</strong>${d.clientId ? html` for client ID <span class="mono">${d.clientId}</span>` : ''}.</p>`);
  if (d.candidates) parts.push(html`<p>Candidates: ${d.candidates.length ? d.candidates.map((c, i) => html`${i ? ', ' : ''}<${RefName} family=${fam} id=${c.id} name=${c.name} />`) : html`<em>none matched</em>`}${d.chosen ? html`; chosen: <${RefName} family=${fam} id=${d.chosen.id} name=${d.chosen.name} />` : ''}</p>`);
  if (s.name === 'trustProvider' || d.attribute || d.actualValue !== undefined) {
    if (d.id && s.name === 'trustProvider') parts.push(html`<p><${RefName} family="trust-providers" id=${d.id} name=${d.name} />${d.provider ? ` (${d.provider})` : ''}</p>`);
    if (d.attribute || d.expectedValues || d.actualValue) parts.push(html`<table class="compare"><tbody>
      ${d.attribute && html`<tr><th scope="row">Attribute</th><td class="mono">${d.attribute}</td></tr>`}
      <tr><th scope="row">Expected</th><td class="mono">${d.expectedValues && d.expectedValues.length ? d.expectedValues.join(' or ') : '—'}</td></tr>
      <tr><th scope="row">Actual</th><td class="mono">${d.actualValue ?? '—'}</td></tr></tbody></table>`);
  }
  if (d.trustProvider) parts.push(html`<p>Trust provider: <${RefName} family="trust-providers" id=${d.trustProvider.id || d.trustProvider} name=${d.trustProvider.name} /></p>`);
  if (d.conditions && d.conditions.length) parts.push(html`<ul class="plain">${d.conditions.map(c => html`<li><${RefName} family="access-conditions" id=${c.id} name=${c.name} /> <${Outcome} value=${c.result} />${c.attribute ? html` <span class="small">${c.attribute}: expected ${(c.expectedValues || []).join(' or ') || '—'}, actual ${c.actualValue ?? '—'}</span>` : ''}</li>`)}</ul>`);
  if (d.mappings) parts.push(html`<ul class="plain">${d.mappings.map(m => html`<li><${RefName} family="credential-providers" id=${m.id} name=${m.name} /> ${m.type ? `(${m.type})` : ''} ${m.isActive === false ? html`<span class="badge">inactive</span>` : ''} ${m.mappingType && m.mappingType !== 'None' ? `selector ${m.mappingType}` : ''}</li>`)}</ul>`);
  if (d.requested) parts.push(html`<p>Requested <strong>${d.requested}</strong>${d.provided ? html`; the provider issues <strong>${d.provided}</strong>` : ''}${d.unresolvable ? html`; cannot resolve <span class="mono">${d.unresolvable}</span>` : ''}.</p>`);
  if (d.host) parts.push(html`<p class="mono">${d.host}:${d.port} · ${d.credentialType}</p>`);
  return parts.length ? html`<div class="step-detail">${parts}</div>` : null;
}

export function ExplainPage() {
  const { query } = useRoute();
  const session = useSession();
  useTitle('Why denied?');
  const [clientId, setClientId] = useState(query.get('client') || '');
  const [evidence, setEvidence] = useState('');
  const [host, setHost] = useState(query.get('host') || '');
  const [port, setPort] = useState(query.get('port') || '');
  const [ctype, setCtype] = useState(query.get('type') || 'ApiKey');
  const [meta, setMeta] = useState({});
  const [csr, setCsr] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [answer, setAnswer] = useState(null);
  const [tps, setTps] = useState([]);
  const [event, setEvent] = useState(null);
  const answerRef = useRef(null);

  useEffect(() => {
    list('/api/v1/trust-providers', 'trustProviders', { 'per-page': 200, order: 'name asc' }).then(r => {
      setTps(r.items);
      const tp = query.get('tp');
      const hit = tp && r.items.find(t => t.externalId === tp);
      if (hit) setClientId(hit.edgeSdkClientId);
    }, () => setTps([]));
    const ev = query.get('event');
    if (ev) api('GET', `/api/v1/authorization-events/${ev}`).then(r => setEvent(r.data), () => {});
  }, [session.rs]);

  const explain = async e => {
    e.preventDefault();
    setError(null); setAnswer(null);
    let client;
    try { client = evidence.trim() ? JSON.parse(evidence) : {}; } catch (x) {
      setError(new Error(`Evidence: not valid JSON (${x.message}). Paste the "client" object a workload sends, e.g. {"oidc": {"identityToken": "eyJ…"}}.`));
      return;
    }
    const body = { clientId: clientId.trim(), client, server: { transportProtocol: 'TCP', host: host.trim(), port: Number(port) }, credentialType: ctype };
    const cm = Object.fromEntries(Object.entries(meta).filter(([, v]) => v && v.trim()));
    if (Object.keys(cm).length) body.connectionMetadata = cm;
    if (ctype === 'X509Svid' && csr.trim()) body.certSigningRequest = csr.trim();
    setBusy(true);
    try {
      const r = await api('POST', '/api/v1/access-policies/evaluate', { body });
      setAnswer(r.data);
      setTimeout(() => answerRef.current && answerRef.current.focus(), 0);
    } catch (x) { setError(x); } finally { setBusy(false); }
  };

  const recorded = event && eventReason(event);
  return html`<div class="page">
    <h1>Why denied?</h1>
    <p class="lead">What <span class="mono">/edge/v1/credentials</span> would answer a workload that authenticated with this client ID and evidence, step by step, against today's configuration in resource set <strong>${session.rsName}</strong>. Nothing is issued or written.</p>
    ${event && html`<div class="notice" role="status">Explaining the ${event.meta.eventType} event of <${Time} value=${event.meta.timestamp} />, recorded as <${Outcome} value=${event.outcome.result} /> ${recorded ? html`<strong>${recorded}</strong>` : ''}. Events never keep evidence: paste what the workload sends.</div>`}
    <form class="entity-form explain" onSubmit=${explain} novalidate>
      <div class="grid2">
        <div class="field"><label for="x-tp">Trust provider</label>
          <select id="x-tp" aria-describedby="x-tp-hint" value=${(tps.find(t => t.edgeSdkClientId === clientId) || {}).externalId || ''} onChange=${e => { const t = tps.find(x => x.externalId === e.currentTarget.value); if (t) setClientId(t.edgeSdkClientId); }}>
            <option value="">Choose to fill in its client ID…</option>
            ${tps.map(t => html`<option value=${t.externalId}>${t.name} (${t.provider})</option>`)}
          </select><span class="hint" id="x-tp-hint">Or type the client ID below.</span></div>
        <div class="field"><label for="x-client">Client ID</label>
          <input id="x-client" type="text" class="mono" required value=${clientId} onInput=${e => setClientId(e.currentTarget.value)} placeholder="svc:<stack>:<tenant>:identity:<type>:<uuid>" /></div>
      </div>
      <div class="field"><label for="x-evidence">Evidence</label>
        <textarea id="x-evidence" class="mono" rows="5" spellcheck="false" aria-describedby="x-evidence-hint" value=${evidence} onInput=${e => setEvidence(e.currentTarget.value)} placeholder='{"oidc": {"identityToken": "eyJ…"}, "host": {"hostname": "build-7"}}'></textarea>
        <span class="hint" id="x-evidence-hint">The JSON of the <span class="mono">client</span> object of /edge/v1/credentials. It is sent to the service to be verified and is not stored.</span></div>
      <div class="grid3">
        <div class="field"><label for="x-host">Host</label><input id="x-host" type="text" required value=${host} onInput=${e => setHost(e.currentTarget.value)} placeholder="api.example.com" /></div>
        <div class="field"><label for="x-port">Port</label><input id="x-port" type="text" inputmode="numeric" required value=${port} onInput=${e => setPort(e.currentTarget.value)} placeholder="443" /></div>
        <div class="field"><label for="x-type">Credential type</label>
          <select id="x-type" value=${ctype} onChange=${e => setCtype(e.currentTarget.value)}>${TYPES.map(t => html`<option value=${t}>${t}</option>`)}</select></div>
      </div>
      <details><summary>Connection metadata (policies with several credential providers)</summary>
        <div class="grid3">${[['accessKeyId', 'Access key ID'], ['accountName', 'Account name'], ['headerName', 'Header name'], ['headerValue', 'Header value'], ['httpBodyFieldPath', 'Body field path'], ['httpBodyFieldValue', 'Body field value']].map(([k, l]) => html`
          <div class="field"><label for=${`x-${k}`}>${l}</label><input id=${`x-${k}`} type="text" value=${meta[k] || ''} onInput=${e => setMeta({ ...meta, [k]: e.currentTarget.value })} /></div>`)}</div>
        ${ctype === 'X509Svid' && html`<div class="field"><label for="x-csr">Certificate signing request (PEM)</label><textarea id="x-csr" rows="3" class="mono" value=${csr} onInput=${e => setCsr(e.currentTarget.value)}></textarea></div>`}
      </details>
      <div class="form-actions"><button type="submit" disabled=${busy} aria-busy=${busy ? 'true' : 'false'}>Explain</button></div>
    </form>
    <${Alert} error=${error} />
    ${busy && html`<${Loading} what="Evaluating" />`}
    ${answer && html`<${Answer} a=${answer} answerRef=${answerRef} recorded=${recorded} />`}
  </div>`;
}

function Answer({ a, answerRef, recorded }) {
  const ok = a.status === 200;
  const failing = (a.steps || []).find(s => s.result === 'Failed' && s.name !== 'trustProvider') || (a.steps || []).find(s => s.result === 'Failed');
  return html`<section class="answer" aria-labelledby="answer-h">
    <h2 id="answer-h" tabindex="-1" ref=${answerRef}>Answer: ${a.status} ${ok ? '— the credential would be issued' : '— denied'}</h2>
    <div class=${ok ? 'verdict ok' : 'verdict bad'}>
      <p><span class="mono">/edge/v1/credentials</span> would answer <strong>${a.status}</strong>${a.reason ? html` with reason <strong>${a.reason}</strong>` : ''}${a.message ? html` and the message “${a.message.replace(/\.$/, '')}”` : ''}.</p>
      ${a.reason && reasonText(a.reason) && html`<p>${reasonText(a.reason)}</p>`}
      ${failing && html`<p>Failing step: <strong>${failing.step}. ${STEP_LABELS[failing.name] || failing.name}</strong>${failing.reason && failing.reason !== a.reason ? ` (${failing.reason})` : ''}.${FIX[failing.reason] ? ` ${FIX[failing.reason]}` : ''}</p>`}
      ${recorded !== undefined && recorded !== null && html`<p class="small">The stored event recorded <strong>${recorded}</strong>${recorded === a.reason ? ': today\'s configuration still denies it for the same reason.' : a.reason ? `; today the reason is ${a.reason}: the configuration changed since.` : '; today it would be allowed: the configuration changed since.'}</p>`}
    </div>
    <h3>Steps</h3>
    <ol class="steps">${(a.steps || []).map(s => html`<li class=${`step ${s.result.toLowerCase()} ${s.name === 'trustProvider' ? 'sub' : ''}`}>
      <div class="step-head"><span class="step-no">${s.step}</span><span class="step-name">${STEP_LABELS[s.name] || s.name}</span> <span class="mono small muted">${s.name}</span> <${Outcome} value=${s.result} />${s.reason && html` <strong>${s.reason}</strong>`}</div>
      ${s.result !== 'Skipped' || (s.detail && s.detail.message && !/not reached/.test(s.detail.message)) ? html`<${Detail} s=${s} />` : ''}
    </li>`)}</ol>
  </section>`;
}
