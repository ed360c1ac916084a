// Every management family the console shows, in ONE place: its API paths, list columns, and the
// fields of its forms (docs/console.md "Forms"): labels, hints and order are the console's; every
// field name and variant is checked against the DTO schemas of GET /api/openapi.json by
// tests/console ("every form field of every family is a property of the body ..."), so a DTO
// renamed in svc-api fails that test until the form follows.
//
// A field: {name, label, kind, required, hint, options, when(item, root), fields (list/object),
// ref (reference picker), def (default on create), createOnly}. Kinds: text, textarea, number,
// bool, select, secret (write-only: set / not set + Replace), ref, refs, list, object, jsontext
// (an object sent as JSON text), permissions, strings.

// ---- building blocks -------------------------------------------------------------------------

const text = (name, label, o = {}) => ({ kind: 'text', name, label, ...o });
const area = (name, label, o = {}) => ({ kind: 'textarea', name, label, ...o });
const num = (name, label, o = {}) => ({ kind: 'number', name, label, ...o });
const bool = (name, label, o = {}) => ({ kind: 'bool', name, label, ...o });
const select = (name, label, options, o = {}) => ({ kind: 'select', name, label, options, ...o });
const secret = (name, label, o = {}) => ({ kind: 'secret', name, label, ...o });
const ref = (name, label, family, o = {}) => ({ kind: 'ref', name, label, ref: { family, ...o.ref }, ...o });
const refs = (name, label, family, o = {}) => ({ kind: 'refs', name, label, ref: { family, ...o.ref }, ...o });
const list = (name, label, item, fields, o = {}) => ({ kind: 'list', name, label, item, fields, ...o });
const obj = (name, label, fields, o = {}) => ({ kind: 'object', name, label, fields, ...o });

const TAGS = list('tags', 'Tags', 'tag', [text('key', 'Key', { required: true }), text('value', 'Value', { required: true })]);
/** The base block of §1.3 (name, description, active, tags). */
const BASE = [
  text('name', 'Name', { required: true, hint: '1–128 characters; names need not be unique.' }),
  area('description', 'Description', { rows: 2 }),
  bool('isActive', 'Active', { def: true, hint: 'Inactive entries are kept but ignored when credentials are issued.' }),
];
const BASE_END = [TAGS];
const LITERAL_DYNAMIC = ['literal', 'dynamic'];

// ---- trust providers (§3.1) ------------------------------------------------------------------

export const TRUST_KINDS = {
  CloudAMetadataService: ['CloudAAccountId', 'CloudAArchitecture', 'CloudAAvailabilityZone', 'CloudABillingProducts', 'CloudAImageId', 'CloudAInstanceId', 'CloudAInstanceType', 'CloudAKernelId', 'CloudAMarketplaceProductCodes', 'CloudAPendingTime', 'CloudAPrivateIp', 'CloudARamdiskId', 'CloudARegion', 'CloudAVersion'],
  CloudARole: ['CloudAAccountId', 'CloudAAssumedRole', 'CloudARoleARN', 'CloudAUsername'],
  CloudBMetadataService: ['CloudBSku', 'CloudBVmId', 'CloudBSubscriptionId'],
  CloudCIdentityToken: ['Email'],
  CiAIdentityToken: ['CiAActor', 'CiARepository', 'CiAWorkflow', 'CiASubject', 'CiARef', 'CiARepositoryId', 'CiARepositoryOwnerId'],
  CiBIdentityToken: ['CiBSubject', 'CiBProjectPath', 'CiBNamespacePath', 'CiBRefPath', 'CiBProjectId', 'CiBNamespaceId'],
  CiCIdentityToken: ['CiCOrganizationId', 'CiCProjectId', 'CiCWorkspaceId'],
  OrchestratorServiceAccount: ['OrchestratorIss', 'OrchestratorIoNamespace', 'OrchestratorIoPodName', 'OrchestratorIoServiceAccountName', 'OrchestratorSub'],
  OidcIdToken: ['OidcIssuer', 'OidcSubject', 'OidcAudience', 'OidcCustom'],
};
const KIND_LABELS = {
  CloudAMetadataService: 'cloudA instance identity document', CloudARole: 'cloudA role (STS GetCallerIdentity)',
  CloudBMetadataService: 'cloudB attested document', CloudCIdentityToken: 'cloudC identity token',
  CiAIdentityToken: 'ciA job token', CiBIdentityToken: 'ciB job token', CiCIdentityToken: 'ciC run token',
  OrchestratorServiceAccount: 'Orchestrator service account', OidcIdToken: 'Generic OIDC ID token',
};
const tpKind = (...ks) => (_, root) => ks.includes(root.provider);
const TRUST_FIELDS = [
  text('oidcUrl', 'OIDC issuer URL', { when: tpKind('CiAIdentityToken', 'CiBIdentityToken', 'CiCIdentityToken', 'OrchestratorServiceAccount', 'OidcIdToken'), hint: 'Discovery at <URL>/.well-known/openid-configuration. For the CI kinds, empty means the platform issuer.' }),
  area('jwks', 'JWKS', { when: tpKind('OrchestratorServiceAccount', 'OidcIdToken'), rows: 4, hint: 'JSON text {"keys": [...]}; instead of an issuer URL.' }),
  area('certificate', 'Certificate or public key (PEM)', { when: tpKind('CloudAMetadataService', 'OrchestratorServiceAccount', 'OidcIdToken'), rows: 4 }),
  select('pemType', 'PEM type', ['', 'Certificate', 'PublicKey'], { when: (i, r) => !!r.certificate }),
  bool('isSvcTenantOidcToken', 'Tokens are issued by this service', { when: tpKind('OrchestratorServiceAccount', 'OidcIdToken') }),
  list('matchRules', 'Match rules', 'match rule', [
    select('attribute', 'Attribute', (_, root) => TRUST_KINDS[root.provider] || [], { required: true }),
    text('value', 'Value', { required: true }),
    text('key', 'Claim name', { when: i => i.attribute === 'OidcCustom', hint: 'Top-level claim, or a dotted path.' }),
  ], { hint: 'Rules of one attribute are ORed, different attributes ANDed. None: any verified evidence of this kind is accepted.' }),
];

