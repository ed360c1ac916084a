// Browser tests of the Svc console (docs/TESTING.md, stage `console`): a debug `svc` on a fresh
// SQLite database, Debian's chromium driven by playwright-core, the oauth2-mock-server peer of
// scripts/peers.sh as the workloads' OIDC issuer. Controls are found by role and accessible name,
// as docs/console.md fixes them. Screenshots of every page go to $SVC_CONSOLE_SHOTS.
//
// Run by tests/console/run.sh; needs SVC_CONSOLE_SVC_BIN, SVC_CONSOLE_NODE_MODULES,
// SVC_TEST_OAUTH2_MOCK_URL.

import { test as nodeTest, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, createWriteStream, rmSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';

const HERE = dirname(fileURLToPath(import.meta.url));
const need = n => { const v = process.env[n]; if (!v) throw new Error(`${n} is not set: run tests/console/run.sh (scripts/test.sh stage console)`); return v; };
const require = createRequire(join(need('SVC_CONSOLE_NODE_MODULES'), 'x.js'));
const { chromium } = require('playwright-core');
const AXE = readFileSync(join(HERE, 'vendor', 'axe-core-4.14.1.min.js'), 'utf8');
const SHOTS = process.env.SVC_CONSOLE_SHOTS || join(HERE, '..', '..', 'target', 'console-screenshots');
const MOCK = need('SVC_TEST_OAUTH2_MOCK_URL');
const ADMIN = { email: 'admin@console.test', password: 'correct-horse-battery-staple' };
const AUDITOR = { email: 'auditor@console.test', password: 'auditor-password-123' };
const API_KEY = 'pk_console_5f2c9a';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let svc, base, dataDir, browser, admin, adminToken, totpSeed;
const state = {};

// ---- helpers -----------------------------------------------------------------------------------

async function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
    s.on('error', rej);
  });
}

async function call(method, path, body, token = adminToken, headers = {}) {
  const r = await fetch(base + path, {
    method, redirect: 'manual',
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = text; }
  return { status: r.status, json, headers: r.headers };
}

function base32(s) {
  const alpha = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of s.replace(/=+$/, '')) bits += alpha.indexOf(c).toString(2).padStart(5, '0');
  const out = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) out.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(out);
}
/** RFC 6238 (SHA-1, 6 digits, 30 s) at time step `step`. */
function totp(secret, step = Math.floor(Date.now() / 30000)) {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(step));
  const h = createHmac('sha1', base32(secret)).update(msg).digest();
  const o = h[h.length - 1] & 15;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1e6).padStart(6, '0');
}

/** Waits while the current TOTP step ends within 3 s. */
async function awayFromStepEnd() {
  const left = 30000 - (Date.now() % 30000);
  if (left < 3000) await new Promise(r => setTimeout(r, left + 200));
}

async function mockIdToken(sub) {
  const form = new URLSearchParams({ grant_type: 'password', username: 'job', client_id: 'svc', claim_sub: JSON.stringify(sub), claim_aud: JSON.stringify(base) });
  const r = await fetch(`${MOCK}/token`, { method: 'POST', body: form });
  const j = await r.json();
  assert.ok(j.id_token, `oauth2-mock-server gave no id_token: ${JSON.stringify(j)}`);
  return j.id_token;
}

let shotNo = 0;
async function shot(page, name, { full = false } = {}) {
  shotNo += 1;
  await page.waitForFunction(() => !document.querySelector('[role=status] .spinner'), null, { timeout: 10000 }).catch(() => {});
  await page.screenshot({ path: join(SHOTS, `${String(shotNo).padStart(2, '0')}-${name}.png`), fullPage: full });
}

/** axe-core (vendored) on the page: no serious or critical violation of WCAG 2.1 A/AA. */
async function axe(page, where) {
  // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses an inline script tag.
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(`${AXE};0`);
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ')) }));
  });
  const bad = res.filter(v => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `axe found serious violations on ${where}: ${JSON.stringify(bad, null, 1)}`);
  state.axePages = (state.axePages || 0) + 1;
}

async function newPage(opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light', ...opts });
  const page = await ctx.newPage();
  page.setDefaultTimeout(10000);
  const problems = [];
  page.on('pageerror', e => problems.push(`page error: ${e.message}`));
  page.on('console', m => { if (m.type() === 'error' && !/status of (4\d\d)/.test(m.text())) problems.push(`console: ${m.text()}`); });
  // Nothing leaves for another origin (no CDN, no font service).
  page.on('request', r => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) problems.push(`request to another origin: ${r.url()}`); });
  page.problems = problems;
  return page;
}

const go = (page, path) => page.goto(`${base}/console/${path}`);
const heading = (page, name) => page.getByRole('heading', { level: 1, name });

/** A test that, when it fails, leaves a screenshot of every open page (failed-*.png). */
function test(name, fn) {
  nodeTest(name, async t => {
    try { await fn(t); } catch (e) {
      let i = 0;
      for (const ctx of browser ? browser.contexts() : []) for (const pg of ctx.pages()) {
        await pg.screenshot({ path: join(SHOTS, `failed-${name.slice(0, 30).replace(/\W+/g, '-')}-${i++}.png`), fullPage: true }).catch(() => {});
      }
      throw e;
    }
  });
}

