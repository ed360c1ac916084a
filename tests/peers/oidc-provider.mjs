// node-oidc-provider 9.x peer for Svc's integration tests: a certified OpenID Provider with real
// client authentication (wrong secret -> 401 invalid_client) and JWT access tokens.
//
//   node tests/peers/oidc-provider.mjs PORT             serve (scripts/peers.sh does this)
//   node tests/peers/oidc-provider.mjs --self-test URL  drive every flow below against URL; exit 1 on failure
//
// scripts/peers.sh exports SVC_TEST_OIDC_PROVIDER_URL=http://localhost:PORT (listens on 127.0.0.1).
// Node 20 is enough (the library prefers 22 and may warn).
//
// Endpoints (issuer http://localhost:PORT): discovery /.well-known/openid-configuration,
// JWKS /jwks, /auth, /token, /me (userinfo), /token/introspection, /token/revocation.
// Signing key: one RS256 key generated at start (kid "svc-test-rs256").
//
// Static clients
//   svc-cc       secret svc-cc-secret       client_credentials  client_secret_basic
//   svc-cc-post  secret svc-cc-post-secret  client_credentials  client_secret_post
//   svc-ac       secret svc-ac-secret       authorization_code + refresh_token, client_secret_basic,
//                redirect_uri: $SVC_AC_REDIRECT_URI (default
//                http://127.0.0.1:8080/api/v1/credential-providers/callback) and, beyond what the
//                library allows by itself, ANY http://127.0.0.1[:port]/... or http://localhost[:port]/...
// Scopes: openid offline_access profile email, and the resource scopes api:read api:write.
// Claims: profile = name, given_name (the login), family_name ("Peer"), groups
// (["svc-users", "team-<login>"]); email = email (<login>@example.test), email_verified.
// Dynamic registration (POST /reg, no initial access token) is open, e.g. for a
// private_key_jwt client: {"redirect_uris":[R],"token_endpoint_auth_method":"private_key_jwt",
// "jwks_uri":"http://127.0.0.1:PORT/.well-known/jwks.json","grant_types":["authorization_code"],
// "response_types":["code"]} -> 201 {"client_id": ...}.
//
// Client credentials (resource indicators on; default resource https://api.svc.test; any other
// absolute `resource=` URI is also accepted and becomes the token's `aud`):
//   curl -u svc-cc:svc-cc-secret -d grant_type=client_credentials -d scope=api:read URL/token
//   -> 200 {"access_token":"<JWT>","expires_in":3600,"token_type":"Bearer","scope":"api:read"}
//   curl -d grant_type=client_credentials -d scope=api:read -d client_id=svc-cc-post \
//        -d client_secret=svc-cc-post-secret URL/token                      -> 200, same shape
//   wrong secret -> 401 {"error":"invalid_client","error_description":"client authentication failed"}
//   A `resource` whose host starts with `short.` (e.g. https://short.svc.test) gets expires_in 30.
//   The JWT (header {"alg":"RS256","typ":"at+jwt","kid":"svc-test-rs256"}) has iss=URL,
//   aud="https://api.svc.test" (or the `resource` sent), client_id, sub=<client_id>, scope, jti, iat, exp.
//
// Authorization-code flow, driven with plain HTTP (no browser). Every response below is a 303
// whose Location is the next URL; do NOT follow redirects automatically, and keep a cookie jar
// (the provider sets `_interaction` on /interaction/UID and `_interaction_resume` on /auth/UID;
// sending back the latest value of each cookie name on every request is enough).
//   1. GET  URL/auth?client_id=svc-ac&response_type=code&redirect_uri=R&scope=openid%20offline_access%20api:read&state=S
//        (optional: nonce, code_challenge + code_challenge_method=S256)   -> Location /interaction/UID1
//   2. POST URL/interaction/UID1   form: prompt=login&login=<any user id>&password=<anything>
//        -> Location URL/auth/UID1   (the login becomes the `sub`; every login is accepted)
//   3. GET  URL/auth/UID1                                                -> Location /interaction/UID2
//   4. POST URL/interaction/UID2   form: prompt=consent                 -> Location URL/auth/UID2
//   5. GET  URL/auth/UID2          -> Location R?code=CODE&state=S&iss=URL (URL-encoded iss)
//   6. POST URL/token  Basic svc-ac:svc-ac-secret  form: grant_type=authorization_code&code=CODE&redirect_uri=R
//        -> 200 {access_token (JWT, aud https://api.svc.test), expires_in, token_type:"Bearer",
//                id_token (aud svc-ac, sub <login>), refresh_token, scope}
//   7. POST URL/token  Basic svc-ac:svc-ac-secret  form: grant_type=refresh_token&refresh_token=RT
//        -> 200 {access_token, id_token, refresh_token (rotated), ...}; presenting a spent RT again
//        -> 400 invalid_grant (rotateRefreshToken: true)
//   A refresh token is issued whenever the client may use refresh_token (offline_access and
//   prompt=consent are not required). With a jar that still holds the provider's `_session`
//   cookie and scopes already granted, step 1 answers straight with the callback redirect (new
//   scopes bring back the consent step); a fresh jar always goes through steps 2-5.
//   Only http loopback redirect URIs are accepted beyond the registered one (others: 400
//   invalid_redirect_uri, an HTML error page). The GET of /interaction/UID (the HTML page) is
//   not needed.
//   Runnable proof: `node tests/peers/oidc-provider.mjs --self-test URL` (scripts/peers.sh check).