// ---- client workloads (§3.3) -----------------------------------------------------------------

export const IDENTITY_TYPES = ['svcClientId', 'cloudAAccountId', 'cloudAInstanceId', 'cloudARegion', 'cloudAEcsTaskFamily', 'cloudAEcsServiceName', 'cloudALambdaArn', 'cloudBSubscriptionId', 'cloudBVmId', 'cloudCIdentityToken', 'ciAIdTokenRepository', 'ciAIdTokenSubject', 'ciBIdTokenSubject', 'ciBIdTokenProjectPath', 'ciBIdTokenNamespacePath', 'ciBIdTokenRefPath', 'ciCIdTokenOrganizationId', 'ciCIdTokenProjectId', 'ciCIdTokenWorkspaceId', 'orchestratorNamespace', 'orchestratorServiceAccountName', 'orchestratorServiceAccountUID', 'orchestratorPodName', 'orchestratorPodNamePrefix', 'oidcIdTokenIssuer', 'oidcIdTokenSubject', 'oidcIdTokenAudience', 'oidcIdToken', 'hostname', 'processName', 'processUserName', 'processPath', 'processCommandLine', 'sourceIPAddress'];

// ---- server workloads (§3.4) -----------------------------------------------------------------

const AUTH_SCHEMES = {
  'API Key': ['Header', 'Query Parameter'],
  'HTTP Authentication': ['Basic', 'Bearer', 'Header', 'CloudA Signature v4'],
  'JWT Token Authentication': ['DataWarehouseA JWT'],
  'OAuth Client Authentication': ['POST Body'],
  'Password Authentication': ['Password'],
  'mTLS Authentication': ['x509 Certificate'],
};
const ENDPOINT = obj('serviceEndpoint', 'Service endpoint', [
  text('host', 'Host', { required: true, hint: 'Hostname, IP, or a wildcard *.example.com.' }),
  num('requestedPort', 'Requested port', { required: true, def: 443, hint: 'The port clients ask for (1–65535).' }),
  bool('requestedTls', 'Requested TLS', { def: true }),
  select('appProtocol', 'Application protocol', ['HTTP', 'MCP', 'OAuth', 'PostgreSQL', 'MySQL', 'Redis', 'Oracle Database', 'CloudA Warehouse', 'DataWarehouseA'], { required: true, def: 'HTTP' }),
  select('transportProtocol', 'Transport protocol', ['TCP'], { required: true, def: 'TCP' }),
  num('port', 'Port', { required: true, def: 443, hint: 'The port an edge proxy connects to.' }),
  bool('tls', 'TLS', { def: true }),
  select('tlsVerification', 'TLS verification', ['full', 'none'], { required: true, def: 'full' }),
  text('urlPath', 'URL path', { when: i => i.appProtocol === 'OAuth' }),
  obj('workloadServiceAuthentication', 'How a proxy injects the credential', [
    select('method', 'Method', ['', ...Object.keys(AUTH_SCHEMES)]),
    select('scheme', 'Scheme', i => ['', ...(AUTH_SCHEMES[i.method] || [])], { when: i => !!i.method }),
    text('config', 'Header or parameter name', { when: i => i.scheme === 'Header' || i.scheme === 'Query Parameter' }),
  ], { optional: 'method' }),
  list('httpHeaders', 'Static headers', 'header', [text('key', 'Header name'), text('value', 'Header value')]),
]);

// ---- credential providers v2 (§3.5) ----------------------------------------------------------

