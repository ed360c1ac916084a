// A family's pages: the list (server-side paging, filter and order), an entity's page (details,
// the edit form, delete with a confirmation dialog, the family's actions) and the create form.

import { useState, useEffect, useRef } from '../vendor/preact-hooks-11.2.0.mjs';
import { html, Link, navigate, useRoute, setQuery, useSession, useLoad, Alert, Notice, Loading, Empty, Pager, ConfirmDialog, Time, Bool, Outcome, useTitle, CopyButton, href, lower } from '../ui.js';
import { api, list } from '../api.js';
import { fieldsOf, FAMILY } from '../families.js';
import { Fields, FieldsView, initial, fromEntity, toDto, RefName } from '../forms.js';

const cap = s => s.charAt(0).toUpperCase() + s.slice(1);

/** The resource set a write of this family is checked in. */
function rsOf(f, session, e) {
  if (f.scope === 'global') return undefined;
  return (e && e.resourceSet) || session.rs;
}

export function mayWrite(f, session, e) {
  if (f.readOnlyFamily) return false;
  if (e && f.readOnly && f.readOnly(e)) return false;
  return session.can(f.perm, true, rsOf(f, session, e));
}

function cell(c, e) {
  const v = c.value(e);
  if (c.bool) return html`<${Bool} value=${v} />`;
  if (c.time) return html`<${Time} value=${v} />`;
  if (c.outcome) return v ? html`<${Outcome} value=${v === 'Success' ? 'Success' : 'Failed'} />${v !== 'Success' ? html` <span class="small">${v}</span>` : ''}` : html`<span class="muted">never</span>`;
  if (c.warn && v > 0) return html`<span class="badge bad">${v}</span>`;
  if (v === null || v === undefined || v === '') return html`<span class="muted">—</span>`;
  return String(v);
}

// ---- list ------------------------------------------------------------------------------------