import { generateKeyPairSync } from 'node:crypto';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// Resolve an npm package for an ES module import. Node's ESM resolver ignores NODE_PATH, so the
// node_modules dir that scripts/peers.sh installs into its cache is found explicitly:
// $SVC_PEERS_NODE_MODULES, else ${SVC_PEERS_CACHE:-~/.cache/svc-peers}/npm/node_modules, else a
// plain import (node_modules next to this file, if someone ran `npm ci` in tests/peers).
async function load(pkg) {
  const dirs = [
    process.env.SVC_PEERS_NODE_MODULES,
    join(process.env.SVC_PEERS_CACHE || join(homedir(), '.cache', 'svc-peers'), 'npm', 'node_modules'),
  ].filter(Boolean);
  for (const dir of dirs) {
    try {
      const resolved = createRequire(join(dir, 'noop.js')).resolve(pkg);
      return await import(pathToFileURL(resolved).href);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') throw e;
    }
  }
  return import(pkg);
}

const DEFAULT_RESOURCE = 'https://api.svc.test';
const RESOURCE_SCOPES = 'api:read api:write';
const AC_REDIRECT_URI = process.env.SVC_AC_REDIRECT_URI
  || 'http://127.0.0.1:8080/api/v1/credential-providers/callback';

function isLoopbackHttp(uri) {
  let u;
  try {
    u = new URL(uri);
  } catch {
    return false;
  }
  return u.protocol === 'http:' && ['127.0.0.1', 'localhost'].includes(u.hostname) && u.hash === '';
}