const CLAIMS = n => list(n, 'Custom claims', 'claim', [
  text('key', 'Claim', { required: true }), text('value', 'Value', { required: true }),
  select('valueType', 'Value type', LITERAL_DYNAMIC, { def: 'literal' }),
]);
const CUSTOM_PARAMS = list('customParameters', 'Custom parameters', 'parameter', [text('key', 'Key', { required: true }), text('value', 'Value', { required: true })]);
const ISSUED_JWT = [
  text('subject', 'Subject', { required: true, hint: 'Literal, or with ${…} expressions when dynamic.' }),
  select('subjectType', 'Subject type', LITERAL_DYNAMIC, { def: 'literal' }),
  text('audience', 'Audience', { required: true }),
  select('algorithmType', 'Algorithm', ['ES256', 'RS256'], { def: 'ES256' }),
  CLAIMS('customClaims'),
  num('lifetimeTimeSpanSeconds', 'Lifetime (seconds)', { def: 3600, hint: '60–86400.' }),
];
export const CREDENTIAL_TYPES = {
  apikey: { label: 'API key', issues: 'ApiKey', fields: [secret('apiKey', 'API key', { required: true })] },
  'username-password': { label: 'Username and password', issues: 'UsernamePassword', fields: [text('username', 'Username', { required: true }), secret('password', 'Password', { required: true })] },
  'svc-access-token': { label: 'Svc management access token', issues: 'OAuthToken', fields: [ref('roleId', 'Role', 'roles', { required: true }), num('lifetimeInSeconds', 'Lifetime (seconds)', { required: true, def: 3600, hint: '300–43200.' }), num('absoluteTokenLifetime', 'Absolute token lifetime (seconds)')] },
  'oauth-client-credential': { label: 'OAuth2 client credentials', issues: 'OAuthToken', fields: [text('url', 'Token endpoint URL', { required: true }), text('clientID', 'Client ID', { required: true }), secret('clientSecret', 'Client secret'), text('scope', 'Scope'), select('credentialStyle', 'Client authentication', ['authHeader', 'postBody'], { def: 'authHeader' }), CUSTOM_PARAMS] },
  'oauth-authorization-code': { label: 'OAuth2 authorization code', issues: 'OAuthToken', fields: [text('oAuthUrl', 'Authorization-server metadata URL', { required: true }), text('authorizationUrl', 'Authorization URL', { required: true }), text('tokenUrl', 'Token URL', { required: true }), text('introspectionUrl', 'Introspection URL'), text('clientID', 'Client ID', { required: true }), secret('clientSecret', 'Client secret'), text('scope', 'Scope'), bool('isPkceRequired', 'Use PKCE'), text('finalCallbackUrl', 'Final callback URL'), CUSTOM_PARAMS, num('lifetimeTimeSpanSeconds', 'Consent lifetime (seconds)', { def: 2592000 })] },
  'cloudA-sts-oidc': { label: 'cloudA STS (web identity)', issues: 'CloudAStsFederation', fields: [text('cloudAIAMRoleArn', 'Role ARN', { required: true, hint: 'arn:<partition>:iam::<account>:role/<name>' }), num('lifetime', 'Session duration (seconds)', { def: 3600 })] },
  'cloudB-directory-federation': { label: 'cloudB directory federation', issues: 'OAuthToken', fields: [text('audience', 'Audience', { required: true }), text('subject', 'Subject', { required: true }), text('scope', 'Scope', { required: true }), text('cloudBTenant', 'Tenant ID', { required: true }), text('clientId', 'Client ID', { required: true })] },
  'cloudB-key-vault-value': { label: 'cloudB key-vault value', issues: 'ApiKey or UsernamePassword', fields: [ref('credentialProviderIntegrationExternalId', 'Credential integration', 'credential-integrations', { required: true }), text('secretName1', 'Secret name (API key or username)', { required: true }), text('secretName2', 'Secret name (password)'), bool('privateNetworkAccess', 'Private network access')] },
  'cloudC-identity-federation': { label: 'cloudC workload identity federation', issues: 'CloudCWorkloadIdentityFederation', fields: [text('audience', 'Audience', { required: true }), text('serviceAccountEmail', 'Service account e-mail', { required: true }), num('lifetime', 'Lifetime (seconds)', { def: 3600 })] },
  'aiA-wif': { label: 'aiA workload identity federation', issues: 'OAuthToken', fields: [text('federationRuleId', 'Federation rule ID', { required: true }), text('organizationId', 'Organization ID', { required: true }), text('serviceAccountId', 'Service account ID', { required: true }), text('workspaceId', 'Workspace ID'), text('audience', 'Audience'), text('scope', 'Scope', { required: true }), num('lifetime', 'Lifetime (seconds)')] },
  'aiB-wif': { label: 'aiB workload identity federation', issues: 'OAuthToken', fields: [text('identityProviderId', 'Identity provider ID', { required: true }), text('serviceAccountId', 'Service account ID', { required: true }), text('audience', 'Audience')] },
  'ciB-managed-account': { label: 'ciB managed account', issues: 'OAuthToken', fields: [ref('credentialProviderIntegrationExternalId', 'Credential integration', 'credential-integrations', { required: true }), text('groupIds', 'Group IDs or paths'), text('projectIds', 'Project IDs or paths'), select('accessLevel', 'Access level', ['0', '5', '10', '15', '20', '30', '40', '50'], { required: true, def: '30', number: true }), num('lifetimeInSeconds', 'Token lifetime (seconds)', { required: true, def: 86400 }), text('scope', 'Scopes', { required: true }), text('username', 'Account username', { createOnly: true })] },
  'signed-jwt': { label: 'Signed JWT (dataWarehouseA)', issues: 'OAuthToken', fields: [select('tokenConfiguration', 'Token configuration', ['dataWarehouseA'], { required: true, def: 'dataWarehouseA' }), select('algorithmType', 'Algorithm', ['RS256'], { required: true, def: 'RS256' }), text('subject', 'Subject (ACCOUNT.USER)', { required: true }), text('issuer', 'Issuer'), num('lifetime', 'Lifetime (seconds)', { required: true, def: 60 }), secret('privateKey', 'Private key (PKCS#8 PEM)', { textarea: true, hint: 'Leave empty on create to have the service generate a key pair.' })] },
  vaultClientToken: { label: 'Vault client token', issues: 'OAuthToken', fields: [text('vaultHost', 'Vault host', { required: true }), num('port', 'Port', { required: true, def: 8200 }), bool('tls', 'TLS', { def: true }), text('authenticationPath', 'Auth mount path', { required: true, def: 'auth/jwt' }), text('role', 'Role'), text('namespace', 'Namespace'), text('subject', 'Subject', { required: true }), select('subjectType', 'Subject type', LITERAL_DYNAMIC, { def: 'literal' }), num('lifetime', 'JWT lifetime (seconds)', { required: true, def: 60 }), CLAIMS('customClaimNames')] },
  'oidc-id-token': { label: 'OIDC ID token (issued by Svc)', issues: 'OAuthToken', fields: ISSUED_JWT },
  'jwt-svid-token': { label: 'JWT-SVID (issued by Svc)', issues: 'OAuthToken', fields: ISSUED_JWT },
  x509svid: { label: 'X.509-SVID (issued by Svc)', issues: 'X509Svid', fields: [text('spiffeId', 'SPIFFE ID', { required: true }), select('spiffeIdType', 'SPIFFE ID type', LITERAL_DYNAMIC, { def: 'literal' }), text('subject', 'Subject DN'), select('subjectType', 'Subject type', ['', ...LITERAL_DYNAMIC]), bool('idkpClientAuth', 'Client authentication', { def: true }), bool('idkpServerAuth', 'Server authentication'), num('lifetimeTimeSpanSeconds', 'Lifetime (seconds)', { def: 3600 })] },
};