export function ListPage({ family: f }) {
  const session = useSession();
  const { query } = useRoute();
  useTitle(f.title);
  const page = Number(query.get('page') || 1);
  const perPage = Number(query.get('per-page') || 25);
  const filter = query.get('filter') || '';
  const order = query.get('order') || f.defaultOrder || `${f.nameField || 'name'} asc`;
  const [text, setText] = useState(filter);
  const q = (over) => setQuery({ page, 'per-page': perPage !== 25 ? perPage : '', filter, order: order !== (f.defaultOrder || `${f.nameField || 'name'} asc`) ? order : '', ...over });

  // Typing filters after a short pause; Enter at once.
  useEffect(() => {
    if (text === filter) return;
    const t = setTimeout(() => q({ filter: text, page: 1 }), 300);
    return () => clearTimeout(t);
  }, [text]);

  const r = useLoad(() => {
    const params = { page, 'per-page': perPage, order };
    if (f.searchParam === 'query') { params.query = filter; if (f.rsFilter) params.filter = `resourceSet:${session.rs}`; }
    else {
      let fl = filter;
      // Users have no name: free text finds them by e-mail (docs/console.md).
      if (f.key === 'users' && fl && !fl.includes(':')) fl = `email:${fl}`;
      params.filter = fl;
    }
    return list(f.path, f.itemsKey, params);
  }, [f.key, page, perPage, filter, order, session.rs]);

  const canCreate = !f.readOnlyFamily && session.can(f.perm, true, f.scope === 'global' ? undefined : session.rs);
  const [field, dir] = order.split(' ');
  const sortBy = key => q({ order: `${key} ${field === key && dir !== 'desc' ? 'desc' : 'asc'}`, page: 1 });
  const Th = ({ label, sort, num }) => {
    if (!sort) return html`<th scope="col" class=${num ? 'num' : ''}>${label}</th>`;
    const cur = field === sort ? (dir === 'desc' ? 'descending' : 'ascending') : undefined;
    return html`<th scope="col" aria-sort=${cur} class=${num ? 'num' : ''}><button type="button" class="sort" onClick=${() => sortBy(sort)}>${label}<span aria-hidden="true">${cur === 'ascending' ? ' ▲' : cur === 'descending' ? ' ▼' : ''}</span></button></th>`;
  };
  const showRs = f.scope === 'body' && !f.rsFilter;
  const rsName = id => (session.resourceSets.find(s => s.externalId === id) || {}).name || id;

  return html`<div class="page">
    <div class="page-head">
      <h1>${f.title}</h1>
      ${canCreate && html`<${Link} to=${`${f.key}/new`} class="button">New ${f.singular}</${Link}>`}
    </div>
    ${query.get('deleted') && html`<${Notice}>Deleted “${query.get('deleted')}”.</${Notice}>`}
    ${f.scope !== 'global' && html`<p class="muted small">${showRs ? 'All resource sets you can read.' : html`Resource set <strong>${session.rsName}</strong>.`}</p>`}
    <form class="toolbar" role="search" onSubmit=${e => { e.preventDefault(); q({ filter: text, page: 1 }); }}>
      <label for="filter">Filter</label>
      <input id="filter" type="search" value=${text} onInput=${e => setText(e.currentTarget.value)} placeholder=${f.filterHint || 'name or description, or key:value'} aria-describedby="filter-hint" />
      <span id="filter-hint" class="hint">${f.filterHint ? `Search by ${f.filterHint}.` : 'Search by name or description, or key:value (e.g. isActive:false).'}</span>
    </form>
    ${r.error ? html`<${Alert} error=${r.error} />`
      : !r.data ? html`<${Loading} what=${`Loading ${lower(f.title)}`} />`
      : r.data.items.length === 0 ? html`<${Empty}>${filter
          ? html`<p>No ${lower(f.title)} match “${filter}”.</p><button type="button" class="secondary" onClick=${() => { setText(''); q({ filter: '', page: 1 }); }}>Clear the filter</button>`
          : html`<p>No ${lower(f.title)} yet${canCreate ? html` — add the first with <strong>New ${f.singular}</strong> above.` : '.'}</p>${f.readOnlyFamily ? html`<p class="muted">Drafts appear when a discovery integration finds services.</p>` : ''}`}</${Empty}>`
      : html`<div class="table-wrap" aria-busy=${r.loading ? 'true' : 'false'}><table>
          <caption class="sr-only">${f.title}, ${r.data.total} in all, sorted by ${field} ${dir || 'asc'}</caption>
          <thead><tr><${Th} label=${f.nameField === 'email' ? 'Name' : 'Name'} sort=${f.nameField === 'email' ? 'lastName' : 'name'} />${f.columns.map(c => html`<${Th} label=${c.label} sort=${c.sort} num=${c.num} />`)}${showRs && html`<th scope="col">Resource set</th>`}</tr></thead>
          <tbody>${r.data.items.map(e => html`<tr key=${e.externalId}>
            <td><${Link} to=${`${f.key}/${e.externalId}`}>${f.display(e)}</${Link}>${e.description ? html`<div class="muted small clip">${e.description}</div>` : ''}</td>
            ${f.columns.map(c => html`<td class=${c.num ? 'num' : ''}>${cell(c, e)}</td>`)}
            ${showRs && html`<td>${rsName(e.resourceSet)}</td>`}
          </tr>`)}</tbody>
        </table></div>
        <${Pager} page=${page} perPage=${perPage} total=${r.data.total} onPage=${p => q({ page: p })} onPerPage=${n => q({ 'per-page': n, page: 1 })} />`}
  </div>`;
}

// ---- loading and saving one entity ------------------------------------------------------------

/** GET one entity; a v2 policy also gets its credential mappings (the GET shows names only). */
async function loadEntity(f, id) {
  const { status, data } = await api('GET', f.itemPath(id));
  if (status === 204 || !data) return null;
  if (f.policy) {
    const m = await list(`${f.path}/${id}/credential-mappings`, 'entities', { 'per-page': 1000 });
    return { ...data, credentialProviders: m.items, _meta: data };
  }
  return data;
}

async function save(f, session, state, fields, original) {
  const dto = toDto(fields, state);
  if (f.discriminator) dto[f.discriminator] = state[f.discriminator];
  if (f.key === 'integrations') dto.type = state.integrationType;
  let body;
  if (original) {
    body = { ...original, ...dto };
    delete body._meta;
    if (f.policy) {
      for (const k of ['clientWorkload', 'serverWorkload']) body[k] = dto[k];
    }
  } else {
    body = dto;
    if (f.scope === 'body') body.resourceSet = session.rs;
  }
  if (original) {
    const path = f.itemUpdate ? f.itemPath(original.externalId) : f.path;
    const r = await api('PUT', path, { body });
    return { id: original.externalId, warn: r.headers.get('x-svc-compliance-warning') };
  }
  const r = await api('POST', f.path, { body });
  const loc = r.headers.get('location');
  const id = (r.data && r.data.externalId) || (loc && loc.split('/').pop());
  return { id, warn: r.headers.get('x-svc-compliance-warning') };
}