async function serve(port) {
  const { default: Provider, errors } = await load('oidc-provider');
  const issuer = `http://localhost:${port}`;

  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'svc-test-rs256', alg: 'RS256', use: 'sig' };

  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    clients: [
      {
        client_id: 'svc-cc',
        client_secret: 'svc-cc-secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: 'svc-cc-post',
        client_secret: 'svc-cc-post-secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: 'svc-ac',
        client_secret: 'svc-ac-secret',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: [AC_REDIRECT_URI],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    scopes: ['openid', 'offline_access', 'profile', 'email', 'api:read', 'api:write'],
    claims: {
      openid: ['sub'],
      profile: ['name', 'given_name', 'family_name', 'groups'],
      email: ['email', 'email_verified'],
    },
    // Any login is accepted: the account id is whatever the test typed as `login`.
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => ({
        sub: id,
        name: id,
        given_name: id,
        family_name: 'Peer',
        groups: ['svc-users', `team-${id}`],
        email: `${id}@example.test`,
        email_verified: true,
      }),
    }),
    // Refresh tokens whenever the client is allowed the grant (no offline_access dance needed).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Every refresh rotates the refresh token; presenting a spent one is invalid_grant (and the
    // library then revokes the grant), so a client that loses a rotation is caught at once.
    rotateRefreshToken: true,
    cookies: { keys: ['svc-test-peer-cookie-key'] },
    // The library refuses outgoing requests to special-use addresses (SSRF protection); every
    // peer here is on loopback, e.g. the jwks_uri of a registered private_key_jwt client (the
    // Svc under test), so the protecting dispatcher is dropped for this test peer.
    fetch: (url, options) => {
      const { dispatcher: _ignored, ...rest } = options;
      return globalThis.fetch(url, rest);
    },
    ttl: {
      // The resource server's accessTokenTTL (below) decides, as in the library's defaults.
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 3600,
      AuthorizationCode: 600,
      ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 3600,
      Grant: 86400,
      IdToken: 3600,
      Interaction: 3600,
      RefreshToken: 86400,
      Session: 86400,
    },
    features: {
      devInteractions: { enabled: true },
      // Open dynamic registration (RFC 7591, POST /reg): a test registers a private_key_jwt
      // client whose jwks_uri is the JWKS of the Svc under test (random port).
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf ?? DEFAULT_RESOURCE,
        // Authorization-code/refresh access tokens are for the granted resource (JWT) even
        // without a `resource` parameter at the token endpoint.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => {
          let u;
          try {
            u = new URL(resourceIndicator);
          } catch {
            throw new errors.InvalidTarget();
          }
          if (u.hash) throw new errors.InvalidTarget();
          return {
            scope: RESOURCE_SCOPES,
            audience: resourceIndicator,
            // A resource on a host starting with `short.` gets 30 s access tokens (below Svc's
            // 60 s reuse margin, so every issuance goes back to the token endpoint).
            accessTokenTTL: u.hostname.startsWith('short.') ? 30 : 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  });

  // The library has no redirect_uri wildcards: let svc-ac use any loopback http redirect URI
  // (the Svc under test listens on a random port).
  const { redirectUriAllowed } = provider.Client.prototype;
  provider.Client.prototype.redirectUriAllowed = function loopbackRedirectUriAllowed(value) {
    if (redirectUriAllowed.call(this, value)) return true;
    return this.clientId === 'svc-ac' && isLoopbackHttp(value);
  };

  provider.on('server_error', (_ctx, err) => console.error('server_error', err));
  // Why a token request failed (a client assertion's key, audience, ...), for the test logs.
  provider.on('grant.error', (_ctx, err) => console.error('grant.error', err.message, err.error_description, err.cause?.message ?? ''));

  const server = provider.listen(port, '127.0.0.1');
  server.on('listening', () => {
    console.log(`oidc-provider listening on 127.0.0.1:${port}, issuer ${issuer}`);
  });
  // Exit promptly on SIGTERM: close() alone would wait for idle keep-alive connections.
  const shutdown = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

// ---------------------------------------------------------------------------------------------
// --self-test URL: the executable form of the recipes in the header.

function decodeJwt(jwt) {
  const [h, p] = jwt.split('.').slice(0, 2).map((s) => JSON.parse(Buffer.from(s, 'base64url').toString()));
  return { header: h, payload: p };
}

function check(cond, msg, extra) {
  if (!cond) {
    console.error(`self-test FAILED: ${msg}`, extra ?? '');
    process.exit(1);
  }
  console.log(`ok - ${msg}`);
}