// ---- access policies v2 (§3.8) ---------------------------------------------------------------

const SELECTOR = (...types) => i => types.includes(i.mappingType);
const MAPPINGS = list('credentialProviders', 'Credential providers', 'credential provider', [
  ref('credentialProviderId', 'Credential provider', 'credential-providers', { required: true }),
  select('mappingType', 'Selector', ['None', 'AccountName', 'HttpHeader', 'HttpBody', 'AccessKeyId'], { def: 'None', hint: 'Only when a policy has several providers of one type.' }),
  text('accessKeyId', 'Access key ID', { when: SELECTOR('AccessKeyId') }),
  text('accountName', 'Account name', { when: SELECTOR('AccountName') }),
  text('headerName', 'Header name', { when: SELECTOR('HttpHeader') }),
  text('headerValue', 'Header value', { when: SELECTOR('HttpHeader') }),
  text('httpbodyFieldPath', 'Body field path', { when: SELECTOR('HttpBody') }),
  text('httpbodyFieldValue', 'Body field value', { when: SELECTOR('HttpBody') }),
], { min: 0 });

// ---- access conditions and integrations (§3.10, §3.11) ---------------------------------------

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const VENDOR_INTEGRATION = aud => [
  text('endpoint', 'API endpoint', { required: true }),
  num('syncFrequencySeconds', 'Sync every (seconds)', { required: true, def: 3600, hint: '300–3600.' }),
  text('tokenUrl', 'Token URL', { required: true }),
  text('clientId', 'Client ID', { required: true }),
  secret('clientSecret', 'Client secret', { required: true }),
  text('audience', 'Audience', { required: aud }),
];

// ---- log streams (§3.14) ---------------------------------------------------------------------

const HEC = tokenField => [
  text('hecHostPort', 'Collector host:port', { required: true }),
  tokenField,
  text('hecSourceName', 'Source name', { required: true }),
  bool('tls', 'TLS', { def: true }),
  select('tlsVerification', 'TLS verification', ['full', 'none'], { def: 'full' }),
];

// ---- role permissions (§2.7) -----------------------------------------------------------------

export const PERMISSIONS = ['Access Policies', 'Access Conditions', 'Integrations', 'Client Workloads', 'Server Workloads', 'Trust Providers', 'Credential Providers', 'Credential Provider Integrations', 'Agent Controllers', 'Discovery Integrations', 'Routing Configuration', 'Standalone Certificate Authorities', 'Log Streams', 'Resource Sets', 'Roles', 'Users', 'SignOn Policy', 'Identity Providers', 'Global Policy Compliance', 'Global Policy Compliance Report', 'Audit Logs', 'Access Authorization Events', 'Workload Events'];
export const READ_ONLY_PERMISSIONS = ['Global Policy Compliance Report', 'Audit Logs', 'Access Authorization Events', 'Workload Events'];

// ---- the families ----------------------------------------------------------------------------

const name = e => e.name;
const count = (label, key) => ({ label, value: e => e[key] ?? 0, sort: key, num: true });
const active = { label: 'Active', value: e => e.isActive, bool: true, sort: 'isActive' };
const modified = { label: 'Modified', value: e => e.modifiedAt, time: true, sort: 'modifiedAt' };

/**
 * scope: 'rs' (X-Svc-ResourceSet), 'body' (no header: the body's resourceSet; lists narrowed by
 * `resourceSet:` where the API has that key), 'global'.
 */