function Warn({ warn }) {
  if (!warn) return null;
  return html`<${Notice}>Saved, but it does not meet the recommended compliance setting${warn.includes(',') ? 's' : ''} ${warn}. <${Link} to="compliance-settings">Compliance settings</${Link}></${Notice}>`;
}

// ---- an entity's page --------------------------------------------------------------------------

export function EntityPage({ family: f, id }) {
  const session = useSession();
  const createdWarn = useRoute().query.get('warn');
  const r = useLoad(() => loadEntity(f, id), [f.key, id]);
  const e = r.data;
  useTitle(e ? `${f.display(e)} · ${f.title}` : f.title);
  const [state, setState] = useState(null);
  const [err, setErr] = useState(null);
  const [saved, setSaved] = useState(null);
  const [busy, setBusy] = useState(false);
  const [confirm, setConfirm] = useState(false);
  const [result, setResult] = useState(null);
  const heading = useRef(null);
  const variant = e && f.discriminator ? e[f.discriminator] : null;
  const fields = fieldsOf(f, variant);
  useEffect(() => { if (e) setState(fromEntity(fields, e)); }, [e]);

  if (r.error) return html`<div class="page"><h1>${cap(f.singular)}</h1><${Alert} error=${r.error} /><p><${Link} to=${f.key}>Back to ${lower(f.title)}</${Link}></p></div>`;
  if (r.loading && !e) return html`<div class="page"><${Loading} what=${`Loading the ${f.singular}`} /></div>`;
  if (!e) return html`<div class="page"><h1>${cap(f.singular)} not found</h1><p>It may have been deleted, or it belongs to another resource set than <strong>${session.rsName}</strong>. <${Link} to=${f.key}>Back to ${lower(f.title)}</${Link}></p></div>`;

  const write = mayWrite(f, session, e);
  const onSave = async ev => {
    ev.preventDefault();
    setBusy(true); setErr(null); setSaved(null);
    try {
      const s = await save(f, session, state, fields, f.policy ? { ...e._meta, credentialProviders: [] } : e);
      setSaved(s);
      r.reload();
    } catch (x) { setErr(x); } finally { setBusy(false); }
  };
  const onDelete = async () => {
    setBusy(true);
    try {
      await api('DELETE', f.itemPath(e.externalId));
      setConfirm(false);
      navigate(href(`${f.key}?deleted=${encodeURIComponent(f.display(e))}`));
    } catch (x) { setConfirm(false); setErr(x); } finally { setBusy(false); }
  };
  const runAction = async a => {
    setResult(null);
    try { setResult({ ok: true, data: await a.run(api, e) }); r.reload(); } catch (x) { setResult({ ok: false, error: x }); }
  };

  return html`<div class="page">
    <p class="crumbs"><${Link} to=${f.key}>${f.title}</${Link}> <span aria-hidden="true">›</span></p>
    <div class="page-head">
      <h1 ref=${heading}>${f.display(e)}</h1>
      <div class="head-badges">${e.isActive === false ? html`<span class="badge">Inactive</span>` : e.isActive === true ? html`<span class="badge ok">Active</span>` : ''}
        ${variant && html`<span class="badge">${variant}</span>`}${e.isLocked ? html`<span class="badge bad">Locked</span>` : ''}</div>
    </div>
    ${f.readOnly && f.readOnly(e) && html`<${Notice}>${f.readOnlyWhy}</${Notice}>`}
    ${saved && html`<${Notice}>Saved.</${Notice}>`}<${Warn} warn=${(saved && saved.warn) || createdWarn} />
    <${Alert} error=${err} />
    <${Details} f=${f} e=${e} session=${session} />
    ${f.policy && html`<${PolicyChain} e=${e} />`}
    ${(f.actions || []).length > 0 && html`<div class="actions-row">${f.actions.filter(a => !a.write || write).map(a => html`<button type="button" class="secondary" onClick=${() => runAction(a)}>${a.label}</button>`)}
      ${result && (result.ok
        ? html`<div class=${result.data && result.data.success === false ? 'alert' : 'notice'} role=${result.data && result.data.success === false ? 'alert' : 'status'}>${(result.data && result.data.message) || 'Done.'}</div>`
        : html`<${Alert} error=${result.error} />`)}</div>`}
    ${f.key === 'users' && write && html`<${UserActions} e=${e} reload=${r.reload} setErr=${setErr} />`}
    ${state && (write
      ? html`<form class="entity-form" onSubmit=${onSave} novalidate>
          <h2>Configuration</h2>
          <${Fields} fields=${fields} value=${state} onChange=${setState} err=${err} mode="edit" />
          <div class="form-actions">
            <button type="submit" disabled=${busy}>Save</button>
            ${!f.noDelete && html`<button type="button" class="danger" onClick=${() => setConfirm(true)}>Delete</button>`}
          </div>
        </form>`
      : html`<section><h2>Configuration</h2><${FieldsView} fields=${fields} value=${state} /></section>`)}
    ${f.secrets && f.secrets(e) && html`<${TrustSecrets} e=${e} write=${write} />`}
    ${f.policy && html`<${PolicyNotes} e=${e} write=${write} />`}
    ${f.related && html`<p><${Link} to=${f.related(e).to}>${f.related(e).label}</${Link}></p>`}
    ${f.fromDraft && session.can('Server Workloads', true, e.resourceSet) && html`<p><${Link} to=${`server-workloads/new?draft=${e.externalId}`} class="button secondary">Create a server workload from this draft</${Link}></p>`}
    <${ConfirmDialog} open=${confirm} title=${`Delete ${f.singular} “${f.display(e)}”?`} confirm="Delete" busy=${busy} onConfirm=${onDelete} onCancel=${() => setConfirm(false)}>
      <p>${f.deleteWarning || 'This cannot be undone.'}${e.accessPolicyCount ? ` ${e.accessPolicyCount} access polic${e.accessPolicyCount === 1 ? 'y uses' : 'ies use'} it: an active policy blocks the deletion.` : ''}</p>
    </${ConfirmDialog}>
  </div>`;
}

