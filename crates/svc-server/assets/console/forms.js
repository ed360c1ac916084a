// The form engine: renders the field lists of families.js as labelled controls, turns what the
// user typed into the DTO the API takes, shows the API's validation message next to the field
// its JSON path names, and renders the same fields read-only for roles that may not write.

import { useState, useEffect, useRef } from './vendor/preact-hooks-11.2.0.mjs';
import { html, Link, Time, lower } from './ui.js';
import { api, list as apiList } from './api.js';
import { FAMILY, PERMISSIONS, READ_ONLY_PERMISSIONS } from './families.js';


const idOf = path => `f-${path.replace(/[^A-Za-z0-9]+/g, '-')}`;

const visible = (f, item, root) => !f.when || f.when(item || {}, root || {});
const optionsOf = (f, item, root) => (typeof f.options === 'function' ? f.options(item || {}, root || {}) : f.options);

// ---- state in, DTO out -----------------------------------------------------------------------

/** The form state of a new entity: every field's default. */
export function initial(fields) {
  const v = {};
  for (const f of fields) {
    if (f.def !== undefined) v[f.name] = f.def;
    else if (f.kind === 'bool') v[f.name] = false;
    else if (f.kind === 'list' || f.kind === 'refs' || f.kind === 'permissions') v[f.name] = [];
    else if (f.kind === 'object' || f.kind === 'jsontext') v[f.name] = initial(f.fields);
  }
  return v;
}

/** The form state of a stored entity (JSON-text fields parsed, numbers as text). */
export function fromEntity(fields, e) {
  const v = { ...e };
  for (const f of fields) {
    const x = e ? e[f.name] : undefined;
    if (f.kind === 'jsontext') {
      let o = {};
      try { o = typeof x === 'string' ? JSON.parse(x) : (x || {}); } catch { o = {}; }
      v[f.name] = fromEntity(f.fields, o);
    } else if (f.kind === 'object') v[f.name] = x ? fromEntity(f.fields, x) : initial(f.fields);
    else if (f.kind === 'list') v[f.name] = (x || []).map(i => fromEntity(f.fields, i));
    else if (f.kind === 'refs') v[f.name] = (x || []).map(i => (typeof i === 'object' && i ? i.externalId : i));
    else if (f.kind === 'ref') v[f.name] = x && typeof x === 'object' ? x.externalId : x;
    else if (f.kind === 'number') v[f.name] = x === null || x === undefined ? '' : String(x);
    else if (f.kind === 'select' && f.number) v[f.name] = x === null || x === undefined ? '' : String(x);
    else if (f.kind === 'secret') v[f.name] = null;
  }
  return v;
}

/** The DTO fields of a form state; hidden fields are null, untouched secrets null (kept). */
export function toDto(fields, state, root = state) {
  const out = {};
  for (const f of fields) {
    const x = state ? state[f.name] : undefined;
    if (!visible(f, state, root)) { out[f.name] = f.kind === 'list' || f.kind === 'refs' ? [] : null; continue; }
    switch (f.kind) {
      case 'text': case 'textarea': out[f.name] = x === undefined || x === null || String(x).trim() === '' ? null : String(x).trim(); break;
      case 'number': out[f.name] = x === '' || x === null || x === undefined ? null : Number(x); break;
      case 'bool': out[f.name] = !!x; break;
      case 'select': out[f.name] = x === '' || x === undefined ? null : (f.number ? Number(x) : x); break;
      case 'secret': out[f.name] = x ? x : null; break;
      case 'ref': out[f.name] = x || null; break;
      case 'refs': out[f.name] = (x || []).map(id => (f.objects ? { externalId: id } : id)); break;
      case 'list': out[f.name] = (x || []).map(i => toDto(f.fields, i, root)); break;
      case 'object': {
        const o = toDto(f.fields, x || {}, root);
        if (f.optional && !o[f.optional]) out[f.name] = null; else out[f.name] = o;
        break;
      }
      case 'jsontext': {
        const o = toDto(f.fields, x || {}, root);
        for (const k of Object.keys(o)) if (o[k] === null) delete o[k];
        out[f.name] = JSON.stringify(o);
        break;
      }
      case 'permissions': out[f.name] = (x || []).filter(p => p.read || p.write).map(p => ({ name: p.name, read: !!(p.read || p.write), write: !!p.write })); break;
      default: out[f.name] = x;
    }
  }
  return out;
}

