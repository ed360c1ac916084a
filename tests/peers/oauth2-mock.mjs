// oauth2-mock-server 8.x peer for Svc's integration tests.
//
//   node tests/peers/oauth2-mock.mjs PORT
//
// Started by scripts/peers.sh, which exports SVC_TEST_OAUTH2_MOCK_URL=http://localhost:PORT.
// It listens on 127.0.0.1:PORT; its issuer (`iss`, discovery document, jwks_uri) is
// http://localhost:PORT. It signs with one RS256 key generated at start
// (JWKS at http://localhost:PORT/jwks, discovery at /.well-known/openid-configuration).
// It does NOT check client secrets.
//
// Custom claims
// -------------
// Every form field of a POST /token request named `claim_<name>` is copied into the payload of
// the tokens minted for that request as `<name>`, after the server's own claims, so it overrides
// them (sub, aud, iss, exp, ... can all be set). The value is JSON-parsed when it parses
// (`claim_aud=["a","b"]` -> array, `claim_exp=1700000000` -> number, `claim_admin=true` -> bool,
// `claim_sub="123"` -> the string "123"), and is inserted as the raw string otherwise
// (`claim_sub=alice` -> "alice"). A field given twice (`claim_x=1&claim_x=2`) becomes an array
// of the raw strings.
// Prefixes `id_claim_<name>` / `at_claim_<name>` apply to the ID token only / access token only;
// they are applied after `claim_<name>`.
//
// Which request yields an ID token with custom claims:
//   grant_type=password (or authorization_code / refresh_token) returns `id_token` next to
//   `access_token`; grant_type=client_credentials returns NO id_token (only an access token,
//   which also receives the claim_* claims). So, to mint an ID token for sub=alice, aud=svc:
//
//   curl -s -X POST http://localhost:PORT/token \
//     -H 'Content-Type: application/x-www-form-urlencoded' \
//     --data-urlencode grant_type=password --data-urlencode username=alice \
//     --data-urlencode client_id=svc --data-urlencode claim_sub=alice \
//     --data-urlencode claim_aud=svc --data-urlencode 'claim_groups=["ops","dev"]'
//   -> 200 {"access_token":"<JWT>","token_type":"Bearer","expires_in":3600,"scope":...,
//           "id_token":"<JWT>","refresh_token":"<uuid>"}
//
//   Without claim_* fields the ID token has iss, iat, exp, nbf, sub="johndoe" (always, NOT the
//   username) and aud=<client_id from HTTP Basic auth or the client_id form field>, and a
//   header {"alg":"RS256","kid":...}. The access token of the password grant has sub=<username>,
//   amr=["pwd"] and scope. The token endpoint also accepts a JSON body (Content-Type:
//   application/json) with the same field names; there, non-string values are kept as they are.

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

const port = Number.parseInt(process.argv[2] ?? '', 10);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node oauth2-mock.mjs PORT');
  process.exit(2);
}

const { OAuth2Server } = await load('oauth2-mock-server');

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');

function claimValue(raw) {
  if (typeof raw !== 'string') return raw; // JSON body values, or arrays of repeated form fields
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

server.service.on('beforeTokenSigning', (token, req) => {
  const body = req.body ?? {};
  // The ID token is the only token this server builds without a `scope` key in its payload
  // (access tokens always get one, possibly undefined), which tells the two apart.
  const isIdToken = !Object.prototype.hasOwnProperty.call(token.payload, 'scope');
  const apply = (prefix) => {
    for (const [field, raw] of Object.entries(body)) {
      if (field.startsWith(prefix) && field.length > prefix.length) {
        token.payload[field.slice(prefix.length)] = claimValue(raw);
      }
    }
  };
  apply('claim_');
  apply(isIdToken ? 'id_claim_' : 'at_claim_');
  // Drop keys left undefined by the server's own transforms (e.g. `aud` with no client_id).
  for (const [k, v] of Object.entries(token.payload)) {
    if (v === undefined) delete token.payload[k];
  }
});

// The issuer is what tests put in their trust config: pin the documented localhost form
// (start() only derives one from the bind address when none is set).
server.issuer.url = `http://localhost:${port}`;
await server.start(port, '127.0.0.1');
console.log(`oauth2-mock-server listening on 127.0.0.1:${port}, issuer ${server.issuer.url}`);

// Exit promptly on SIGTERM (stop() alone would wait for idle keep-alive connections).
const shutdown = () => {
  server.stop().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