// ---- the server and the browser ----------------------------------------------------------------

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  for (const f of (await import('node:fs')).readdirSync(SHOTS)) if (f.endsWith('.png')) rmSync(join(SHOTS, f));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  dataDir = mkdtempSync(join(tmpdir(), 'svc-console-'));
  const env = {
    PATH: process.env.PATH, HOME: process.env.HOME,
    SVC_DATABASE_URL: `sqlite://${dataDir}/svc.db`, SVC_LISTEN_ADDR: `127.0.0.1:${port}`, SVC_PUBLIC_URL: base,
    SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email, SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    SVC_METRICS_LISTEN_ADDR: '', SVC_ALLOW_INSECURE_UPSTREAM: 'true', SVC_LOG_FORMAT: 'text',
  };
  svc = spawn(need('SVC_CONSOLE_SVC_BIN'), ['serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(join(SHOTS, '..', 'console-svc.log'));
  svc.stdout.pipe(log); svc.stderr.pipe(log);
  for (let i = 0; ; i++) {
    try { if ((await fetch(`${base}/api/v1/health`)).ok) break; } catch { /* not yet */ }
    if (svc.exitCode !== null) throw new Error(`svc exited (${svc.exitCode}); see target/console-svc.log`);
    if (i > 300) throw new Error('svc did not answer within 60 s');
    await new Promise(r => setTimeout(r, 200));
  }
  browser = await chromium.launch({ executablePath: process.env.SVC_CONSOLE_CHROMIUM || '/usr/bin/chromium', args: CHROMIUM_ARGS });
});