function setIn(obj, path, v) {
  if (!path.length) return v;
  const [k, ...rest] = path;
  const copy = Array.isArray(obj) ? [...obj] : { ...(obj || {}) };
  copy[k] = setIn(copy[k], rest, v);
  return copy;
}

// ---- controls ---------------------------------------------------------------------------------

function Help({ id, hint, error }) {
  return html`${hint && html`<span class="hint" id=${`${id}-hint`}>${hint}</span>`}
    ${error && html`<span class="field-error" id=${`${id}-err`}>${error}</span>`}`;
}

function described(id, hint, error) {
  const ids = [];
  if (hint) ids.push(`${id}-hint`);
  if (error) ids.push(`${id}-err`);
  return ids.length ? ids.join(' ') : undefined;
}

/** The message of the API error that names `path` (exactly, or a field inside it). */
function errorAt(err, path) {
  if (!err || !err.field) return null;
  const f = err.field;
  if (f === path) return err.message.slice(f.length + 2);
  return null;
}

/**
 * A form's fields. `mode` is 'create' or 'edit'; `err` an ApiError whose field path is shown
 * next to its control.
 */
export function Fields({ fields, value, root, path = '', onChange, err, mode }) {
  root = root || value;
  return fields.filter(f => visible(f, value, root)).map(f => {
    const p = path ? `${path}.${f.name}` : f.name;
    const set = v => onChange(setIn(value, [f.name], v));
    return html`<${Control} key=${p} f=${f} value=${value ? value[f.name] : undefined} item=${value} root=${root} path=${p} set=${set} err=${err} mode=${mode} />`;
  });
}

function Control({ f, value, item, root, path, set, err, mode }) {
  const id = idOf(path);
  const error = errorAt(err, path);
  const desc = described(id, f.hint, error);
  const req = f.required && f.kind !== 'secret';
  const label = html`<span class="label-row"><label for=${id}>${f.label}</label>${f.required ? html`<span class="req" aria-hidden="true">*</span>` : ''}</span>`;
  const common = { id, 'aria-describedby': desc, 'aria-invalid': error ? 'true' : undefined };
  switch (f.kind) {
    case 'text':
      if (f.createOnly && mode === 'edit') return html`<div class="field">${label}<input ...${common} type="text" value=${value ?? ''} readOnly /><span class="hint">Set when created.</span></div>`;
      return html`<div class="field">${label}<input ...${common} type="text" required=${req} value=${value ?? ''} onInput=${e => set(e.currentTarget.value)} /><${Help} id=${id} hint=${f.hint} error=${error} /></div>`;
    case 'textarea':
      return html`<div class="field">${label}<textarea ...${common} rows=${f.rows || 4} required=${req} value=${value ?? ''} onInput=${e => set(e.currentTarget.value)}></textarea><${Help} id=${id} hint=${f.hint} error=${error} /></div>`;
    case 'number':
      return html`<div class="field">${label}<input ...${common} type="text" inputmode="numeric" pattern="-?[0-9]*" required=${req} value=${value ?? ''} onInput=${e => set(e.currentTarget.value)} /><${Help} id=${id} hint=${f.hint} error=${error} /></div>`;
    case 'bool':
      return html`<div class="field check"><input ...${common} type="checkbox" checked=${!!value} onChange=${e => set(e.currentTarget.checked)} /><label for=${id}>${f.label}</label><${Help} id=${id} hint=${f.hint} error=${error} /></div>`;
    case 'select': {
      const opts = optionsOf(f, item, root) || [];
      const v = value === null || value === undefined ? '' : String(value);
      const all = v && !opts.includes(v) ? [v, ...opts] : opts;
      return html`<div class="field">${label}<select ...${common} required=${req} value=${v} onChange=${e => set(e.currentTarget.value)}>
        ${!all.includes('') && !v ? html`<option value="">Choose…</option>` : ''}
        ${all.map(o => html`<option value=${o}>${o === '' ? '(none)' : o}</option>`)}
      </select><${Help} id=${id} hint=${f.hint} error=${error} /></div>`;
    }
    case 'secret':
      return html`<${Secret} f=${f} value=${value} set=${set} id=${id} error=${error} mode=${mode} desc=${desc} />`;
    case 'ref':
      return html`<${RefPicker} f=${f} value=${value} set=${set} id=${id} error=${error} desc=${desc} root=${root} />`;
    case 'refs':
      return html`<${RefsPicker} f=${f} value=${value || []} set=${set} id=${id} error=${error} />`;
    case 'list':
      return html`<${ListField} f=${f} value=${value || []} set=${set} path=${path} err=${err} root=${root} mode=${mode} />`;
    case 'object': case 'jsontext':
      if (f.flat) return html`<${Fields} fields=${f.fields} value=${value || {}} root=${root} path=${path} onChange=${set} err=${err} mode=${mode} />`;
      return html`<fieldset class="group"><legend>${f.label}</legend>${error && html`<span class="field-error">${error}</span>`}
        <${Fields} fields=${f.fields} value=${value || {}} root=${root} path=${path} onChange=${set} err=${err} mode=${mode} /></fieldset>`;
    case 'permissions':
      return html`<${PermissionsField} value=${value || []} set=${set} error=${error} />`;
    default:
      return null;
  }
}