/** The read-only facts of an entity: ids, counts, times, and the family's own. */
function Details({ f, e, session }) {
  const rows = [];
  for (const d of f.detail || []) {
    const v = d.value(e);
    if (v === null || v === undefined || v === '') continue;
    rows.push(html`<div class="dl-row"><dt>${d.label}</dt><dd>${d.time ? html`<${Time} value=${v} />` : d.pre ? html`<pre class="wrap">${v}</pre>` : html`<span class=${d.copy ? 'mono' : ''}>${String(v)}</span>`}${d.copy ? html` <${CopyButton} text=${String(v)} />` : ''}</dd></div>`);
  }
  const rsName = id => (session.resourceSets.find(s => s.externalId === id) || {}).name || id;
  return html`<section aria-label="Details"><dl class="facts">
    ${rows}
    <div class="dl-row"><dt>ID</dt><dd class="mono">${e.externalId}</dd></div>
    ${e.resourceSet && html`<div class="dl-row"><dt>Resource set</dt><dd>${rsName(e.resourceSet)}</dd></div>`}
    ${e.createdAt && html`<div class="dl-row"><dt>Created</dt><dd><${Time} value=${e.createdAt} />${e.createdBy ? ` by ${e.createdBy}` : ''}</dd></div>`}
    ${e.modifiedAt && html`<div class="dl-row"><dt>Modified</dt><dd><${Time} value=${e.modifiedAt} />${e.modifiedBy ? ` by ${e.modifiedBy}` : ''}</dd></div>`}
  </dl></section>`;
}