after(async () => {
  if (browser) await browser.close();
  if (svc) { svc.kill('SIGTERM'); await new Promise(r => svc.once('exit', r)); }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

// ---- tests -------------------------------------------------------------------------------------

test('every form field of every family is a property of the body the OpenAPI document gives its write', async () => {
  // The console's forms are written in families.js; the DTOs' names live in their types, and the
  // document is made from them. This holds the two together: a field the document does not name
  // (renamed, removed, misspelt) fails here, as does a variant the union does not have.
  const { FAMILIES, fieldsOf } = await import(join(HERE, '..', '..', 'crates', 'svc-server', 'assets', 'console', 'families.js'));
  const doc = (await call('GET', '/api/openapi.json', null, null)).json;
  const resolve = sch => {
    while (sch && sch.$ref) sch = doc.components.schemas[sch.$ref.split('/').pop()];
    return sch || {};
  };
  // Every property name a schema admits, through $ref, oneOf / anyOf / allOf; and the values its
  // discriminator or const / enum tags name.
  const names = (sch, seen = new Set()) => {
    const out = new Set();
    const walk = x => {
      if (!x || typeof x !== 'object' || seen.has(x)) return;
      seen.add(x);
      if (x.$ref) walk(resolve(x));
      for (const k of Object.keys(x.properties || {})) out.add(k);
      for (const key of ['oneOf', 'anyOf', 'allOf']) for (const b of x[key] || []) walk(b);
    };
    walk(sch);
    return out;
  };
  const tagValues = (sch, tag) => {
    const out = new Set();
    const walk = x => {
      if (!x || typeof x !== 'object') return;
      if (x.$ref) return walk(resolve(x));
      for (const v of Object.keys(x.discriminator?.mapping || {})) out.add(v);
      const p = x.properties?.[tag];
      if (p?.const) out.add(p.const);
      for (const v of p?.enum || []) out.add(v);
      for (const key of ['oneOf', 'anyOf', 'allOf']) for (const b of x[key] || []) walk(b);
    };
    walk(sch);
    return out;
  };
  let checked = 0;
  for (const f of FAMILIES) {
    if (f.readOnlyFamily || !f.path) continue;
    const ops = doc.paths[f.path] || {};
    const op = ops.post || ops.put;
    if (!op?.requestBody) continue;
    const body = op.requestBody.content['application/json'].schema;
    const admitted = names(body);
    assert.ok(admitted.size > 0, `${f.key}: the document gives ${f.path} no body properties`);
    const variants = f.variants ? Object.keys(f.variants) : [null];
    if (f.discriminator) {
      const tags = tagValues(body, f.discriminator);
      for (const v of variants) assert.ok(tags.has(v), `${f.key}: the document has no ${f.discriminator} ${v}`);
    }
    for (const v of variants) {
      for (const field of fieldsOf(f, v)) {
        if (field.kind === 'permissions' || field.local) continue;
        assert.ok(admitted.has(field.name), `${f.key}${v ? ` (${v})` : ''}: the form's field ${field.name} is not in the document's body for ${f.path}`);
        checked += 1;
      }
    }
  }
  assert.ok(checked > 100, `only ${checked} fields checked`);
});

test('the console is served with its security headers, and / sends a browser there', async () => {
  const root = await fetch(`${base}/`, { headers: { accept: 'text/html,application/xhtml+xml' }, redirect: 'manual' });
  assert.equal(root.status, 302);
  assert.equal(root.headers.get('location'), '/console/');
  const api = await fetch(`${base}/`, { headers: { accept: 'application/json' }, redirect: 'manual' });
  assert.equal(api.status, 404, 'GET / for the API is unchanged');
  const index = await fetch(`${base}/console/`);
  const csp = index.headers.get('content-security-policy');
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(index.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(index.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(index.headers.get('cache-control'), 'no-store');
  const html = await index.text();
  const asset = /src="(\/console\/assets\/[0-9a-f]{16}\/app\.js)"/.exec(html);
  assert.ok(asset, 'index.html names a hashed app.js');
  const js = await fetch(base + asset[1]);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('cache-control'), /max-age=31536000, immutable/);
  assert.match(js.headers.get('content-type'), /^text\/javascript/);
  assert.equal((await fetch(`${base}/console/assets/0000000000000000/app.js`)).status, 404, 'another build\'s assets are not served');
  // A deep link is the console too (its own routes).
  assert.equal((await fetch(`${base}/console/client-workloads/new`)).headers.get('content-type'), 'text/html; charset=utf-8');
});

test('sign-in with password and TOTP, by keyboard alone', async () => {
  // The administrator enrols an authenticator and makes MFA required (through the API).
  adminToken = (await call('POST', '/api/v1/login', ADMIN, null)).json.accessToken;
  const en = await call('POST', '/api/v1/me/totp');
  assert.equal(en.status, 201);
  totpSeed = en.json.secret;
  // Verified with the previous step's code, so the current step is still unspent for sign-in
  // (the server accepts ±1 step); never within 3 s of a step's end, where the two clocks' steps
  // could differ.
  await awayFromStepEnd();
  const v = await call('POST', `/api/v1/me/totp/${en.json.id}/verify`, { code: totp(totpSeed, Math.floor(Date.now() / 30000) - 1) });
  assert.equal(v.status, 200, JSON.stringify(v.json));
  assert.equal((await call('PUT', '/api/v1/signin-policies/mfa', { mfaRequired: true })).status, 200);

  admin = await newPage();
  await go(admin, '');
  await admin.waitForURL(/\/console\/signin/);
  await heading(admin, 'Sign in to the Svc console').waitFor();
  await shot(admin, 'sign-in');
  await axe(admin, 'sign-in');
  // Focus starts in Email; Tab to Password; Enter submits.
  await admin.waitForFunction(() => document.activeElement.id === 'email');
  await admin.keyboard.type(ADMIN.email);
  await admin.keyboard.press('Tab');
  assert.equal(await admin.evaluate(() => document.activeElement.id), 'password');
  await admin.keyboard.type('wrong password, then right');
  await admin.keyboard.press('Enter');
  await admin.getByRole('alert').filter({ hasText: 'Invalid email or password.' }).waitFor();
  await admin.getByLabel('Password').fill('');
  await admin.getByLabel('Password').focus();
  await admin.keyboard.type(ADMIN.password);
  await admin.keyboard.press('Tab');
  assert.equal(await admin.evaluate(() => document.activeElement.textContent), 'Sign in');
  await admin.keyboard.press('Enter');
  // The account needs TOTP: Code and Verify, with the focus on Code.
  const code = admin.getByRole('textbox', { name: 'Code' });
  await code.waitFor();
  await admin.waitForFunction(() => document.activeElement.id === 'code');
  await shot(admin, 'sign-in-totp');
  await awayFromStepEnd();
  await admin.keyboard.type(totp(totpSeed));
  await admin.keyboard.press('Tab');
  assert.equal(await admin.evaluate(() => document.activeElement.textContent), 'Verify');
  await admin.keyboard.press('Enter');
  await admin.getByRole('navigation').waitFor();
  for (const l of ['Overview', 'Trust providers', 'Client workloads', 'Server workloads', 'Credential providers', 'Access policies', 'Access conditions', 'Events', 'Audit log', 'Why denied?', 'Users', 'Roles']) {
    await admin.getByRole('navigation').getByRole('link', { name: l, exact: true }).waitFor();
  }
  await admin.getByRole('button', { name: 'Sign out' }).waitFor();
  await admin.getByRole('combobox', { name: 'Resource set' }).waitFor();
  // The token lives in sessionStorage, never in localStorage or a cookie.
  assert.ok(await admin.evaluate(() => !!sessionStorage.getItem('svc.token')));
  assert.equal(await admin.evaluate(() => localStorage.length), 0);
  assert.deepEqual(await admin.context().cookies(), []);
});

test('a full policy chain created through the forms issues a credential at /edge/v1/credentials', async () => {
  const p = admin;
  // Trust provider: generic OIDC (the oauth2-mock-server peer), subject rule.
  await p.getByRole('navigation').getByRole('link', { name: 'Trust providers', exact: true }).click();
  await heading(p, 'Trust providers').waitFor();
  await p.getByText('No trust providers yet').waitFor();
  await shot(p, 'list-empty');
  await p.getByRole('link', { name: 'New trust provider' }).click();
  await p.getByLabel('Kind').selectOption('OidcIdToken');
  await p.getByRole('textbox', { name: 'Name', exact: true }).fill('build-runners');
  await p.getByRole('textbox', { name: 'OIDC issuer URL' }).fill(MOCK);
  await p.getByRole('button', { name: 'Add match rule' }).click();
  await p.getByLabel('Attribute').selectOption('OidcSubject');
  await p.getByRole('textbox', { name: 'Value', exact: true }).fill('system:job:build');
  await shot(p, 'trust-provider-form', { full: true });
  await axe(p, 'trust provider form');
  await p.getByRole('button', { name: 'Save' }).click();
  await heading(p, 'build-runners').waitFor();
  const clientId = (await p.getByText(/^svc:[^:]+:[^:]+:identity:oidc_idtoken:[0-9a-f-]{36}$/).textContent()).trim();
  state.clientId = clientId;
  state.trustProvider = clientId.split(':').pop();
  await shot(p, 'trust-provider', { full: true });
  await axe(p, 'trust provider page');

  // Client workload (recognised by the token's subject).
  await p.getByRole('navigation').getByRole('link', { name: 'Client workloads', exact: true }).click();
  await p.getByRole('link', { name: 'New client workload' }).click();
  await p.getByRole('textbox', { name: 'Name', exact: true }).fill('build-job');
  await p.getByRole('button', { name: 'Add identity' }).click();
  await p.getByLabel('Identity type').selectOption('oidcIdTokenSubject');
  await p.getByRole('textbox', { name: 'Value', exact: true }).fill('system:job:build');
  await p.getByRole('button', { name: 'Save' }).click();
  await heading(p, 'build-job').waitFor();

  // Server workload.
  await p.getByRole('navigation').getByRole('link', { name: 'Server workloads', exact: true }).click();
  await p.getByRole('link', { name: 'New server workload' }).click();
  await p.getByRole('textbox', { name: 'Name', exact: true }).fill('partner-api');
  await p.getByRole('textbox', { name: 'Host' }).fill('api.partner.example');
  await p.getByLabel('Method').selectOption('API Key');
  await p.getByLabel('Scheme').selectOption('Header');
  await p.getByRole('textbox', { name: 'Header or parameter name' }).fill('X-Api-Key');
  await shot(p, 'server-workload-form', { full: true });
  await axe(p, 'server workload form');
  await p.getByRole('button', { name: 'Save' }).click();
  await heading(p, 'partner-api').waitFor();

  // Credential provider: API key, a write-only secret.
  await p.getByRole('navigation').getByRole('link', { name: 'Credential providers', exact: true }).click();
  await p.getByRole('link', { name: 'New credential provider' }).click();
  await p.getByLabel('Type').selectOption('apikey');
  await p.getByRole('textbox', { name: 'Name', exact: true }).fill('partner-key');
  await p.getByLabel('API key').fill(API_KEY);
  await p.getByRole('button', { name: 'Save' }).click();
  await heading(p, 'partner-key').waitFor();
  // The secret shows as set, never its value, with a Replace action.
  assert.equal(await p.locator('body').innerText().then(t => t.includes(API_KEY)), false, 'the API key is not shown');
  await p.getByText('set', { exact: true }).waitFor();
  await p.getByRole('button', { name: 'Replace API key' }).waitFor();
  await shot(p, 'credential-provider', { full: true });

  // Access policy: the chain, references picked by name.
  await p.getByRole('navigation').getByRole('link', { name: 'Access policies', exact: true }).click();
  await p.getByRole('link', { name: 'New access policy' }).click();
  await p.getByRole('textbox', { name: 'Name', exact: true }).fill('build-job to partner-api');
  await p.getByLabel('Client workload', { exact: true }).selectOption({ label: 'build-job' });
  await p.getByLabel('Server workload', { exact: true }).selectOption({ label: 'partner-api' });
  await p.getByLabel('Add trust provider').selectOption({ label: 'build-runners' });
  await p.getByRole('button', { name: 'Add credential provider' }).click();
  await p.getByLabel('Credential provider', { exact: true }).selectOption({ label: 'partner-key' });
  await shot(p, 'access-policy-form', { full: true });
  await axe(p, 'access policy form');
  await p.getByRole('button', { name: 'Save' }).click();
  await heading(p, 'build-job to partner-api').waitFor();
  // Saved with a compliance warning (no access condition, Recommended by default).
  await p.getByText(/ap_access_cond_governance/).waitFor();
  await p.getByRole('region', { name: 'Policy chain' }).getByRole('link', { name: 'build-runners' }).waitFor();
  await shot(p, 'access-policy', { full: true });
  await axe(p, 'access policy page');

  // The workload: /edge/v1/auth with an ID token, then /edge/v1/credentials.
  const idToken = await mockIdToken('system:job:build');
  state.idToken = idToken;
  const auth = await call('POST', '/edge/v1/auth', { clientId, client: { oidc: { identityToken: idToken } } }, null);
  assert.equal(auth.status, 200, JSON.stringify(auth.json));
  state.edgeToken = auth.json.accessToken;
  const body = { client: { oidc: { identityToken: idToken } }, server: { transportProtocol: 'TCP', host: 'api.partner.example', port: 443 }, credentialType: 'ApiKey' };
  const cred = await call('POST', '/edge/v1/credentials', body, state.edgeToken);
  assert.equal(cred.status, 200, JSON.stringify(cred.json));
  assert.deepEqual(cred.json, { credentialType: 'ApiKey', expiresAt: null, data: { apiKey: API_KEY } });

  // The list shows the new policy by name, linked to its page.
  await p.getByRole('navigation').getByRole('link', { name: 'Access policies', exact: true }).click();
  await p.getByRole('table').getByRole('link', { name: 'build-job to partner-api' }).waitFor();
  await shot(p, 'access-policies');
  await axe(p, 'access policies list');
});

test('a denial is found in Events with its reason, and explained the same in Why denied?', async () => {
  const p = admin;
  // Two denials: the wrong credential type (policy level), a subject no rule accepts (/auth).
  const wrongType = { client: { oidc: { identityToken: state.idToken } }, server: { transportProtocol: 'TCP', host: 'api.partner.example', port: 443 }, credentialType: 'OAuthToken' };
  const denied = await call('POST', '/edge/v1/credentials', wrongType, state.edgeToken);
  assert.equal(denied.status, 403);
  const stranger = await mockIdToken('system:job:test');
  assert.equal((await call('POST', '/edge/v1/auth', { clientId: state.clientId, client: { oidc: { identityToken: stranger } } }, null)).status, 401);

  await p.getByRole('navigation').getByRole('link', { name: 'Events', exact: true }).click();
  await heading(p, 'Events').waitFor();
  await p.getByRole('tab', { name: 'Authorization events' }).waitFor();
  await p.getByRole('tab', { name: 'Workload events' }).waitFor();
  const table = p.getByRole('table');
  const row = table.getByRole('row').filter({ hasText: 'CredentialTypeMismatch' });
  await row.waitFor();
  assert.match(await row.innerText(), /access\.authorization[\s\S]*Unauthorized[\s\S]*CredentialTypeMismatch[\s\S]*127\.0\.0\.1/);
  await shot(p, 'events');
  await axe(p, 'events');
  // The search box narrows the list on the server.
  await p.getByRole('searchbox', { name: 'Search' }).fill('access.authentication');
  await p.waitForURL(/search=access\.authentication/);
  const authRow = table.getByRole('row').filter({ hasText: 'MatchRuleFailed' });
  await authRow.waitFor();
  await authRow.getByRole('link').click();
  // The event's details: the trust provider's reason, expected against actual.
  await heading(p, 'access.authentication').waitFor();
  const tps = p.getByRole('region', { name: 'Trust providers' }).or(p.locator('section').filter({ has: p.getByRole('heading', { name: 'Trust providers' }) }));
  const tpRow = tps.getByRole('row').filter({ hasText: 'build-runners' });
  assert.match(await tpRow.innerText(), /Unauthorized[\s\S]*MatchRuleFailed[\s\S]*OidcSubject[\s\S]*system:job:build[\s\S]*system:job:test/);
  // The failed check the event stored (its `detail`), beside the reason and in the verdict.
  assert.match(await tpRow.innerText(), /match rule on OidcSubject failed/);
  await p.getByText('Failed check:').waitFor();
  await shot(p, 'event-authentication', { full: true });

  // The policy-level denial: its page, then "Why denied?" from it.
  await p.goBack();
  await p.getByRole('searchbox', { name: 'Search' }).fill('');
  await p.waitForURL(u => !/search=/.test(u.toString()));
  await table.getByRole('row').filter({ hasText: 'CredentialTypeMismatch' }).click();
  await heading(p, 'access.authorization').waitFor();
  await p.getByText('The requested credential type is not the one the credential provider issues.').first().waitFor();
  await shot(p, 'event-denied', { full: true });
  await axe(p, 'event details');
  await p.getByRole('link', { name: /Why denied\? Explain/ }).click();
  await heading(p, 'Why denied?').waitFor();
  // Filled from the event: host, port and the client ID of its trust provider.
  assert.equal(await p.getByRole('textbox', { name: 'Host' }).inputValue(), 'api.partner.example');
  assert.equal(await p.getByRole('textbox', { name: 'Port' }).inputValue(), '443');
  await p.waitForFunction(id => document.getElementById('x-client').value === id, state.clientId);
  await p.getByRole('textbox', { name: 'Evidence' }).fill(JSON.stringify({ oidc: { identityToken: state.idToken } }));
  await p.getByRole('combobox', { name: 'Credential type' }).selectOption('OAuthToken');
  await p.getByRole('button', { name: 'Explain' }).click();
  const answer = p.getByRole('region', { name: /Answer: 403/ });
  await answer.waitFor();
  assert.match(await answer.innerText(), /would answer 403 with reason CredentialTypeMismatch/);
  assert.match(await answer.innerText(), /still denies it for the same reason/);
  const failed = answer.getByRole('listitem').filter({ hasText: 'credentialType' });
  assert.match(await failed.innerText(), /Failed[\s\S]*CredentialTypeMismatch[\s\S]*Requested OAuthToken; the provider issues ApiKey/);
  for (const step of ['edgeToken', 'clientWorkloads', 'serverWorkloads', 'accessPolicy', 'attestation']) {
    assert.match(await answer.getByRole('listitem').filter({ hasText: step }).first().innerText(), /Passed/, `step ${step}`);
  }
  await shot(p, 'why-denied', { full: true });
  await axe(p, 'why denied');
  // The same form allows ApiKey (status 200), without issuing anything.
  await p.getByRole('combobox', { name: 'Credential type' }).selectOption('ApiKey');
  await p.getByRole('button', { name: 'Explain' }).click();
  await p.getByRole('region', { name: /Answer: 200/ }).waitFor();
});

test('overview, audit log and the other pages render without errors', async () => {
  const p = admin;
  await p.getByRole('navigation').getByRole('link', { name: 'Overview', exact: true }).click();
  await heading(p, 'Overview').waitFor();
  await p.getByRole('heading', { name: 'Most frequent denial reasons, last 24 hours' }).waitFor();
  await p.getByRole('cell', { name: /^CredentialTypeMismatch/ }).waitFor();
  await p.locator('.stats').getByText('Issued, last hour').waitFor();
  await p.waitForFunction(() => [...document.querySelectorAll('.stats dd')].some(d => d.textContent === '1'));
  await shot(p, 'overview', { full: true });
  await axe(p, 'overview');

  await p.getByRole('navigation').getByRole('link', { name: 'Audit log', exact: true }).click();
  await heading(p, 'Audit log').waitFor();
  await p.getByRole('table').getByRole('row').filter({ hasText: 'LoginSucceeded' }).first().waitFor();
  await p.getByRole('table').getByRole('row').filter({ hasText: 'AccessPolicies' }).first().waitFor();
  await shot(p, 'audit-log');
  await axe(p, 'audit log');

  for (const [path, title] of [['users', 'Users'], ['roles', 'Roles'], ['resource-sets', 'Resource sets'], ['sso-idps', 'SSO identity providers'], ['log-streams', 'Log streams'], ['integrations', 'Integrations'], ['access-conditions', 'Access conditions'], ['sign-in-policies', 'Sign-in policies'], ['compliance-settings', 'Compliance settings'], ['account', 'Account'], ['events?tab=workload', 'Events']]) {
    await go(p, path);
    await heading(p, title).waitFor();
    await p.waitForFunction(() => !document.querySelector('.spinner'));
    if (['users', 'roles', 'access-conditions', 'sign-in-policies', 'events?tab=workload'].includes(path)) { await shot(p, path.replace(/\W+/g, '-')); await axe(p, path); }
  }
  // A role's page: the permission grid of a system role is read-only.
  await go(p, 'roles');
  await p.getByRole('link', { name: 'Auditor' }).click();
  await heading(p, 'Auditor').waitFor();
  await p.getByText('System role: it cannot be changed or deleted.').waitFor();
  assert.equal(await p.getByRole('button', { name: 'Save' }).count(), 0);
  assert.deepEqual(p.problems, []);
});

test('the resource-set switcher changes the X-Svc-ResourceSet of every call', async () => {
  const p = admin;
  const rs = await call('POST', '/api/v1/resource-sets', { name: 'staging', isActive: true });
  assert.equal(rs.status, 201, JSON.stringify(rs.json));
  const staging = rs.json.externalId;
  await go(p, 'client-workloads');
  await p.getByRole('table').getByRole('link', { name: 'build-job' }).waitFor();
  const box = p.getByRole('combobox', { name: 'Resource set' });
  const [req] = await Promise.all([
    p.waitForRequest(r => r.url().includes('/api/v1/client-workloads?')),
    box.selectOption({ label: 'staging' }),
  ]);
  assert.equal(req.headers()['x-svc-resourceset'], staging);
  await p.getByText('No client workloads yet').waitFor();
  await p.getByText('Resource set staging.').waitFor();
  // The choice holds across pages and a reload (sessionStorage), until changed back.
  await p.reload();
  await p.getByText('No client workloads yet').waitFor();
  assert.equal(await box.inputValue(), staging);
  await box.selectOption({ label: 'Default' });
  await p.getByRole('table').getByRole('link', { name: 'build-job' }).waitFor();
});

test('keyboard alone creates a client workload, and Delete asks in a dialog', async () => {
  const p = admin;
  await go(p, 'client-workloads/new');
  await heading(p, 'New client workload').waitFor();
  const focused = () => p.evaluate(() => {
    const e = document.activeElement;
    const l = e.id && document.querySelector(`label[for="${e.id}"]`);
    return (l && l.textContent.replace(/\s*\*$/, '').trim()) || e.getAttribute('aria-label') || e.textContent.trim();
  });
  async function tabTo(name, max = 60) {
    for (let i = 0; i < max; i++) {
      await p.keyboard.press('Tab');
      if ((await focused()) === name) return;
    }
    throw new Error(`Tab never reached ${name}`);
  }
  await tabTo('Name');
  // The focus is visible.
  assert.notEqual(await p.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none');
  await p.keyboard.type('deploy-bot');
  await tabTo('Description');
  await p.keyboard.type('Made with the keyboard');
  await tabTo('Add identity');
  await p.keyboard.press('Enter');
  await p.keyboard.press('Shift+Tab'); // Remove
  await p.keyboard.press('Shift+Tab'); // Value
  await p.keyboard.press('Shift+Tab'); // Identity type
  assert.equal(await focused(), 'Identity type');
  await p.keyboard.type('hostname');
  await p.keyboard.press('Tab');
  assert.equal(await focused(), 'Value');
  await p.keyboard.type('deploy-7');
  await tabTo('Save');
  await shot(p, 'keyboard-form', { full: true });
  await p.keyboard.press('Enter');
  await heading(p, 'deploy-bot').waitFor();
  assert.equal(await p.getByRole('combobox', { name: 'Identity type' }).inputValue(), 'hostname');

  // Delete: a dialog whose Delete confirms; Escape cancels it first.
  await p.getByRole('button', { name: 'Delete' }).click();
  const dialog = p.getByRole('dialog');
  await dialog.waitFor();
  await shot(p, 'delete-dialog');
  await p.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  await p.getByRole('button', { name: 'Delete' }).click();
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await heading(p, 'Client workloads').waitFor();
  await p.getByText('Deleted “deploy-bot”.').waitFor();
  assert.equal(await p.getByRole('table').getByRole('link', { name: 'deploy-bot' }).count(), 0);
  // An API error reaches the user in role alert, next to its field.
  await go(p, 'server-workloads/new');
  await p.getByRole('textbox', { name: 'Name', exact: true }).fill('bad port');
  await p.getByRole('textbox', { name: 'Host' }).fill('db.example.com');
  await p.getByRole('textbox', { name: 'Requested port' }).fill('70000');
  await p.getByRole('button', { name: 'Save' }).click();
  await p.getByRole('alert').filter({ hasText: 'serviceEndpoint.requestedPort' }).waitFor();
  assert.equal(await p.getByRole('textbox', { name: 'Requested port' }).getAttribute('aria-invalid'), 'true');
  await shot(p, 'validation-error', { full: true });
});

test('entities are edited through their forms: a secret replaced, a role\'s permission grid, a user', async () => {
  const p = admin;
  // A description added and saved (PUT with the fetched entity sent back) stays after a reload.
  await go(p, 'client-workloads');
  await p.getByRole('table').getByRole('link', { name: 'build-job' }).click();
  await heading(p, 'build-job').waitFor();
  await p.getByRole('textbox', { name: 'Description' }).fill('The CI build job');
  await p.getByRole('button', { name: 'Save' }).click();
  await p.getByText('Saved.', { exact: true }).waitFor();
  await p.reload();
  await heading(p, 'build-job').waitFor();
  await p.waitForFunction(() => document.querySelector('#f-description') && document.querySelector('#f-description').value === 'The CI build job');
  // The policy saved as it is (its references read as names, written as ids) still issues.
  await go(p, 'access-policies');
  await p.getByRole('table').getByRole('link', { name: 'build-job to partner-api' }).click();
  await heading(p, 'build-job to partner-api').waitFor();
  await p.getByRole('button', { name: 'Save' }).click();
  await p.getByText('Saved.', { exact: true }).waitFor();
  // The API key replaced: the workload gets the new one.
  await go(p, 'credential-providers');
  await p.getByRole('table').getByRole('link', { name: 'partner-key' }).click();
  await p.getByRole('button', { name: 'Replace API key' }).click();
  await p.getByLabel('New API key').fill('pk_console_rotated');
  await p.getByRole('button', { name: 'Save' }).click();
  await p.getByText('Saved.', { exact: true }).waitFor();
  const body = { client: { oidc: { identityToken: state.idToken } }, server: { transportProtocol: 'TCP', host: 'api.partner.example', port: 443 }, credentialType: 'ApiKey' };
  const cred = await call('POST', '/edge/v1/credentials', body, state.edgeToken);
  assert.equal(cred.status, 200, JSON.stringify(cred.json));
  assert.equal(cred.json.data.apiKey, 'pk_console_rotated');
  // A role: its permission grid and resource sets.
  await go(p, 'roles/new');
  await p.getByRole('textbox', { name: 'Name', exact: true }).fill('Workload operators');
  await p.getByRole('checkbox', { name: 'Client Workloads: write' }).check();
  await p.getByRole('checkbox', { name: 'Access Authorization Events: read' }).check();
  assert.ok(await p.getByRole('checkbox', { name: 'Client Workloads: read' }).isChecked(), 'write implies read');
  await p.getByLabel('Add resource set').selectOption({ label: 'Default' });
  await shot(p, 'role-form', { full: true });
  await p.getByRole('button', { name: 'Save' }).click();
  await heading(p, 'Workload operators').waitFor();
  const role = (await call('GET', '/api/v1/roles?filter=name:Workload operators')).json.roles[0];
  const perms = Object.fromEntries(role.permissions.filter(x => x.read).map(x => [x.name, x.write]));
  assert.deepEqual(perms, { 'Client Workloads': true, 'Access Authorization Events': false });
  // A user (PUT /api/v1/users/{id}): a phone number, roles untouched.
  await go(p, 'users');
  await p.getByRole('table').getByRole('link', { name: 'Bootstrap Admin' }).click();
  await p.getByRole('textbox', { name: 'Phone number' }).fill('+1 555 0100');
  await p.getByRole('button', { name: 'Save' }).click();
  await p.getByText('Saved.', { exact: true }).waitFor();
  const me = (await call('GET', `/api/v1/users?filter=email:${ADMIN.email}`)).json.users[0];
  assert.equal(me.phoneNumber, '+1 555 0100');
  assert.equal(me.rolesDetails[0].name, 'SuperAdmin');
  assert.deepEqual(p.problems, []);
});

test('a read-only user sees no create, edit or delete control', async () => {
  const roles = await call('GET', '/api/v1/roles?filter=name:Auditor');
  const auditor = roles.json.roles.find(r => r.name === 'Auditor' && r.isSystem);
  const u = await call('POST', '/api/v1/users', { email: AUDITOR.email, firstName: 'Ada', lastName: 'Auditor', roles: [auditor.externalId], password: AUDITOR.password });
  assert.equal(u.status, 201, JSON.stringify(u.json));

  const p = await newPage();
  await go(p, 'access-policies');
  await p.getByLabel('Email').fill(AUDITOR.email);
  await p.getByLabel('Password').fill(AUDITOR.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  // Back where the link pointed.
  await heading(p, 'Access policies').waitFor();
  await p.getByRole('table').getByRole('link', { name: 'build-job to partner-api' }).waitFor();
  assert.equal(await p.getByRole('link', { name: /^New / }).count(), 0);
  await shot(p, 'read-only-list');
  for (const [path, name] of [['client-workloads', 'build-job'], ['trust-providers', 'build-runners'], ['credential-providers', 'partner-key'], ['access-policies', 'build-job to partner-api']]) {
    await go(p, path);
    await p.getByRole('table').getByRole('link', { name }).click();
    await heading(p, name).waitFor();
    await p.getByRole('heading', { name: 'Configuration' }).waitFor();
    for (const b of ['Save', 'Delete']) assert.equal(await p.getByRole('button', { name: b }).count(), 0, `${path}: no ${b}`);
    assert.equal(await p.getByRole('textbox', { name: 'Name', exact: true }).count(), 0, `${path}: no Name textbox`);
    assert.equal(await p.getByRole('button', { name: /^Replace / }).count(), 0, `${path}: no Replace`);
    if (path === 'access-policies') { await shot(p, 'read-only-policy', { full: true }); await axe(p, 'read-only policy'); }
  }
  // The API refuses them anyway.
  await go(p, 'client-workloads/new');
  await p.getByText('Your role may not create client workloads').waitFor();
  // Sign out forgets the token and ends the session on the server.
  const tok = await p.evaluate(() => sessionStorage.getItem('svc.token'));
  await p.getByRole('button', { name: 'Sign out' }).click();
  await heading(p, 'Sign in to the Svc console').waitFor();
  await p.getByText('You are signed out.').waitFor();
  assert.equal(await p.evaluate(() => sessionStorage.getItem('svc.token')), null);
  assert.equal((await call('GET', '/api/v1/client-workloads', null, tok)).status, 401);
  assert.deepEqual(p.problems, []);
  await p.context().close();
});

test('dark and narrow: the same pages, usable at 390 px wide', async () => {
  const p = await newPage({ viewport: { width: 390, height: 844 }, colorScheme: 'dark' });
  // The same sessionStorage does not carry over to a new context: sign in as the auditor again.
  await go(p, '');
  await p.getByLabel('Email').fill(AUDITOR.email);
  await p.getByLabel('Password').fill(AUDITOR.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await heading(p, 'Overview').waitFor();
  // The navigation folds behind Menu.
  const menu = p.getByRole('navigation').getByRole('button', { name: 'Menu' });
  assert.equal(await menu.getAttribute('aria-expanded'), 'false');
  await menu.click();
  await p.getByRole('navigation').getByRole('link', { name: 'Access policies', exact: true }).click();
  await heading(p, 'Access policies').waitFor();
  assert.equal(await menu.getAttribute('aria-expanded'), 'false');
  for (const [path, name] of [['', 'overview'], ['access-policies', 'policies'], ['events', 'events']]) {
    await go(p, path);
    await p.waitForFunction(() => !document.querySelector('.spinner'));
    await p.waitForTimeout(200);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${name}: the page is ${overflow}px wider than the window`);
    await shot(p, `narrow-dark-${name}`, { full: true });
    await axe(p, `${name} (dark, narrow)`);
  }
  const wide = await newPage({ colorScheme: 'dark' });
  await wide.close();
  await p.context().close();
  assert.deepEqual(admin.problems, []);
});

test('sign-in offers one button per SSO identity provider, and shows how an SSO sign-in failed', async () => {
  const idp = await call('POST', '/api/v1/sso-idps', { type: 'OIDCv1', name: 'Acme SSO', isActive: true, userAccessEnabled: true, oidcBaseURL: 'https://idp.example.test', clientId: 'svc-console', scopes: 'openid email', authType: 'ClientSecret', clientSecret: 'console-test-secret' });
  assert.equal(idp.status, 201, JSON.stringify(idp.json));
  await call('POST', '/api/v1/sso-idps', { type: 'OIDCv1', name: 'Not offered', isActive: true, userAccessEnabled: false, oidcBaseURL: 'https://idp.example.test', clientId: 'x', scopes: 'openid', authType: 'ClientSecret', clientSecret: 'console-test-secret' });
  const p = await newPage();
  // The SSO callback's failure comes back in the fragment (issue 31), never to a server.
  await go(p, '#sso-error=The%20identity%20provider%20refused%20the%20sign-in.');
  await p.getByRole('alert').filter({ hasText: 'Single sign-on failed: The identity provider refused the sign-in.' }).waitFor();
  assert.equal(new URL(p.url()).hash, '', 'the fragment is removed from the address');
  const button = p.getByRole('button', { name: 'Sign in with Acme SSO' });
  await button.waitFor();
  assert.equal(await p.getByRole('button', { name: /^Sign in with / }).count(), 1);
  await shot(p, 'sign-in-sso');
  await axe(p, 'sign-in with SSO');
  // The button starts the flow at the API, asking for the console as the end.
  const [req] = await Promise.all([p.waitForRequest(r => r.url().includes('/api/v1/sso/login/')), button.click()]);
  assert.equal(new URL(req.url()).pathname, `/api/v1/sso/login/${idp.json.externalId}`);
  assert.equal(new URL(req.url()).searchParams.get('redirect'), 'console');
  await p.context().close();
  // The end of a console sign-in: the code in the fragment is exchanged with the browser binding
  // cookie the start set (issue 31: a code from someone else's sign-in signs nobody in), and the
  // console shows why a code was refused.
  const q = await newPage();
  await q.context().addCookies([{ name: 'svc_sso_binding', value: 'this-browser', url: `${base}/api/v1/sso/` }]);
  const [ex] = await Promise.all([
    q.waitForRequest(r => r.url().endsWith('/api/v1/sso/exchange')),
    go(q, '#sso-code=not-a-code'),
  ]);
  assert.equal(ex.method(), 'POST');
  assert.match((await ex.allHeaders()).cookie || '', /svc_sso_binding=this-browser/);
  assert.deepEqual(JSON.parse(ex.postData()), { ssoCode: 'not-a-code' });
  await q.getByRole('alert').waitFor();
  await q.context().close();
});