/** A write-only secret: never shown; `set` / `not set`, and Replace to type a new value. */
function Secret({ f, value, set, id, error, mode, desc }) {
  const [replacing, setReplacing] = useState(mode === 'create');
  const input = useRef(null);
  useEffect(() => { if (replacing && mode !== 'create' && input.current) input.current.focus(); }, [replacing]);
  const status = f.required ? 'set' : 'write-only: not shown';
  if (!replacing) {
    return html`<div class="field"><span class="label" id=${`${id}-l`}>${f.label}</span>
      <div class="secret-row"><span class="badge ok" id=${`${id}-status`}>${status === 'set' ? 'set' : status}</span>
      <button type="button" class="secondary small" onClick=${() => setReplacing(true)} aria-describedby=${`${id}-l`}>Replace ${lower(f.label)}</button></div>
      ${error && html`<span class="field-error">${error}</span>`}</div>`;
  }
  const Tag = f.textarea ? 'textarea' : 'input';
  return html`<div class="field"><span class="label-row"><label for=${id}>${mode === 'create' ? f.label : `New ${lower(f.label)}`}</label>${f.required && mode === 'create' ? html`<span class="req" aria-hidden="true">*</span>` : ''}</span>
    ${f.textarea
      ? html`<textarea ref=${input} id=${id} rows="4" class="secret" aria-describedby=${desc} spellcheck="false" autocomplete="off" value=${value ?? ''} onInput=${e => set(e.currentTarget.value)}></textarea>`
      : html`<input ref=${input} id=${id} type="password" autocomplete="new-password" aria-describedby=${desc} required=${f.required && mode === 'create'} value=${value ?? ''} onInput=${e => set(e.currentTarget.value)} />`}
    ${mode !== 'create' && html`<button type="button" class="secondary small" onClick=${() => { set(null); setReplacing(false); }}>Keep the current value</button>`}
    <${Help} id=${id} hint=${f.hint || 'Write-only: it is stored encrypted and never shown again.'} error=${error} /></div>`;
}

// ---- references --------------------------------------------------------------------------------

const nameCache = new Map();
/** Options of a reference picker: the first 200 entries by name, narrowed by `search`. */
async function refOptions(fam, search, extraFilter) {
  const f = FAMILY[fam];
  const q = { page: 1, 'per-page': 200, order: f.defaultOrder && f.key !== 'access-policies' ? f.defaultOrder : `${f.nameField || 'name'} asc` };
  const filter = [extraFilter, search].filter(Boolean);
  if (filter.length) q.filter = filter[filter.length - 1];
  const r = await apiList(f.path, f.itemsKey, q);
  let items = r.items;
  if (search && extraFilter) items = items.filter(e => f.display(e).toLowerCase().includes(search.toLowerCase()));
  for (const e of items) nameCache.set(e.externalId, f.display(e));
  return { items, total: r.total };
}

/** The name of a referenced entity (loaded once). */
export function RefName({ family, id, name }) {
  const [n, setN] = useState(name || nameCache.get(id));
  useEffect(() => {
    if (n || !id) return;
    const f = FAMILY[family];
    api('GET', f.itemPath(id)).then(r => {
      if (r.data && typeof r.data === 'object') { const x = f.display(r.data); nameCache.set(id, x); setN(x); }
    }, () => setN(null));
  }, [id]);
  if (!id) return html`<span class="muted">—</span>`;
  return html`<${Link} to=${`${family}/${id}`}>${n || id}</${Link}>`;
}

