// The singletons: sign-in policies (§3.19), compliance settings (§3.22), and the signed-in user's
// own account (TOTP enrolment, §2.4).

import { useState } from '../vendor/preact-hooks-11.2.0.mjs';
import { html, useSession, useLoad, Alert, Notice, Loading, useTitle, Time } from '../ui.js';
import { api } from '../api.js';

export function SignInPolicies() {
  const session = useSession();
  useTitle('Sign-in policies');
  const r = useLoad(async () => (await api('GET', '/api/v1/signin-policies')).data, []);
  const [err, setErr] = useState(null);
  const [msg, setMsg] = useState(null);
  const write = session.can('SignOn Policy', true);
  const put = async (which, v) => {
    setErr(null); setMsg(null);
    try {
      await api('PUT', `/api/v1/signin-policies/${which}`, { body: which === 'mfa' ? { mfaRequired: v } : { ssoRequired: v } });
      setMsg('Saved.'); r.reload();
    } catch (x) { setErr(x); }
  };
  const p = r.data;
  return html`<div class="page"><h1>Sign-in policies</h1>
    <${Alert} error=${err || r.error} />${msg && html`<${Notice}>${msg}</${Notice}>`}
    ${!p ? (!r.error && html`<${Loading} />`) : html`<div class="settings">
      <div class="setting"><div><h2>Require TOTP at password sign-in</h2><p class="muted">Users without a verified authenticator have 24 hours to enrol one (Account page), then they are locked.</p></div>
        ${write ? html`<div class="field check"><input id="mfa" type="checkbox" checked=${p.mfaRequired} onChange=${e => put('mfa', e.currentTarget.checked)} /><label for="mfa">MFA required</label></div>` : html`<p>${p.mfaRequired ? 'Required' : 'Not required'}</p>`}</div>
      <div class="setting"><div><h2>Require single sign-on</h2><p class="muted">Password sign-in is then refused for everyone but SuperAdmins. Needs an active OIDC identity provider that offers sign-in.</p></div>
        ${write ? html`<div class="field check"><input id="sso" type="checkbox" checked=${p.ssoRequired} onChange=${e => put('sso', e.currentTarget.checked)} /><label for="sso">SSO required</label></div>` : html`<p>${p.ssoRequired ? 'Required' : 'Not required'}</p>`}</div>
    </div>`}
  </div>`;
}

const COMPLIANCE = {
  ap_trust_prov_governance: 'Access policies name at least one trust provider',
  ap_access_cond_governance: 'Access policies name at least one access condition',
  edge_trust_prov_governance: 'Agent controllers name a trust provider',
  edge_tls_hostname_governance: 'Agent controllers name an allowed TLS hostname',
};

export function Compliance() {
  const session = useSession();
  useTitle('Compliance settings');
  const r = useLoad(async () => (await api('GET', '/api/v1/compliance-settings')).data, []);
  const [err, setErr] = useState(null);
  const [msg, setMsg] = useState(null);
  const write = session.can('Global Policy Compliance', true);
  const put = async (name, value) => {
    setErr(null); setMsg(null);
    try { await api('PUT', '/api/v1/compliance-settings', { body: { name, value } }); setMsg(`${name} is now ${value}.`); r.reload(); } catch (x) { setErr(x); }
  };
  return html`<div class="page"><h1>Compliance settings</h1>
    <p class="muted">Required: a write that fails the check is refused. Recommended: stored, with a warning. Optional: not checked. Existing entries are checked at their next change.</p>
    <${Alert} error=${err || r.error} />${msg && html`<${Notice}>${msg}</${Notice}>`}
    ${!r.data ? (!r.error && html`<${Loading} />`) : html`<table><thead><tr><th scope="col">Rule</th><th scope="col">Setting</th></tr></thead><tbody>
      ${r.data.map(s => html`<tr><th scope="row">${COMPLIANCE[s.name] || s.name}<div class="mono small muted">${s.name}</div></th>
        <td>${write ? html`<select aria-label=${`${COMPLIANCE[s.name] || s.name}`} value=${s.value} onChange=${e => put(s.name, e.currentTarget.value)}>${['Required', 'Recommended', 'Optional'].map(v => html`<option value=${v}>${v}</option>`)}</select>` : s.value}</td></tr>`)}
    </tbody></table>`}
  </div>`;
}

export function Account() {
  const session = useSession();
  useTitle('Account');
  const [enrol, setEnrol] = useState(null);
  const [code, setCode] = useState('');
  const [err, setErr] = useState(null);
  const [msg, setMsg] = useState(null);
  const c = session.claims || {};
  const start = async () => {
    setErr(null); setMsg(null);
    try { setEnrol((await api('POST', '/api/v1/me/totp')).data); } catch (x) { setErr(x); }
  };
  const verify = async e => {
    e.preventDefault(); setErr(null);
    try { await api('POST', `/api/v1/me/totp/${enrol.id}/verify`, { body: { code: code.trim() } }); setEnrol(null); setCode(''); setMsg('Authenticator verified: sign-in asks for its code from now on when MFA is required.'); } catch (x) { setErr(x); }
  };
  return html`<div class="page"><h1>Account</h1>
    <dl class="facts">
      <div class="dl-row"><dt>Signed in as</dt><dd>${session.userFullName || ''} ${session.user ? `(${session.user})` : ''}</dd></div>
      <div class="dl-row"><dt>How</dt><dd>${c.svc_auth || '—'}</dd></div>
      <div class="dl-row"><dt>Session ends</dt><dd><${Time} value=${session.sessionExpiresAt} /></dd></div>
      <div class="dl-row"><dt>Roles</dt><dd>${(session.rights.roles || []).map(r => r.name).join(', ') || '—'}${session.rights.unknown ? ' (some roles cannot be read with your permissions)' : ''}</dd></div>
    </dl>
    <section><h2>Authenticator app (TOTP)</h2>
      <${Alert} error=${err} />${msg && html`<${Notice}>${msg}</${Notice}>`}
      ${!enrol ? html`<p>Add an authenticator app to sign in with a 6-digit code.</p><button type="button" class="secondary" onClick=${start}>Add an authenticator</button>`
        : html`<form onSubmit=${verify} class="inline-form">
          <p>Add this key to your authenticator app (time-based, SHA-1, 6 digits, 30 seconds), then enter the code it shows.</p>
          <p class="mono secret-box">${enrol.secret}</p>
          <details><summary>otpauth URI</summary><p class="mono wrap">${enrol.otpauthUri}</p></details>
          <div class="field"><label for="totp-code">Code from the app</label><input id="totp-code" type="text" inputmode="numeric" autocomplete="one-time-code" value=${code} onInput=${e => setCode(e.currentTarget.value)} /></div>
          <button type="submit">Verify the authenticator</button></form>`}
    </section>
  </div>`;
}