async function selfTest(base) {
  const basic = (id, secret) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  const form = (o) => new URLSearchParams(o).toString();
  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

  // Client credentials, client_secret_basic.
  let res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { ...formHeaders, authorization: basic('svc-cc', 'svc-cc-secret') },
    body: form({ grant_type: 'client_credentials', scope: 'api:read' }),
  });
  let body = await res.json();
  check(res.status === 200 && body.access_token && body.expires_in && body.token_type === 'Bearer',
    'client_credentials (basic) -> 200', body);
  let at = decodeJwt(body.access_token);
  check(at.payload.aud === DEFAULT_RESOURCE && at.payload.client_id === 'svc-cc' && at.payload.iss === base,
    `JWT access token aud=${at.payload.aud} client_id=${at.payload.client_id} scope=${at.payload.scope}`, at);

  res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { ...formHeaders, authorization: basic('svc-cc', 'wrong') },
    body: form({ grant_type: 'client_credentials', scope: 'api:read' }),
  });
  body = await res.json();
  check(res.status === 401 && body.error === 'invalid_client', 'wrong secret -> 401 invalid_client', body);

  // Client credentials, client_secret_post.
  res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: formHeaders,
    body: form({
      grant_type: 'client_credentials', scope: 'api:read api:write', client_id: 'svc-cc-post', client_secret: 'svc-cc-post-secret',
    }),
  });
  body = await res.json();
  check(res.status === 200 && body.scope === 'api:read api:write', 'client_credentials (post) -> 200', body);

  // Authorization code, driven by hand with a cookie jar.
  const jar = new Map();
  const request = async (url, init = {}) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await fetch(new URL(url, base), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers ?? {}), ...(cookie ? { cookie } : {}) },
    });
    for (const sc of r.headers.getSetCookie()) {
      const [pair] = sc.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(sc)) jar.delete(name);
      else jar.set(name, value);
    }
    return r;
  };
  const redirectUri = 'http://127.0.0.1:39999/api/v1/credential-providers/callback';
  const authUrl = `${base}/auth?${form({
    client_id: 'svc-ac', response_type: 'code', redirect_uri: redirectUri, scope: 'openid offline_access api:read', state: 'st-1', nonce: 'n-1',
  })}`;
  res = await request(authUrl);
  let loc = res.headers.get('location');
  check(res.status === 303 && /\/interaction\//.test(loc), `GET /auth -> ${res.status} ${loc}`);
  res = await request(loc, { method: 'POST', headers: formHeaders, body: form({ prompt: 'login', login: 'alice', password: 'x' }) });
  loc = res.headers.get('location');
  check(res.status === 303 && /\/auth\//.test(loc), `POST login -> ${res.status} ${loc}`);
  res = await request(loc);
  loc = res.headers.get('location');
  check(res.status === 303 && /\/interaction\//.test(loc), `resume -> ${res.status} ${loc}`);
  res = await request(loc, { method: 'POST', headers: formHeaders, body: form({ prompt: 'consent' }) });
  loc = res.headers.get('location');
  check(res.status === 303 && /\/auth\//.test(loc), `POST consent -> ${res.status} ${loc}`);
  res = await request(loc);
  loc = res.headers.get('location');
  check(res.status === 303 && loc.startsWith(redirectUri), `resume -> ${res.status} ${loc}`);
  const cb = new URL(loc);
  const code = cb.searchParams.get('code');
  check(code && cb.searchParams.get('state') === 'st-1' && cb.searchParams.get('iss') === base, 'callback has code, state, iss');

  res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { ...formHeaders, authorization: basic('svc-ac', 'svc-ac-secret') },
    body: form({ grant_type: 'authorization_code', code, redirect_uri: redirectUri }),
  });
  body = await res.json();
  check(res.status === 200 && body.access_token && body.id_token && body.refresh_token, 'code exchange -> 200 with access/id/refresh tokens', body);
  const idt = decodeJwt(body.id_token);
  check(idt.payload.sub === 'alice' && idt.payload.aud === 'svc-ac' && idt.payload.nonce === 'n-1', `id_token sub=${idt.payload.sub} aud=${idt.payload.aud}`, idt);
  at = decodeJwt(body.access_token);
  check(at.payload.aud === DEFAULT_RESOURCE && at.payload.sub === 'alice', `access token aud=${at.payload.aud} sub=${at.payload.sub} scope=${at.payload.scope}`, at);

  res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { ...formHeaders, authorization: basic('svc-ac', 'svc-ac-secret') },
    body: form({ grant_type: 'refresh_token', refresh_token: body.refresh_token }),
  });
  const refreshed = await res.json();
  check(res.status === 200 && refreshed.access_token && refreshed.refresh_token, 'refresh_token grant -> 200', refreshed);
  check(refreshed.refresh_token && refreshed.refresh_token !== body.refresh_token, 'refresh token rotated');

  res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { ...formHeaders, authorization: basic('svc-ac', 'wrong') },
    body: form({ grant_type: 'refresh_token', refresh_token: refreshed.refresh_token }),
  });
  check(res.status === 401, 'refresh with wrong secret -> 401');

  res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { ...formHeaders, authorization: basic('svc-ac', 'svc-ac-secret') },
    body: form({ grant_type: 'refresh_token', refresh_token: body.refresh_token }),
  });
  const spent = await res.json();
  check(res.status === 400 && spent.error === 'invalid_grant', 'spent refresh token -> 400 invalid_grant', spent);
  console.log('oidc-provider self-test passed');
}

if (process.argv[2] === '--self-test') {
  const base = (process.argv[3] ?? process.env.SVC_TEST_OIDC_PROVIDER_URL ?? '').replace(/\/$/, '');
  if (!base) {
    console.error('usage: node oidc-provider.mjs --self-test URL');
    process.exit(2);
  }
  await selfTest(base);
} else {
  const port = Number.parseInt(process.argv[2] ?? '', 10);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    console.error('usage: node oidc-provider.mjs PORT | --self-test URL');
    process.exit(2);
  }
  await serve(port);
}