function RefPicker({ f, value, set, id, error, desc, root }) {
  const [search, setSearch] = useState('');
  const [opts, setOpts] = useState(null);
  const [loadErr, setLoadErr] = useState(null);
  useEffect(() => {
    let live = true;
    const t = setTimeout(() => refOptions(f.ref.family, search, f.ref.filter).then(r => { if (live) setOpts(r); }, e => live && setLoadErr(e)), search ? 250 : 0);
    return () => { live = false; clearTimeout(t); };
  }, [search, f.ref.family]);
  const fam = FAMILY[f.ref.family];
  const items = opts ? opts.items : [];
  const known = !value || items.some(e => e.externalId === value);
  return html`<div class="field"><span class="label-row"><label for=${id}>${f.label}</label>${f.required ? html`<span class="req" aria-hidden="true">*</span>` : ''}</span>
    ${opts && opts.total > items.length && html`<input type="search" class="ref-search" aria-label=${`Search ${lower(fam.title)}`} placeholder=${`Search ${lower(fam.title)}…`} value=${search} onInput=${e => setSearch(e.currentTarget.value)} />`}
    <select id=${id} aria-describedby=${desc} aria-invalid=${error ? 'true' : undefined} required=${f.required} value=${value || ''} onChange=${e => set(e.currentTarget.value || null)}>
      <option value="">${opts ? (items.length ? `Choose a ${fam.singular}…` : `No ${lower(fam.title)} yet`) : 'Loading…'}</option>
      ${!known && html`<option value=${value}>${nameCache.get(value) || value}</option>`}
      ${items.map(e => html`<option value=${e.externalId}>${fam.display(e)}${e.isActive === false ? ' (inactive)' : ''}</option>`)}
    </select>
    ${loadErr && html`<span class="field-error">${fam.title}: ${loadErr.message}</span>`}
    <${Help} id=${id} hint=${f.hint} error=${error} /></div>`;
}

function RefsPicker({ f, value, set, id, error }) {
  const [opts, setOpts] = useState(null);
  const [search, setSearch] = useState('');
  const fam = FAMILY[f.ref.family];
  useEffect(() => {
    let live = true;
    const t = setTimeout(() => refOptions(f.ref.family, search, f.ref.filter).then(r => live && setOpts(r), () => live && setOpts({ items: [], total: 0 })), search ? 250 : 0);
    return () => { live = false; clearTimeout(t); };
  }, [search]);
  const items = opts ? opts.items : [];
  const left = items.filter(e => !value.includes(e.externalId));
  return html`<fieldset class="group refs" aria-describedby=${f.hint ? `${id}-hint` : undefined}><legend>${f.label}</legend>
    ${value.length === 0 ? html`<p class="muted">None.</p>` : html`<ul class="chips">${value.map(v => html`<li>
      <${RefName} family=${f.ref.family} id=${v} />
      <button type="button" class="icon" aria-label=${`Remove ${nameCache.get(v) || v} from ${f.label.toLowerCase()}`} onClick=${() => set(value.filter(x => x !== v))}>×</button></li>`)}</ul>`}
    ${opts && opts.total > items.length && html`<input type="search" class="ref-search" aria-label=${`Search ${lower(fam.title)}`} placeholder=${`Search ${lower(fam.title)}…`} value=${search} onInput=${e => setSearch(e.currentTarget.value)} />`}
    <label for=${id} class="sub">Add ${fam.singular}</label>
    <select id=${id} value="" onChange=${e => { const v = e.currentTarget.value; if (v) set([...value, v]); e.currentTarget.value = ''; }}>
      <option value="">${opts ? (left.length ? `Add a ${fam.singular}…` : items.length ? `No more ${lower(fam.title)}` : `No ${lower(fam.title)} yet`) : 'Loading…'}</option>
      ${left.map(e => html`<option value=${e.externalId}>${fam.display(e)}${e.isActive === false ? ' (inactive)' : ''}</option>`)}
    </select>
    <${Help} id=${id} hint=${f.hint} error=${error} /></fieldset>`;
}