/** A v2 policy read as a chain: who (client workload, attested by) → what (server workload), with what. */
function PolicyChain({ e }) {
  const m = e._meta || e;
  const link = (fam, x) => x ? html`<${RefName} family=${fam} id=${x.externalId} name=${x.name} />` : html`<span class="muted">—</span>`;
  const many = (fam, xs) => xs && xs.length ? xs.map((x, i) => html`${i ? ', ' : ''}${link(fam, x)}`) : html`<span class="muted">none</span>`;
  return html`<section class="chain" aria-label="Policy chain">
    <div><span class="step-label">Client workload</span>${link('client-workloads', m.clientWorkload)}</div>
    <div><span class="step-label">Attested by</span>${many('trust-providers', m.trustProviders)}</div>
    <div><span class="step-label">If</span>${many('access-conditions', m.accessConditions)}</div>
    <div><span class="step-label">Server workload</span>${link('server-workloads', m.serverWorkload)}</div>
    <div><span class="step-label">Gets</span>${many('credential-providers', m.credentialProviders)}</div>
    <div class="chain-links"><${Link} to=${`events?search=${encodeURIComponent(m.name)}`}>Events naming this policy</${Link}></div>
  </section>`;
}

function PolicyNotes({ e, write }) {
  const r = useLoad(() => list(`/api/v2/access-policies/${e.externalId}/notes`, 'entities', { 'per-page': 100 }), [e.externalId, e.modifiedAt]);
  const [note, setNote] = useState('');
  const [err, setErr] = useState(null);
  const add = async ev => {
    ev.preventDefault(); setErr(null);
    try { await api('POST', `/api/v2/access-policies/${e.externalId}/notes`, { body: { note } }); setNote(''); r.reload(); } catch (x) { setErr(x); }
  };
  return html`<section><h2>Notes</h2>
    ${r.data && (r.data.items.length ? html`<ul class="notes">${r.data.items.map(n => html`<li><p>${n.note}</p><span class="muted small"><${Time} value=${n.createdAt} /> · ${n.createdBy || 'system'}</span></li>`)}</ul>` : html`<p class="muted">No notes yet.</p>`)}
    ${write && html`<form onSubmit=${add} class="inline-form"><${Alert} error=${err} />
      <div class="field"><label for="note">New note</label><textarea id="note" rows="2" value=${note} onInput=${x => setNote(x.currentTarget.value)}></textarea></div>
      <button type="submit" class="secondary" disabled=${!note.trim()}>Add note</button></form>`}
  </section>`;
}

