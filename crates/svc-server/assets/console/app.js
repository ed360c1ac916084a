// The console's entry point: the session (token, roles, resource set), the page frame (header,
// navigation, resource-set switcher, sign-out) and the routes (docs/console.md).

import { render } from './vendor/preact-11.2.0.mjs';
import { useState, useEffect, useMemo } from './vendor/preact-hooks-11.2.0.mjs';
import { html, Link, navigate, useRoute, Session, Loading, Alert, href } from './ui.js';
import { api, token, setToken, claims, resourceSet, setResourceSet, whenSignedOut, DEFAULT_RS, list } from './api.js';
import { FAMILY } from './families.js';
import { SignIn } from './pages/signin.js';
import { ListPage, EntityPage, NewPage } from './pages/entities.js';
import { EventsPage, EventPage, AuditPage, AuditEntryPage } from './pages/events.js';
import { ExplainPage } from './pages/explain.js';
import { Overview } from './pages/overview.js';
import { SignInPolicies, Compliance, Account } from './pages/settings.js';

/** The navigation: the contract's fixed links first in their groups, then the other families. */
const NAV = [
  { group: null, links: [['', 'Overview']] },
  { group: 'Workloads', links: [['trust-providers', 'Trust providers'], ['client-workloads', 'Client workloads'], ['server-workloads', 'Server workloads'], ['server-workload-drafts', 'Server-workload drafts']] },
  { group: 'Policy', links: [['access-policies', 'Access policies'], ['credential-providers', 'Credential providers'], ['access-conditions', 'Access conditions'], ['integrations', 'Integrations'], ['credential-integrations', 'Credential integrations'], ['content-security', 'Content security'], ['discovery-integrations', 'Discovery']] },
  { group: 'Observe', links: [['events', 'Events'], ['audit-log', 'Audit log'], ['why-denied', 'Why denied?'], ['log-streams', 'Log streams']] },
  { group: 'Administration', links: [['users', 'Users'], ['roles', 'Roles'], ['resource-sets', 'Resource sets'], ['sso-idps', 'SSO identity providers'], ['sign-in-policies', 'Sign-in policies'], ['compliance-settings', 'Compliance settings'], ['agent-controllers', 'Agent controllers'], ['routings', 'Routings']] },
];

/**
 * What the caller may do, from its roles (the token's `roles` claim, read through
 * GET /api/v1/roles/{id}). A role the caller may not read leaves its rights unknown: then write
 * controls are shown and the API decides (docs/console.md, "Roles and write controls").
 */
async function loadRights(c) {
  const ids = (c && c.roles) || [];
  const roles = [];
  let unknown = false;
  await Promise.all(ids.map(async id => {
    try {
      const { data } = await api('GET', `/api/v1/roles/${id}`);
      if (data && typeof data === 'object') roles.push(data);
    } catch { unknown = true; }
  }));
  // A workload token's rights are its credential provider's role, which the token does not name.
  if (c && c.svc_auth === 'workload') unknown = true;
  return { roles, unknown };
}

function makeCan(rights) {
  return (perm, write, rs) => {
    if (!rights || rights.unknown) return true;
    return rights.roles.some(r => {
      if (r.isActive === false) return false;
      const p = (r.permissions || []).find(x => x.name === perm);
      if (!p || !(write ? p.write : (p.read || p.write))) return false;
      if (r.isSystem && r.name === 'SuperAdmin') return true;
      const sets = (r.resourceSets || []).map(s => s.externalId);
      if (r.isSystem) return true;
      return sets.includes(rs || DEFAULT_RS);
    });
  };
}