// ---- lists and permissions ---------------------------------------------------------------------

function ListField({ f, value, set, path, err, root, mode }) {
  const error = errorAt(err, path);
  const add = () => set([...value, initial(f.fields)]);
  return html`<fieldset class="group list"><legend>${f.label}</legend>
    ${f.hint && html`<p class="hint">${f.hint}</p>`}
    ${error && html`<span class="field-error">${error}</span>`}
    ${value.length === 0 && html`<p class="muted">No ${f.item}s.</p>`}
    ${value.map((item, i) => html`<div class="list-item" key=${i}>
      <div class="list-fields"><${Fields} fields=${f.fields} value=${item} root=${root} path=${`${path}[${i}]`} onChange=${v => set(value.map((x, j) => (j === i ? v : x)))} err=${err} mode=${mode} /></div>
      <button type="button" class="secondary small" aria-label=${`Remove ${f.item} ${i + 1}`} onClick=${() => set(value.filter((_, j) => j !== i))}>Remove</button>
    </div>`)}
    <button type="button" class="secondary small" onClick=${add}>Add ${f.item}</button>
  </fieldset>`;
}

function PermissionsField({ value, set, error }) {
  const get = n => value.find(p => p.name === n) || { name: n, read: false, write: false };
  const put = (n, k, v) => {
    const cur = get(n);
    const next = { ...cur, [k]: v };
    if (k === 'write' && v) next.read = true;
    if (k === 'read' && !v) next.write = false;
    set([...value.filter(p => p.name !== n), next]);
  };
  return html`<fieldset class="group"><legend>Permissions</legend>
    ${error && html`<span class="field-error">${error}</span>`}
    <table class="perms"><thead><tr><th scope="col">Permission</th><th scope="col">Read</th><th scope="col">Write</th></tr></thead>
    <tbody>${PERMISSIONS.map(n => {
      const p = get(n);
      const ro = READ_ONLY_PERMISSIONS.includes(n);
      return html`<tr><th scope="row">${n}</th>
        <td><input type="checkbox" aria-label=${`${n}: read`} checked=${!!(p.read || p.write)} onChange=${e => put(n, 'read', e.currentTarget.checked)} /></td>
        <td>${ro ? html`<span class="muted">read-only</span>` : html`<input type="checkbox" aria-label=${`${n}: write`} checked=${!!p.write} onChange=${e => put(n, 'write', e.currentTarget.checked)} />`}</td></tr>`;
    })}</tbody></table></fieldset>`;
}

// ---- read-only rendering -----------------------------------------------------------------------

/** The fields as a description list (roles that may not write see this instead of the form). */
export function FieldsView({ fields, value, root }) {
  root = root || value;
  const rows = fields.filter(f => visible(f, value, root)).map(f => {
    const x = value ? value[f.name] : undefined;
    return html`<div class="dl-row" key=${f.name}><dt>${f.label}</dt><dd>${view(f, x, root)}</dd></div>`;
  });
  return html`<dl class="view">${rows}</dl>`;
}

function view(f, x, root) {
  const none = html`<span class="muted">—</span>`;
  switch (f.kind) {
    case 'bool': return x ? 'Yes' : 'No';
    case 'secret': return html`<span class="badge">${f.required ? 'set' : 'write-only: not shown'}</span>`;
    case 'ref': return x ? html`<${RefName} family=${f.ref.family} id=${x} />` : none;
    case 'refs': return x && x.length ? html`<ul class="plain">${x.map(v => html`<li><${RefName} family=${f.ref.family} id=${v} /></li>`)}</ul>` : none;
    case 'list': return x && x.length ? html`<ul class="plain">${x.map(i => html`<li><${FieldsView} fields=${f.fields} value=${i} root=${root} /></li>`)}</ul>` : none;
    case 'object': case 'jsontext': return x ? html`<${FieldsView} fields=${f.fields} value=${x} root=${root} />` : none;
    case 'permissions': return x && x.length ? html`<ul class="plain">${x.filter(p => p.read || p.write).map(p => html`<li>${p.name}: ${p.write ? 'read and write' : 'read'}</li>`)}</ul>` : none;
    case 'textarea': return x ? html`<pre class="wrap">${x}</pre>` : none;
    default: return x === null || x === undefined || x === '' ? none : String(x);
  }
}

export { Time };