/** A trust provider's certificate secrets (§3.2): list, add (PEM), delete. */
function TrustSecrets({ e, write }) {
  const base = `/api/v1/trust-providers/${e.externalId}/secrets`;
  const r = useLoad(() => list(base, 'entities', { 'per-page': 100 }), [e.externalId]);
  const [pem, setPem] = useState('');
  const [err, setErr] = useState(null);
  const add = async ev => {
    ev.preventDefault(); setErr(null);
    try { await api('POST', base, { body: { secret: pem.trim(), type: 'Certificate' } }); setPem(''); r.reload(); } catch (x) { setErr(x); }
  };
  const del = async s => { setErr(null); try { await api('DELETE', `${base}/${s.externalId}`); r.reload(); } catch (x) { setErr(x); } };
  return html`<section><h2>Additional signing certificates</h2>
    <${Alert} error=${err} />
    ${r.data && (r.data.items.length ? html`<table><thead><tr><th scope="col">Subject</th><th scope="col">Thumbprint</th><th scope="col">Expires</th>${write && html`<th scope="col"><span class="sr-only">Actions</span></th>`}</tr></thead><tbody>
      ${r.data.items.map(s => html`<tr><td>${s.subject}</td><td class="mono clip">${s.name}</td><td><${Time} value=${s.expiresAt} /></td>${write && html`<td><button type="button" class="secondary small" aria-label=${`Remove certificate ${s.subject}`} onClick=${() => del(s)}>Remove</button></td>`}</tr>`)}
      </tbody></table>` : html`<p class="muted">None: only the provider's own keys are trusted.</p>`)}
    ${write && html`<form onSubmit=${add} class="inline-form"><div class="field"><label for="tp-secret">Certificate (PEM)</label><textarea id="tp-secret" rows="3" value=${pem} onInput=${x => setPem(x.currentTarget.value)}></textarea></div>
      <button type="submit" class="secondary" disabled=${!pem.trim()}>Add certificate</button></form>`}
  </section>`;
}

function UserActions({ e, reload, setErr }) {
  const [msg, setMsg] = useState(null);
  const run = async (f, m) => { setErr(null); setMsg(null); try { await f(); setMsg(m); reload(); } catch (x) { setErr(x); } };
  const unlock = () => run(() => api('POST', `/api/v1/users/${e.externalId}/unlock`), 'Unlocked.');
  const resetTotp = () => run(() => api('PUT', `/api/v1/users/${e.externalId}`, { body: { ...e, twoFactorEnabled: false, password: null } }), 'TOTP authenticators removed: the user enrols again at the next sign-in that needs one.');
  if (!e.isLocked && !e.twoFactorEnabled) return null;
  return html`<div class="actions-row">
    ${e.isLocked && html`<button type="button" class="secondary" onClick=${unlock}>Unlock</button>`}
    ${e.twoFactorEnabled && html`<button type="button" class="secondary" onClick=${resetTotp}>Reset TOTP</button>`}
    ${msg && html`<${Notice}>${msg}</${Notice}>`}
  </div>`;
}

// ---- create ---------------------------------------------------------------------------------------

export function NewPage({ family: f }) {
  const session = useSession();
  const { query } = useRoute();
  useTitle(`New ${f.singular}`);
  const variants = f.variants ? Object.entries(f.variants) : [];
  const first = query.get('type') || (variants.length === 1 ? variants[0][0] : '');
  const [state, setState] = useState(() => (f.discriminator ? { ...initial(fieldsOf(f, first)), [f.discriminator]: first } : initial(fieldsOf(f, first))));
  // The discriminator lives in the state: fields shown per variant read it (`when`, options).
  const variant = f.discriminator ? state[f.discriminator] || '' : '';
  const fields = fieldsOf(f, variant);
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);

  // A server workload from a discovery draft starts with the draft's endpoint.
  useEffect(() => {
    const d = query.get('draft');
    if (!d || f.key !== 'server-workloads') return;
    api('GET', `/api/alpha/server-workload-drafts/${d}`).then(r => {
      if (r.data) setState(s => ({ ...s, ...fromEntity(fields, { ...r.data, isActive: true }) }));
    }, setErr);
  }, []);

  const pick = v => { setState(s => ({ ...initial(fieldsOf(f, v)), name: s.name, description: s.description, isActive: s.isActive ?? true, [f.discriminator]: v })); setErr(null); };
  const may = session.can(f.perm, true, f.scope === 'global' ? undefined : session.rs);
  const onSave = async ev => {
    ev.preventDefault();
    if (f.discriminator && !variant) { setErr(new Error(`Choose a ${(f.variantLabel || 'type').toLowerCase()} first.`)); return; }
    setBusy(true); setErr(null);
    try {
      const s = await save(f, session, state, fields, null);
      navigate(href(`${f.key}/${s.id}${s.warn ? `?warn=${encodeURIComponent(s.warn)}` : ''}`));
    } catch (x) { setErr(x); } finally { setBusy(false); }
  };
  return html`<div class="page">
    <p class="crumbs"><${Link} to=${f.key}>${f.title}</${Link}> <span aria-hidden="true">›</span></p>
    <h1>New ${f.singular}</h1>
    ${!may && html`<${Notice}>Your role may not create ${lower(f.title)} in this resource set; the service will refuse it.</${Notice}>`}
    ${f.scope !== 'global' && html`<p class="muted small">In resource set <strong>${session.rsName}</strong>.</p>`}
    <${Alert} error=${err} />
    <form class="entity-form" onSubmit=${onSave} novalidate>
      ${f.discriminator && html`<div class="field"><span class="label-row"><label for="variant">${f.variantLabel || 'Type'}</label><span class="req" aria-hidden="true">*</span></span>
        <select id="variant" required value=${variant} onChange=${e => pick(e.currentTarget.value)}>
          <option value="">Choose…</option>
          ${variants.map(([k, v]) => html`<option value=${k}>${v.label || k}</option>`)}
        </select></div>`}
      ${(!f.discriminator || variant) && html`<${Fields} fields=${fields} value=${state} onChange=${setState} err=${err} mode="create" />`}
      <div class="form-actions"><button type="submit" disabled=${busy}>Save</button>
        <${Link} to=${f.key} class="button secondary">Cancel</${Link}></div>
    </form>
  </div>`;
}
