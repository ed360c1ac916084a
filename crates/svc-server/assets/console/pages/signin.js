// Sign-in: e-mail and password (contract §2.2), the TOTP step when the account needs it, one
// button per SSO identity provider (§2.3 ending in the console: the callback comes back as
// /console/#sso-code=… or #sso-error=…, and the code is exchanged at POST /api/v1/sso/exchange).

import { useState, useEffect, useRef } from '../vendor/preact-hooks-11.2.0.mjs';
import { html, Alert, Notice, useTitle } from '../ui.js';
import { api } from '../api.js';

const TOTP_NEEDED = 'A valid TOTP code is required.';

export function SignIn({ onSignedIn, notice }) {
  useTitle('Sign in');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  // step: 'password' | 'totp' (after a password) | 'sso-totp' (after an SSO code)
  const [step, setStep] = useState('password');
  const [ssoCode, setSsoCode] = useState(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [providers, setProviders] = useState([]);
  const codeInput = useRef(null);
  const emailInput = useRef(null);

  useEffect(() => {
    api('GET', '/api/v1/sso/providers', { auth: false }).then(r => setProviders((r.data && r.data.providers) || []), () => setProviders([]));
    // The end of an SSO sign-in: the fragment never reaches a server or a log.
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.has('sso-code') || h.has('sso-error')) history.replaceState(null, '', location.pathname + location.search);
    if (h.get('sso-error')) setError(new Error(`Single sign-on failed: ${h.get('sso-error')}`));
    if (h.get('sso-code')) { setSsoCode(h.get('sso-code')); exchange(h.get('sso-code'), null); }
    else if (emailInput.current) emailInput.current.focus();
  }, []);

  useEffect(() => { if (step !== 'password' && codeInput.current) codeInput.current.focus(); }, [step]);

  async function exchange(c, totp) {
    setBusy(true); setError(null);
    try {
      const r = await api('POST', '/api/v1/sso/exchange', { body: totp ? { ssoCode: c, totpCode: totp } : { ssoCode: c }, auth: false, binding: true });
      onSignedIn(r.data.accessToken);
    } catch (e) {
      if (e.status === 401 && e.message === TOTP_NEEDED) { setStep('sso-totp'); if (totp) setError(e); } else setError(e);
    } finally { setBusy(false); }
  }

  async function signIn(e) {
    e.preventDefault();
    if (step === 'sso-totp') return exchange(ssoCode, code.trim());
    setBusy(true); setError(null);
    const body = { email: email.trim(), password };
    if (step === 'totp') body.totpCode = code.trim();
    try {
      const r = await api('POST', '/api/v1/login', { body, auth: false });
      onSignedIn(r.data.accessToken);
    } catch (err) {
      if (err.status === 401 && err.message === TOTP_NEEDED && step === 'password') setStep('totp');
      else setError(err);
      if (err.status === 401 && step === 'totp') setCode('');
    } finally { setBusy(false); }
  }

  const back = () => { setStep('password'); setCode(''); setError(null); setSsoCode(null); };

  return html`<main id="main" class="signin">
    <div class="signin-card">
      <p class="brand-big" aria-hidden="true">Svc</p>
      <h1>Sign in to the Svc console</h1>
      ${notice && html`<${Notice}>${notice}</${Notice}>`}
      <${Alert} error=${error} />
      <form onSubmit=${signIn} novalidate>
        ${step === 'password' ? html`
          <div class="field"><label for="email">Email</label>
            <input ref=${emailInput} id="email" type="email" autocomplete="username" required value=${email} onInput=${e => setEmail(e.currentTarget.value)} /></div>
          <div class="field"><label for="password">Password</label>
            <input id="password" type="password" autocomplete="current-password" required value=${password} onInput=${e => setPassword(e.currentTarget.value)} /></div>
          <button type="submit" class="wide" disabled=${busy} aria-busy=${busy ? 'true' : 'false'}>Sign in</button>
        ` : html`
          <p id="code-hint">${step === 'sso-totp' ? 'Your identity provider signed you in.' : `Password accepted for ${email}.`} Enter the 6-digit code from your authenticator app.</p>
          <div class="field"><label for="code">Code</label>
            <input ref=${codeInput} id="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required aria-describedby="code-hint" value=${code} onInput=${e => setCode(e.currentTarget.value)} /></div>
          <button type="submit" class="wide" disabled=${busy} aria-busy=${busy ? 'true' : 'false'}>Verify</button>
          <button type="button" class="link" onClick=${back}>Use another account</button>
        `}
      </form>
      ${step === 'password' && providers.length > 0 && html`<div class="sso">
        <p class="or"><span>or</span></p>
        <ul class="plain">${providers.map(p => html`<li><button type="button" class="secondary wide" onClick=${() => location.assign(`/api/v1/sso/login/${p.externalId}?redirect=console`)}>Sign in with ${p.name}</button></li>`)}</ul>
      </div>`}
    </div>
  </main>`;
}