export const FAMILIES = [
  {
    key: 'trust-providers', title: 'Trust providers', singular: 'trust provider', perm: 'Trust Providers', scope: 'rs',
    path: '/api/v1/trust-providers', itemsKey: 'trustProviders', created: 'body',
    columns: [{ label: 'Kind', value: e => e.provider, sort: 'provider' }, active, count('Policies', 'accessPolicyCount'), modified],
    discriminator: 'provider', variantLabel: 'Kind',
    variants: Object.fromEntries(Object.keys(TRUST_KINDS).map(k => [k, { label: `${KIND_LABELS[k]} (${k})`, fields: TRUST_FIELDS }])),
    fields: [], filterHint: 'name, or provider:OidcIdToken',
    detail: [
      { label: 'Client ID for /edge/v1/auth', value: e => e.edgeSdkClientId, copy: true },
      { label: 'Access policies using it', value: e => e.accessPolicyCount },
      { label: 'Certificate', value: e => e.publicKeyValidation && `${e.publicKeyValidation.certificateSubject || ''} · expires ${e.publicKeyValidation.expirationDateString || '?'}${e.publicKeyValidation.isValidContent ? '' : ' · not valid: ' + (e.publicKeyValidation.message || '')}` },
    ],
    secrets: e => ['CloudAMetadataService', 'OrchestratorServiceAccount', 'OidcIdToken'].includes(e.provider),
  },
  {
    key: 'client-workloads', title: 'Client workloads', singular: 'client workload', perm: 'Client Workloads', scope: 'rs',
    path: '/api/v1/client-workloads', itemsKey: 'clientWorkloads', created: 'location',
    columns: [{ label: 'Identities', value: e => (e.identities || []).map(i => `${i.type}${i.key ? `[${i.key}]` : ''} = ${i.value}`).join('; ') }, active, count('Policies', 'accessPolicyCount'), modified],
    fields: [
      text('type', 'Label', { hint: 'A free label (e.g. "CI job"), up to 64 characters.' }),
      list('identities', 'Identities', 'identity', [
        select('type', 'Identity type', IDENTITY_TYPES, { required: true }),
        text('value', 'Value', { required: true }),
        text('key', 'Claim name', { when: i => i.type === 'oidcIdToken' }),
      ], { hint: 'How a request is recognised: every type must match; values of one type are ORed. A workload without identities never matches.' }),
      bool('enforceSso', 'Enforce SSO'),
      refs('ssoIdentityProviders', 'SSO identity providers', 'sso-idps'),
    ],
    filterHint: 'name, or identityType:hostname, identity:<value>',
  },
  {
    key: 'server-workloads', title: 'Server workloads', singular: 'server workload', perm: 'Server Workloads', scope: 'rs',
    path: '/api/v1/server-workloads', itemsKey: 'serverWorkloads', created: 'location',
    columns: [{ label: 'Host', value: e => e.serviceEndpoint && e.serviceEndpoint.host, sort: 'serviceEndpoint.host' }, { label: 'Port', value: e => e.serviceEndpoint && e.serviceEndpoint.requestedPort, num: true }, { label: 'Protocol', value: e => e.serviceEndpoint && e.serviceEndpoint.appProtocol }, active, count('Policies', 'accessPolicyCount')],
    fields: [text('type', 'Label'), ENDPOINT],
    filterHint: 'name, or host:api.example.com, port:443',
  },
  {
    key: 'credential-providers', title: 'Credential providers', singular: 'credential provider', perm: 'Credential Providers', scope: 'rs',
    path: '/api/v2/credential-providers', itemsKey: 'credentialProviders', created: 'body',
    columns: [{ label: 'Type', value: e => e.type, sort: 'type' }, active, count('Policies', 'accessPolicyCount'), modified],
    discriminator: 'type', variantLabel: 'Type', variants: CREDENTIAL_TYPES, fields: [],
    filterHint: 'name, or type:apikey',
    detail: [
      { label: 'Issues (credentialType)', value: e => (CREDENTIAL_TYPES[e.type] || {}).issues },
      { label: 'Expires', value: e => e.lifetimeExpiration, time: true },
      { label: 'Public key', value: e => e.keyContent, pre: true },
      { label: 'Callback URL', value: e => e.callBackUrl, copy: true },
      { label: 'Provisioning', value: e => e.status && `${e.status}${e.errorMessage ? ': ' + e.errorMessage : ''}` },
    ],
    actions: [{ label: 'Verify', run: async (api, e) => (await api('GET', `/api/v2/credential-providers/${e.externalId}/verification`)).data, write: false }],
  },
  {
    key: 'access-policies', title: 'Access policies', singular: 'access policy', perm: 'Access Policies', scope: 'body',
    path: '/api/v2/access-policies', itemsKey: 'entities', created: 'body', rsFilter: true, searchParam: 'query',
    columns: [{ label: 'Client workload', value: e => e.clientWorkload && e.clientWorkload.name }, { label: 'Server workload', value: e => e.serverWorkload && e.serverWorkload.name }, { label: 'Credential providers', value: e => (e.credentialProviders || []).map(name).join(', ') }, active, modified],
    defaultOrder: 'modifiedAt desc', policy: true,
    fields: [
      ref('clientWorkload', 'Client workload', 'client-workloads', { required: true }),
      ref('serverWorkload', 'Server workload', 'server-workloads', { required: true }),
      refs('trustProviders', 'Trust providers', 'trust-providers', { hint: 'At least one must attest the workload; none: the token\'s own attestation is enough.' }),
      refs('accessConditions', 'Access conditions', 'access-conditions', { hint: 'All must pass.' }),
      refs('contentSecurity', 'Content security', 'content-security'),
      MAPPINGS,
    ],
    filterHint: 'a name of the policy, its workloads or providers',
  },
  {
    key: 'access-conditions', title: 'Access conditions', singular: 'access condition', perm: 'Access Conditions', scope: 'rs',
    path: '/api/v2/access-conditions', itemsKey: 'accessConditions', created: 'body',
    columns: [{ label: 'Type', value: e => e.integrationType, sort: 'integrationType' }, active, count('Policies', 'accessPolicyCount'), modified],
    discriminator: 'integrationType', variantLabel: 'Type',
    variants: {
      SvcTimeCondition: { label: 'Time of day (SvcTimeCondition)', fields: [
        obj('timezone', 'Time zone', [text('timezone', 'IANA time zone', { required: true, def: 'UTC' })]),
        list('schedule', 'Schedule', 'window', [
          obj('weekDay', 'Day', [select('name', 'Weekday', WEEKDAYS, { required: true, def: 'Monday' })], { flat: true }),
          text('startTime', 'From (HH:mm)', { required: true, def: '09:00' }),
          text('endTime', 'Until (HH:mm)', { required: true, def: '17:00' }),
        ], { min: 1 }),
      ] },
      SvcGeoIPCondition: { label: 'Source country (SvcGeoIPCondition)', fields: [
        list('locations', 'Locations', 'location', [
          text('shortName', 'Country name', { required: true }),
          text('alpha2Code', 'ISO code (alpha-2)'),
          list('subdivisions', 'Subdivisions', 'subdivision', [text('name', 'Name', { required: true }), text('subdivisionCode', 'Code (ISO 3166-2)')]),
        ], { min: 1 }),
      ] },
      SensorA: { label: 'sensorA device (SensorA)', fields: [
        ref('integrationID', 'Integration', 'integrations', { required: true, ref: { filter: 'integrationType:SensorA' } }),
        num('maxLastSeenSeconds', 'Last seen within (seconds)', { required: true, def: 3600 }),
        bool('matchHostname', 'Match hostname'), bool('matchSerialNumber', 'Match serial number'), bool('matchMacAddress', 'Match MAC address'), bool('matchLocalIP', 'Match local IP'), bool('preventRestrictedFunctionalityMode', 'Refuse reduced-functionality mode'),
      ] },
      CloudSecurityAIntegrationApi: { label: 'cloudSecurityA inventory (CloudSecurityAIntegrationApi)', fields: [
        ref('integrationID', 'Integration', 'integrations', { required: true, ref: { filter: 'integrationType:CloudSecurityAIntegrationApi' } }),
        num('maxLastSeenSeconds', 'Last seen within (seconds)', { required: true, def: 3600 }),
        bool('serverless', 'Serverless function'), bool('containerClusterConnected', 'Cluster must be connected'),
      ] },
    },
    fields: [], filterHint: 'name, or integrationType:SvcTimeCondition',
  },
  {
    key: 'integrations', title: 'Integrations', singular: 'integration', perm: 'Integrations', scope: 'rs',
    path: '/api/v2/integrations', itemsKey: 'integrations', created: 'body',
    columns: [{ label: 'Type', value: e => e.integrationType, sort: 'integrationType' }, { label: 'Last sync', value: e => e.lastSync, time: true }, { label: 'Status', value: e => e.lastSyncStatus, outcome: true }, active],
    discriminator: 'integrationType', variantLabel: 'Type',
    variants: { SensorA: { label: 'sensorA (SensorA)', fields: VENDOR_INTEGRATION(false) }, CloudSecurityAIntegrationApi: { label: 'cloudSecurityA (CloudSecurityAIntegrationApi)', fields: VENDOR_INTEGRATION(true) } },
    readOnly: e => e.endpoint === 'builtin', readOnlyWhy: 'Built-in integration: it cannot be changed or deleted.',
    fields: [],
  },
  {
    key: 'credential-integrations', title: 'Credential integrations', singular: 'credential integration', perm: 'Credential Provider Integrations', scope: 'rs',
    path: '/api/v1/credential-integrations', itemsKey: 'entities', created: 'body',
    columns: [{ label: 'Type', value: e => e.type, sort: 'type' }, active, modified],
    discriminator: 'type', variantLabel: 'Type',
    variants: {
      CiB: { label: 'ciB administrator token (CiB)', fields: [text('url', 'ciB URL', { required: true }), secret('personalAccessToken', 'Personal access token', { required: true }), text('userId', 'User ID'), text('topLevelGroupId', 'Top-level group ID')] },
      CloudBDirectoryFederation: { label: 'cloudB directory federation (CloudBDirectoryFederation)', fields: [text('audience', 'Audience', { required: true }), text('subject', 'Subject', { required: true }), text('cloudBTenant', 'Tenant ID', { required: true }), text('clientId', 'Client ID', { required: true }), text('keyVaultName', 'Key vault name', { required: true }), bool('fetchSecretNames', 'Fetch secret names')] },
    },
    fields: [],
  },
  {
    key: 'discovery-integrations', title: 'Discovery', singular: 'discovery integration', perm: 'Discovery Integrations', scope: 'body',
    path: '/api/v1/discovery-integrations', itemsKey: 'integrations', created: 'body',
    columns: [{ label: 'Last sync', value: e => e.lastSync, time: true }, { label: 'Status', value: e => e.lastSyncStatus, outcome: true }, active],
    fields: [
      select('type', 'Type', ['CloudSecurityAIntegrationApi'], { required: true, def: 'CloudSecurityAIntegrationApi' }),
      text('endpoint', 'Inventory API endpoint', { required: true }),
      num('syncFrequencySeconds', 'Sync every (seconds)', { required: true, def: 3600 }),
      { kind: 'jsontext', name: 'discoveryIntegrationJSON', label: 'Credentials', fields: [text('tokenUrl', 'Token URL', { required: true }), text('clientId', 'Client ID', { required: true }), secret('clientSecret', 'Client secret', { required: true }), text('audience', 'Audience', { required: true })] },
    ],
    actions: [{ label: 'Sync now', run: async (api, e) => (await api('POST', `/api/v1/discovery-integrations/${e.externalId}/sync`)).data, write: true }],
    related: e => ({ label: 'Server-workload drafts found', to: `server-workload-drafts?filter=discoveryIntegrationId:${e.externalId}` }),
  },
  {
    key: 'server-workload-drafts', title: 'Server-workload drafts', singular: 'server-workload draft', perm: 'Server Workloads', scope: 'body', readOnlyFamily: true,
    path: '/api/alpha/server-workload-drafts', itemsKey: 'serverWorkloadDrafts',
    columns: [{ label: 'Host', value: e => e.serviceEndpoint && e.serviceEndpoint.host }, { label: 'Port', value: e => e.serviceEndpoint && e.serviceEndpoint.requestedPort, num: true }, { label: 'Last seen', value: e => e.lastSeenAt, time: true }],
    fields: [ENDPOINT], filterHint: 'discoveryIntegrationId:<id>, host:<host>',
    fromDraft: true,
  },
  {
    key: 'content-security', title: 'Content security', singular: 'content security policy', perm: 'Access Policies', scope: 'body',
    path: '/api/v1/content-security', itemsKey: 'entities', created: 'body',
    columns: [{ label: 'Type', value: e => e.type }, active, count('Policies', 'accessPolicyCount')],
    discriminator: 'type', variantLabel: 'Type',
    variants: { SensorAAIDR: { label: 'sensorA AI detection and response (SensorAAIDR)', fields: [text('baseUrl', 'Base URL', { required: true }), secret('encryptedToken', 'API token'), bool('failOpen', 'Allow traffic when the vendor is unreachable'), num('timeoutMs', 'Timeout (ms)', { def: 30000 }), num('maxRetries', 'Retries', { def: 3 })] } },
    fields: [],
  },
  {
    key: 'log-streams', title: 'Log streams', singular: 'log stream', perm: 'Log Streams', scope: 'global',
    path: '/api/v1/log-streams', itemsKey: 'logStreams', created: 'body',
    columns: [{ label: 'Type', value: e => e.type }, { label: 'Records', value: e => e.dataType }, { label: 'Delivered', value: e => e.completedTransactionCount ?? 0, num: true }, { label: 'Errored', value: e => e.erroredTransactionCount ?? 0, num: true, warn: true }, active],
    discriminator: 'type', variantLabel: 'Destination',
    variants: {
      LogAnalyticsAHttpEventCollector: { label: 'logAnalyticsA HTTP event collector', fields: HEC(secret('authenticationToken', 'Authentication token (GUID)', { required: true })) },
      SensorAHttpEventCollector: { label: 'sensorA HTTP event collector', fields: HEC(secret('apiKey', 'API key', { required: true })) },
      ObjectStorageABucket: { label: 'objectStorageA bucket', fields: [text('objectStorageABucketRegion', 'Region', { required: true }), text('objectStorageABucketName', 'Bucket', { required: true }), text('objectStorageAPathPrefix', 'Path prefix')] },
      ObjectStorageCBucket: { label: 'objectStorageC bucket', fields: [text('objectStorageCBucketName', 'Bucket'), text('objectStorageCPathPrefix', 'Path prefix'), text('audience', 'Audience'), text('serviceAccountEmail', 'Service account e-mail'), num('tokenLifetime', 'Token lifetime (seconds)', { def: 3600 })] },
    },
    fields: [select('dataType', 'Records sent', ['AuditLogs', 'AccessAuthorizationEvents', 'WorkloadEvents'], { required: true, def: 'AuditLogs' })],
    detail: [{ label: 'Transactions', value: e => `${e.completedTransactionCount ?? 0} delivered, ${e.erroredTransactionCount ?? 0} errored, ${e.inProgTransactionCount ?? 0} in progress` }],
  },
  {
    key: 'users', title: 'Users', singular: 'user', perm: 'Users', scope: 'global', noBase: true,
    path: '/api/v1/users', itemsKey: 'users', created: 'body', itemUpdate: true, defaultOrder: 'email asc',
    display: e => `${e.firstName || ''} ${e.lastName || ''}`.trim() || e.email,
    columns: [{ label: 'E-mail', value: e => e.email, sort: 'email' }, { label: 'Roles', value: e => (e.rolesDetails || []).map(name).join(', ') }, { label: 'TOTP', value: e => e.twoFactorEnabled, bool: true }, { label: 'Locked', value: e => e.isLocked, bool: true, warnTrue: true }, active],
    fields: [
      text('email', 'E-mail', { required: true }),
      text('firstName', 'First name', { required: true }),
      text('lastName', 'Last name', { required: true }),
      text('phoneNumber', 'Phone number'),
      bool('isActive', 'Active', { def: true }),
      refs('roles', 'Roles', 'roles'),
      secret('password', 'Password', { hint: '12–128 characters. Without a password the user signs in only through SSO.' }),
      TAGS,
    ],
    filterHint: 'email:<address>, role:<role id>, isLocked:true',
    nameField: 'email',
  },
  {
    key: 'roles', title: 'Roles', singular: 'role', perm: 'Roles', scope: 'global',
    path: '/api/v1/roles', itemsKey: 'roles', created: 'body',
    columns: [{ label: 'System', value: e => e.isSystem, bool: true }, count('Users', 'usersCount'), { label: 'Resource sets', value: e => (e.resourceSets || []).map(name).join(', ') }, active],
    readOnly: e => e.isSystem, readOnlyWhy: 'System role: it cannot be changed or deleted.',
    fields: [{ kind: 'permissions', name: 'permissions', label: 'Permissions' }, refs('resourceSets', 'Resource sets', 'resource-sets', { objects: true, hint: 'None: the default resource set.' })],
  },
  {
    key: 'resource-sets', title: 'Resource sets', singular: 'resource set', perm: 'Resource Sets', scope: 'global',
    path: '/api/v1/resource-sets', itemsKey: 'entities', created: 'body',
    columns: [count('Client workloads', 'clientWorkloadCount'), count('Server workloads', 'serverWorkloadCount'), count('Policies', 'accessPolicyCount'), active],
    readOnly: e => e.externalId === 'ffffffff-ffff-ffff-ffff-ffffffffffff', readOnlyWhy: 'The default resource set cannot be changed or deleted.',
    fields: [],
    detail: [{ label: 'Users', value: e => (e.users || []).join(', ') }, { label: 'Roles', value: e => (e.rolesDetails || []).map(name).join(', ') }],
    deleteWarning: 'Deleting a resource set deletes everything in it.',
  },
  {
    key: 'sso-idps', title: 'SSO identity providers', singular: 'SSO identity provider', perm: 'Identity Providers', scope: 'global',
    path: '/api/v1/sso-idps', itemsKey: 'entities', created: 'body',
    columns: [{ label: 'Type', value: e => e.type }, { label: 'Sign-in', value: e => e.userAccessEnabled, bool: true }, active],
    discriminator: 'type', variantLabel: 'Type',
    variants: {
      OIDCv1: { label: 'OpenID Connect (OIDCv1)', fields: [text('oidcBaseURL', 'Issuer URL', { required: true }), text('clientId', 'Client ID', { required: true }), text('scopes', 'Scopes', { required: true, def: 'openid email profile' }), select('authType', 'Client authentication', ['ClientSecret', 'KeyPair'], { required: true, def: 'ClientSecret' }), secret('clientSecret', 'Client secret', { when: (i, r) => r.authType === 'ClientSecret' }), bool('pkceRequired', 'PKCE required', { def: true })] },
      SAMLv2: { label: 'SAML 2 (stored and verified; no sign-in in this version)', fields: [text('entityId', 'Entity ID'), text('metadataUrl', 'Metadata URL'), area('metadataXml', 'Metadata XML (base64)')] },
    },
    fields: [
      bool('userAccessEnabled', 'Users may sign in through it'),
      list('ssoStatementRoleMappings', 'Role mappings', 'role mapping', [text('attributeName', 'Claim'), text('attributeValue', 'Value'), ref('roleExternalId', 'Role', 'roles', { required: true })]),
    ],
    detail: [{ label: 'Redirect URL to register', value: e => e.svcRedirectUrl, copy: true }, { label: 'JWKS URL (KeyPair)', value: e => e.svcJwksUrl, copy: true }],
    actions: [{ label: 'Verify', run: async (api, e) => (await api('GET', `/api/v1/sso-idps/${e.externalId}/verification`)).data, write: false }],
  },
  {
    key: 'agent-controllers', title: 'Agent controllers', singular: 'agent controller', perm: 'Agent Controllers', scope: 'global',
    path: '/api/v1/agent-controllers', itemsKey: 'agentControllers', created: 'body',
    columns: [{ label: 'Healthy', value: e => e.isHealthy, bool: true }, { label: 'Version', value: e => e.version }, { label: 'TLS hostname', value: e => e.allowedTlsHostname }, active],
    fields: [ref('trustProviderId', 'Trust provider', 'trust-providers'), text('allowedTlsHostname', 'Allowed TLS hostname'), text('version', 'Version')],
    actions: [{ label: 'Create device code', run: async (api, e) => { const d = (await api('POST', `/api/v1/agent-controllers/${e.externalId}/device-code`)).data; return { success: true, message: `Device code ${d.device_code} (valid 15 minutes, single use).` }; }, write: true }],
  },
  {
    key: 'routings', title: 'Routings', singular: 'routing', perm: 'Routing Configuration', scope: 'global', noDelete: true,
    path: '/api/v1/routings', itemsKey: 'entities', created: 'body',
    columns: [{ label: 'Proxy', value: e => e.proxyUrl }, active],
    fields: [ref('resourceSetId', 'Resource set', 'resource-sets', { required: true }), text('proxyUrl', 'Proxy URL', { required: true, hint: 'http(s)://host:port' })],
  },
];

export const FAMILY = Object.fromEntries(FAMILIES.map(f => [f.key, f]));
for (const f of FAMILIES) {
  if (!f.noBase) f.formFields = [...BASE, ...f.fields];
  else f.formFields = f.fields;
  f.itemPath = id => `${f.path}/${id}`;
  if (!f.noBase && !f.readOnlyFamily) f.formTail = BASE_END;
  f.display = f.display || (e => e.name);
}

/** The fields of one entity's form: base, the variant's, tags. */
export function fieldsOf(f, variant) {
  const v = f.variants && variant ? (f.variants[variant] || { fields: [] }).fields : [];
  if (f.noBase) return f.formFields;
  return [...BASE, ...v, ...f.fields, ...(f.formTail || [])];
}