function Shell({ route, session }) {
  const { path } = route;
  // Below 900 px the navigation folds behind a Menu button (console.css).
  const [menu, setMenu] = useState(false);
  const parts = path.split('/').filter(Boolean);
  let page;
  const [head, second] = parts;
  if (!head) page = html`<${Overview} />`;
  else if (head === 'events') page = second ? html`<${EventPage} kind=${second} id=${parts[2]} />` : html`<${EventsPage} />`;
  else if (head === 'audit-log') page = second ? html`<${AuditEntryPage} id=${second} />` : html`<${AuditPage} />`;
  else if (head === 'why-denied') page = html`<${ExplainPage} />`;
  else if (head === 'sign-in-policies') page = html`<${SignInPolicies} />`;
  else if (head === 'compliance-settings') page = html`<${Compliance} />`;
  else if (head === 'account') page = html`<${Account} />`;
  else if (FAMILY[head]) {
    const f = FAMILY[head];
    if (!second) page = html`<${ListPage} key=${head} family=${f} />`;
    else if (second === 'new') page = html`<${NewPage} key=${`${head}/new`} family=${f} />`;
    else page = html`<${EntityPage} key=${`${head}/${second}`} family=${f} id=${second} />`;
  } else page = html`<div><h1>Not found</h1><p>The console has no page at this address. <${Link} to="">Go to the overview</${Link}>.</p></div>`;

  const current = head || '';
  return html`<div class="shell">
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <${Link} to="" class="brand" aria-label="Svc console: overview">Svc</${Link}>
      <div class="top-right">
        <${RsSwitcher} session=${session} />
        <${Link} to="account" class="who" aria-label=${`Account: ${session.user || 'signed in'}`}>${session.user || 'Account'}</${Link}>
        <button type="button" class="secondary" onClick=${session.signOut}>Sign out</button>
      </div>
    </header>
    <div class="body">
      <nav aria-label="Main" class=${menu ? 'side open' : 'side'}>
        <button type="button" class="secondary small menu-toggle" aria-expanded=${menu ? 'true' : 'false'} aria-controls="nav-groups" onClick=${() => setMenu(!menu)}>Menu</button>
        <div id="nav-groups" onClick=${e => { if (e.target.closest('a')) setMenu(false); }}>
        ${NAV.map(g => html`<div class="nav-group">
          ${g.group && html`<h2 class="nav-h">${g.group}</h2>`}
          <ul>${g.links.map(([to, label]) => html`<li><${Link} to=${to} aria-current=${current === to ? 'page' : undefined}>${label}</${Link}></li>`)}</ul>
        </div>`)}
        </div>
      </nav>
      <main id="main" tabindex="-1">${page}</main>
    </div>
  </div>`;
}

function RsSwitcher({ session }) {
  const sets = session.resourceSets;
  return html`<div class="rs"><label for="rs-select">Resource set</label>
    <select id="rs-select" value=${session.rs} onChange=${e => session.setRs(e.currentTarget.value)}>
      ${sets.map(s => html`<option value=${s.externalId}>${s.name}</option>`)}
    </select></div>`;
}

function App() {
  const route = useRoute();
  const [tok, setTok] = useState(token());
  const [rs, setRsState] = useState(resourceSet());
  const [ctx, setCtx] = useState(null);
  const [ended, setEnded] = useState(null);

  useEffect(() => {
    whenSignedOut(() => { setTok(null); setCtx(null); setEnded('Your session ended. Sign in again.'); });
  }, []);

  useEffect(() => {
    if (!tok) { setCtx(null); return; }
    let live = true;
    (async () => {
      const c = claims();
      const [health, rights, sets] = await Promise.all([
        api('GET', '/api/v1/health').then(r => r.data, () => null),
        loadRights(c),
        list('/api/v1/resource-sets', 'entities', { 'per-page': 1000, order: 'name asc' }).then(r => r.items, () => []),
      ]);
      if (!live) return;
      const all = sets.length ? sets : [{ externalId: DEFAULT_RS, name: 'Default' }];
      if (!all.some(s => s.externalId === resourceSet())) { setResourceSet(all[0].externalId); setRsState(all[0].externalId); }
      setCtx({ health, rights, sets: all });
    })();
    return () => { live = false; };
  }, [tok]);

  const session = useMemo(() => ctx && {
    user: ctx.health && ctx.health.user,
    userFullName: ctx.health && ctx.health.userFullName,
    sessionExpiresAt: ctx.health && ctx.health.sessionExpiresAt,
    claims: claims(),
    rights: ctx.rights,
    can: makeCan(ctx.rights),
    rs,
    resourceSets: ctx.sets,
    rsName: (ctx.sets.find(s => s.externalId === rs) || {}).name || 'Default',
    setRs: id => { setResourceSet(id); setRsState(id); },
    signOut: async () => {
      try { await api('POST', '/api/v1/me/sign-out'); } catch { /* the session may be gone already */ }
      setToken(null);
      setTok(null);
      setEnded('You are signed out.');
      navigate(href('signin'), { replace: true });
    },
  }, [ctx, rs]);

  const onSignedIn = t => {
    setToken(t);
    setEnded(null);
    setTok(t);
    const next = new URLSearchParams(location.search).get('next');
    navigate(next && next.startsWith('/console/') && !next.startsWith('/console/signin') ? next : href(''), { replace: true });
  };

  if (!tok) {
    if (route.path !== 'signin') {
      const next = location.pathname + location.search;
      history.replaceState(null, '', `${href('signin')}${next !== '/console/' ? `?next=${encodeURIComponent(next)}` : ''}${location.hash}`);
    }
    return html`<${SignIn} onSignedIn=${onSignedIn} notice=${ended} />`;
  }
  if (route.path === 'signin') { navigate(href(''), { replace: true }); return null; }
  if (!session) return html`<main id="main" class="boot"><${Loading} what="Opening the console" /></main>`;
  return html`<${Session.Provider} value=${session}><${Shell} key=${rs} route=${route} session=${session} /></${Session.Provider}>`;
}

render(html`<${App} />`, document.getElementById('app'));
