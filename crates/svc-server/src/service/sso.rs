//! SSO: the verification of identity providers (§3.20: OIDC discovery, SAML metadata read with
//! quick-xml) and sign-in through an `OIDCv1` provider (§2.3): authorization-code flow with PKCE,
//! a single-use `state` kept in the shared `pending_states` table (so it completes on any node),
//! `nonce`, ID-token verification through the trust code's key cache and JWS checks,
//! `client_secret_basic` or `private_key_jwt` (the service's RS256 key), user lookup or creation,
//! role mapping, and one audit entry per attempt.

use serde_json::{Map, Value, json};
use svc_api::mgmt::SsoExchangeDto;
use uuid::Uuid;

use crate::app::App;
use crate::domain::records::{SUPER_ADMIN_ROLE, SsoLink, User, UserSecrets};
use crate::domain::sso::{IdpConfig, OidcAuthType, RoleMapping, SsoIdp};
use crate::domain::{Actor, DEFAULT_RESOURCE_SET, Kind};
use crate::error::{Error, Result};
use crate::events::audit::{Activity, ClientInfo};
use crate::service::auth::{LoginResponse, mint_user_token};
use crate::service::login::Mfa;
use crate::service::write::{Author, Write};
use crate::trust::jwt::{self, ASYMMETRIC, Audience, Issuer, Keys, Profile};
use crate::trust::keycache;

/// `pending_states.purpose` of an SSO sign-in.
const PURPOSE: &str = "sso-login";
/// A sign-in must complete within 10 minutes (§2.3).
const STATE_TTL_MS: i64 = 10 * 60 * 1000;
const CATEGORY: &str = "Authentication";

/// 401 for every failure after the `state` was accepted; the reason goes to the audit entry.
pub const FAILED: &str = "SSO sign-in failed.";
pub const INACTIVE: &str = "The account is inactive.";

// ---- verification (§3.20) ----------------------------------------------------------------------

/// What a SAML IdP's metadata must name.
#[derive(Debug, PartialEq)]
pub struct SamlMetadata {
    pub entity_id: String,
    pub sso_url: String,
    /// Subject of the signing certificate.
    pub cert_subject: String,
    pub cert_not_after: crate::domain::Timestamp,
}

fn attr(e: &quick_xml::events::BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned())
        })
}

/// Reads an IdP's SAML metadata: the `EntityDescriptor`'s `entityID`, the first
/// `SingleSignOnService` `Location` of its `IDPSSODescriptor`, and its signing certificate (a
/// `KeyDescriptor` with `use="signing"` or without `use`). Namespace prefixes are ignored; a
/// DOCTYPE is refused (no entity expansion).
pub fn parse_saml_metadata(xml: &str) -> std::result::Result<SamlMetadata, String> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    r.config_mut().check_end_names = true;
    let mut stack: Vec<String> = Vec::new();
    let mut entity_id = None;
    let mut sso_url = None;
    let mut cert_b64: Option<String> = None;
    let mut in_idp = false;
    let mut key_use_ok = false;
    let mut reading_cert = false;
    let mut cert_text = String::new();
    loop {
        // The position only: the parser's message quotes the document, which may be what a
        // service inside the network answered a metadataUrl (issue 31).
        let ev = r
            .read_event()
            .map_err(|_| format!("not well-formed XML (at byte {})", r.error_position()))?;
        match ev {
            Event::Eof => break,
            Event::DocType(_) => return Err("a DOCTYPE is not allowed".into()),
            Event::Start(ref e) | Event::Empty(ref e) => {
                let start = matches!(ev, Event::Start(_));
                let name = e.local_name().as_ref().to_string();
                match name.as_str() {
                    "EntityDescriptor" if entity_id.is_none() => entity_id = attr(e, "entityID"),
                    "IDPSSODescriptor" if start => in_idp = true,
                    "SingleSignOnService" if in_idp && sso_url.is_none() => sso_url = attr(e, "Location"),
                    "KeyDescriptor" if in_idp && start => {
                        key_use_ok = attr(e, "use").is_none_or(|u| u == "signing");
                    }
                    "X509Certificate" if start && in_idp && key_use_ok && cert_b64.is_none() => {
                        reading_cert = true;
                        cert_text.clear();
                    }
                    _ => {}
                }
                if start {
                    if stack.len() >= 64 {
                        return Err("nested too deeply".into());
                    }
                    stack.push(name);
                }
            }
            Event::Text(t) if reading_cert => cert_text.push_str(&t.xml10_content()),
            Event::End(e) => {
                let name = e.local_name().as_ref().to_string();
                match name.as_str() {
                    "IDPSSODescriptor" => in_idp = false,
                    "KeyDescriptor" => key_use_ok = false,
                    "X509Certificate" if reading_cert => {
                        reading_cert = false;
                        cert_b64 = Some(std::mem::take(&mut cert_text));
                    }
                    _ => {}
                }
                stack.pop();
            }
            _ => {}
        }
    }
    let entity_id = entity_id
        .filter(|s| !s.is_empty())
        .ok_or("no EntityDescriptor with an entityID")?;
    let sso_url = sso_url
        .filter(|s| !s.is_empty())
        .ok_or("no IDPSSODescriptor with a SingleSignOnService Location")?;
    let cert_b64 = cert_b64.ok_or("no signing certificate in the IDPSSODescriptor")?;
    let clean: String = cert_b64.chars().filter(|c| !c.is_whitespace()).collect();
    let der = crate::crypto::b64std_decode(&clean).ok_or("the signing certificate is not base64")?;
    let info =
        crate::crypto::x509::cert_info(&der).map_err(|e| format!("the signing certificate cannot be read: {e}"))?;
    Ok(SamlMetadata {
        entity_id,
        sso_url,
        cert_subject: info.subject,
        cert_not_after: info.not_after,
    })
}

/// The OIDC discovery document of `base` (its `{base}/.well-known/openid-configuration`).
async fn discovery(app: &App, base: &str) -> std::result::Result<Map<String, Value>, String> {
    let url = app
        .upstream
        .check_joined(base, "/.well-known/openid-configuration")
        .map_err(|e| format!("oidcBaseURL: {e}"))?;
    match app.upstream.get_json(url.as_str()).await {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("discovery document is not a JSON object".into()),
        // One message whether nothing answered or something refused: this answer goes to
        // whoever configured the URL, which may name a service inside the network (issue 31:
        // telling them apart makes a port scanner). The log has the cause.
        Err(e) => {
            tracing::info!(error = %e, "discovery document could not be read");
            Err("discovery document could not be read".into())
        }
    }
}

fn doc_str<'d>(doc: &'d Map<String, Value>, key: &str) -> Option<&'d str> {
    doc.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// §3.20 verification: `Ok(message)` when the configuration is complete and usable, else the
/// first problem.
pub async fn verify_idp(app: &App, idp: &SsoIdp) -> std::result::Result<String, String> {
    match &idp.config {
        IdpConfig::Oidc {
            base_url, auth_type, ..
        } => {
            if *auth_type == OidcAuthType::ClientSecret && idp.secrets.client_secret.is_none() {
                return Err("clientSecret: is required for authType ClientSecret".into());
            }
            let doc = discovery(app, base_url).await?;
            for key in ["issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"] {
                if doc_str(&doc, key).is_none() {
                    return Err(format!("discovery document has no {key}"));
                }
            }
            Ok("The OIDC identity provider is reachable and completely configured.".into())
        }
        IdpConfig::Saml {
            entity_id,
            metadata_url,
            metadata_xml,
        } => {
            let xml = match (metadata_xml, metadata_url) {
                (Some(b64), _) => crate::crypto::b64std_decode(b64)
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or("metadataXml: is not base64 of UTF-8 XML")?,
                (None, Some(url)) => {
                    app.upstream.check_url(url).map_err(|e| format!("metadataUrl: {e}"))?;
                    // One message whether nothing answered or something refused (see
                    // `discovery`); the log has the cause.
                    let unread = |cause: String| {
                        tracing::info!(error = %cause, "SAML metadata could not be fetched");
                        "metadata could not be fetched".to_string()
                    };
                    let f = app
                        .upstream
                        .send(app.upstream.client.get(url))
                        .await
                        .map_err(|e| unread(e.to_string()))?;
                    if !(200..300).contains(&f.status) {
                        return Err(unread(format!("status {}", f.status)));
                    }
                    String::from_utf8(f.body).map_err(|_| "metadata is not UTF-8")?
                }
                (None, None) => return Err("metadataUrl: no metadata configured".into()),
            };
            let md = parse_saml_metadata(&xml).map_err(|e| format!("metadata: {e}"))?;
            if let Some(want) = entity_id
                && *want != md.entity_id
            {
                return Err(format!(
                    "entityId: does not match the metadata's entityID {}",
                    md.entity_id
                ));
            }
            if md.cert_not_after.millis() < crate::clock::now_millis() {
                return Err(format!(
                    "metadata: the signing certificate ({}) has expired",
                    md.cert_subject
                ));
            }
            Ok(format!(
                "The SAML metadata names entity {}, its SSO service and a signing certificate ({}).",
                md.entity_id, md.cert_subject
            ))
        }
    }
}

// ---- sign-in (§2.3) ----------------------------------------------------------------------------

/// `pending_states.purpose` of a sign-in the identity provider completed, waiting for
/// `POST /api/v1/sso/exchange` (the console's flow, or a TOTP code).
const PURPOSE_DONE: &str = "sso-done";
/// A completed sign-in's code is exchanged within 5 minutes, with at most 5 TOTP attempts.
const DONE_TTL_MS: i64 = 5 * 60 * 1000;
const DONE_ATTEMPTS: i64 = 5;
/// Where the console receives a sign-in's outcome (`#sso-code=` or `#sso-error=`).
pub const CONSOLE_RETURN: &str = "/console/";
/// The cookie that binds a console sign-in to the browser that started it (HttpOnly,
/// `SameSite=Lax`, path `/api/v1/sso`): the callback and `POST /api/v1/sso/exchange` of that
/// sign-in need it (issue 31: a code from someone else's sign-in, sent to a victim as a link,
/// would otherwise sign the victim into the sender's account).
pub const BINDING_COOKIE: &str = "svc_sso_binding";

/// What a sign-in keeps of its browser binding: a hash, so the stored state does not hold the
/// cookie's value.
fn binding_hash(b: &str) -> String {
    crate::crypto::b64url(&crate::crypto::sha256(b.as_bytes()))
}

/// Whether a stored sign-in (`data`) may go on in a browser presenting `binding`: one bound at
/// its start needs the same value; one that was not (the API's flow) needs nothing.
fn bound_here(data: &Value, binding: Option<&str>) -> bool {
    match data.get("bind").and_then(Value::as_str) {
        None => true,
        Some(want) => binding.is_some_and(|b| binding_hash(b) == want),
    }
}

/// The error codes an identity provider's `error` parameter may carry (RFC 6749 §4.1.2.1, OIDC
/// Core §3.1.2.6); any other text the caller put there is not recorded (issue 31).
const IDP_ERRORS: &[&str] = &[
    "invalid_request",
    "unauthorized_client",
    "access_denied",
    "unsupported_response_type",
    "invalid_scope",
    "server_error",
    "temporarily_unavailable",
    "interaction_required",
    "login_required",
    "account_selection_required",
    "consent_required",
    "invalid_request_uri",
    "invalid_request_object",
    "request_not_supported",
    "request_uri_not_supported",
    "registration_not_supported",
];

/// `amr` values (RFC 8176) that name a factor beyond a password: an ID token carrying one
/// satisfies `mfaRequired` by itself (issue 31).
const SECOND_FACTORS: &[&str] = &[
    "mfa", "otp", "hwk", "swk", "sc", "sms", "tel", "fpt", "face", "iris", "retina", "vbm",
];

/// The IdP a sign-in may use: active, `OIDCv1`, `userAccessEnabled`.
fn usable(app: &App, id: Uuid) -> Option<std::sync::Arc<SsoIdp>> {
    app.state().sso_idps.get(&id).filter(|i| i.offers_sign_in()).cloned()
}

/// Where a sign-in returns: the caller of the API (the callback answers the token), or the
/// console (the callback redirects to it with a code for `POST /api/v1/sso/exchange`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Return {
    Api,
    Console,
}

/// `GET /api/v1/sso/login/{idpId}`: the authorization URL to redirect to (after storing the
/// single-use state with its nonce and PKCE verifier). `404` for an IdP that offers no sign-in;
/// `429` for an address that started too many (each start stores a state and fetches the
/// discovery document: issue 31), sharing the sign-in throttle's rate. `binding`: a console
/// sign-in's browser binding (the value of the cookie the start sets, `BINDING_COOKIE`); the
/// callback and the code's exchange then need the same browser (no login CSRF: a code someone
/// else's sign-in earned signs nobody in).
pub async fn start(app: &App, idp_id: Uuid, ret: Return, client: &ClientInfo, binding: Option<&str>) -> Result<String> {
    let now = crate::clock::now_millis();
    app.sso_throttle
        .check(client.source.as_deref(), now)
        .map_err(Error::TooManyRequests)?;
    app.sso_throttle.failed(client.source.as_deref(), now);
    crate::service::load::catch_up(app).await;
    let idp = usable(app, idp_id).ok_or(Error::NotFound)?;
    let IdpConfig::Oidc {
        base_url,
        client_id,
        scopes,
        ..
    } = &idp.config
    else {
        return Err(Error::NotFound);
    };
    let doc = discovery(app, base_url).await.map_err(Error::internal)?;
    let auth = doc_str(&doc, "authorization_endpoint")
        .ok_or_else(|| Error::internal("discovery document has no authorization_endpoint"))?;
    let mut url = app
        .upstream
        .check_url(auth)
        .map_err(|e| Error::internal(format!("authorization_endpoint: {e}")))?;
    let state = crate::crypto::random_token();
    let nonce = crate::crypto::random_token();
    let verifier = crate::crypto::random_token();
    let challenge = crate::crypto::b64url(&crate::crypto::sha256(verifier.as_bytes()));
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", &redirect_url(&app.cfg))
        .append_pair("scope", scopes)
        .append_pair("state", &state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    let mut data = json!({
        "idp": idp_id, "nonce": nonce, "verifier": verifier,
        "console": ret == Return::Console,
    });
    if let Some(b) = binding {
        data["bind"] = json!(binding_hash(b));
    }
    crate::service::pending::put(app, &state, PURPOSE, &data, now + STATE_TTL_MS).await?;
    Ok(url.to_string())
}

/// `{base_url}/api/v1/sso/callback` (§2.3).
pub fn redirect_url(cfg: &crate::config::Config) -> String {
    format!("{}/api/v1/sso/callback", cfg.public_url)
}

/// A failed attempt: its audit entry (target the user's e-mail or id when known, else the IdP).
async fn fail(
    app: &App,
    client: &ClientInfo,
    target: String,
    email: Option<String>,
    reason: String,
    err: Error,
) -> Error {
    tracing::info!(target = %target, reason = %reason, "SSO sign-in refused");
    let actor = Actor::Anonymous { email };
    if let Err(e) = crate::service::login::audit_failed_sign_in(app, target, &actor, client, reason).await {
        return e;
    }
    err
}

/// The private_key_jwt client assertion (RFC 7523): RS256 under the service's current published
/// key, `iss` = `sub` = the client id, `aud` = the token endpoint. A client id that is the
/// service's own issuer is refused when the IdP is written; refused here too (issue 31).
fn client_assertion(app: &App, client_id: &str, token_endpoint: &str) -> std::result::Result<String, String> {
    if client_id.trim_end_matches('/') == app.cfg.issuer().trim_end_matches('/') {
        return Err("clientId is the service's issuer".into());
    }
    let now_ms = crate::clock::now_millis();
    let key = app.keys().rsa_signer(now_ms);
    let now = now_ms / 1000;
    let claims = json!({
        "iss": client_id, "sub": client_id, "aud": token_endpoint,
        "jti": Uuid::new_v4(), "iat": now, "exp": now + 300,
    });
    Ok(crate::crypto::jose::sign_rs256(
        &key.pair,
        Some(&key.kid),
        claims.to_string().as_bytes(),
    ))
}

/// `application/x-www-form-urlencoded` of one value (RFC 6749 §2.3.1 encodes the client id and
/// secret so before Basic authentication).
fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Exchanges the code and verifies the ID token; returns its claims.
async fn exchange(
    app: &App,
    idp: &SsoIdp,
    code: &str,
    nonce: &str,
    verifier: &str,
) -> std::result::Result<Map<String, Value>, String> {
    let IdpConfig::Oidc {
        base_url,
        client_id,
        auth_type,
        ..
    } = &idp.config
    else {
        return Err("the identity provider is not OIDCv1".into());
    };
    let doc = discovery(app, base_url).await?;
    let token_endpoint = doc_str(&doc, "token_endpoint").ok_or("discovery document has no token_endpoint")?;
    app.upstream
        .check_url(token_endpoint)
        .map_err(|e| format!("token_endpoint: {e}"))?;
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", "authorization_code".into()),
        ("code", code.into()),
        ("redirect_uri", redirect_url(&app.cfg)),
        ("code_verifier", verifier.into()),
    ];
    let mut req = app
        .upstream
        .client
        .post(token_endpoint)
        .header("accept", "application/json");
    match auth_type {
        OidcAuthType::ClientSecret => {
            let secret = idp.secrets.client_secret.as_ref().ok_or("no client secret is stored")?;
            let basic = crate::crypto::b64std(
                format!("{}:{}", form_encode(client_id), form_encode(secret.expose())).as_bytes(),
            );
            req = req.header("authorization", format!("Basic {basic}"));
        }
        OidcAuthType::KeyPair => {
            form.push(("client_id", client_id.clone()));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            form.push(("client_assertion", client_assertion(app, client_id, token_endpoint)?));
        }
    }
    let f = app
        .upstream
        .send(req.form(&form))
        .await
        .map_err(|e| format!("token endpoint: {e}"))?;
    if !(200..300).contains(&f.status) {
        return Err(format!("token endpoint answered {}", f.refusal()));
    }
    let answer: Value = serde_json::from_slice(&f.body).unwrap_or(Value::Null);
    let id_token = answer
        .get("id_token")
        .and_then(Value::as_str)
        .ok_or("the token response has no id_token")?;
    let profile = Profile {
        algs: ASYMMETRIC,
        issuer: Issuer::Discovered,
        audience: Audience::Contains(client_id),
    };
    let claims = jwt::verify(
        &app.verify_cx(),
        id_token,
        Keys::Fetched(base_url, keycache::Kind::Discovery),
        &[],
        &profile,
    )
    .await
    .map_err(|e| format!("ID token rejected: {e:?}"))?;
    if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
        return Err("ID token rejected: nonce does not match".into());
    }
    Ok(claims)
}

/// Whether a mapping row matches the ID token: the claim equals the value (string claim) or
/// contains it (array claim).
pub fn mapping_matches(m: &RoleMapping, claims: &Map<String, Value>) -> bool {
    let (Some(name), Some(want)) = (&m.attribute_name, &m.attribute_value) else {
        return false;
    };
    match claims.get(name) {
        Some(Value::String(s)) => s == want,
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(want.as_str())),
        Some(Value::Bool(b)) => b.to_string() == *want,
        Some(Value::Number(n)) => n.to_string() == *want,
        _ => false,
    }
}

/// Whether the IdP vouches for the e-mail address (`email_verified` true, as a boolean or the
/// string some IdPs send): an address it has not verified names nobody, whoever typed it in at
/// the IdP ("nOAuth", issue 31). Absent is not verified.
fn email_verified(claims: &Map<String, Value>) -> bool {
    match claims.get("email_verified") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// Whether the ID token says the user gave a second factor at the IdP (`amr`, RFC 8176).
fn second_factor(claims: &Map<String, Value>) -> bool {
    claims
        .get("amr")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().filter_map(Value::as_str).any(|m| SECOND_FACTORS.contains(&m)))
}

/// How a sign-in the IdP completed ends.
pub enum Finished {
    /// The token (the API's flow, no second factor owed).
    Token(LoginResponse),
    /// A code for `POST /api/v1/sso/exchange`; `totp`: the exchange needs a TOTP code.
    Code { code: String, totp: bool },
}

/// What the callback did, and where its answer goes.
pub struct Callback {
    pub ret: Return,
    pub result: Result<Finished>,
}

/// `GET /api/v1/sso/callback?code=&state=`: completes the sign-in. Errors before the `state`
/// is known answer the API's way (`400`).
pub async fn callback(
    app: &App,
    code: Option<String>,
    state: Option<String>,
    idp_error: Option<String>,
    client: &ClientInfo,
    binding: Option<&str>,
) -> Result<Callback> {
    let state = state
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::field("state", "is required"))?;
    let data = crate::service::pending::take(app, &state, PURPOSE, crate::clock::now_millis())
        .await?
        .ok_or_else(|| Error::field("state", "unknown or expired"))?;
    let idp_id = data
        .get("idp")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| Error::internal("stored SSO state without an IdP"))?;
    let ret = match data.get("console").and_then(Value::as_bool) {
        Some(true) => Return::Console,
        _ => Return::Api,
    };
    if !bound_here(&data, binding) {
        let e = fail(
            app,
            client,
            idp_id.to_string(),
            None,
            "the sign-in was finished in another browser than the one that started it".into(),
            Error::LoginRejected(FAILED),
        )
        .await;
        return Ok(Callback { ret, result: Err(e) });
    }
    let result = complete(app, &data, idp_id, ret, code, idp_error, client).await;
    Ok(Callback { ret, result })
}

async fn complete(
    app: &App,
    data: &Value,
    idp_id: Uuid,
    ret: Return,
    code: Option<String>,
    idp_error: Option<String>,
    client: &ClientInfo,
) -> Result<Finished> {
    let target = idp_id.to_string();
    let rejected = Error::LoginRejected(FAILED);
    if let Some(e) = idp_error {
        // The caller chose this text: only a code of the protocol is recorded (issue 31).
        let reason = match IDP_ERRORS.contains(&e.as_str()) {
            true => format!("the identity provider answered error={e}"),
            false => "the identity provider answered an error".to_string(),
        };
        return Err(fail(app, client, target, None, reason, rejected).await);
    }
    let Some(code) = code.filter(|c| !c.is_empty()) else {
        return Err(Error::field("code", "is required"));
    };
    crate::service::load::catch_up(app).await;
    let Some(idp) = usable(app, idp_id) else {
        let reason = "the identity provider no longer offers sign-in".to_string();
        return Err(fail(app, client, target, None, reason, rejected).await);
    };
    let nonce = data.get("nonce").and_then(Value::as_str).unwrap_or_default();
    let verifier = data.get("verifier").and_then(Value::as_str).unwrap_or_default();
    let claims = match exchange(app, &idp, &code, nonce, verifier).await {
        Ok(c) => c,
        Err(reason) => return Err(fail(app, client, target, None, reason, rejected).await),
    };
    let text = |k: &str| {
        claims
            .get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let (Some(email), Some(subject), Some(issuer)) = (text("email"), text("sub"), text("iss")) else {
        let reason = "the ID token has no email, sub or iss claim".to_string();
        return Err(fail(app, client, target, None, reason, rejected).await);
    };
    let account = Account {
        email,
        issuer,
        subject,
        verified: email_verified(&claims),
        second_factor: second_factor(&claims),
    };
    let user = sign_in(app, &idp, &claims, &account, client).await?;
    let now = crate::clock::now_millis();
    let totp = match crate::service::login::mfa_needed(&app.state().settings(), &user, now) {
        Mfa::NotNeeded => false,
        _ if account.second_factor => false,
        Mfa::Totp => true,
        Mfa::GraceOver => {
            lock_for_mfa(app, &user, client).await?;
            return Err(Error::LoginRejected(crate::service::login::LOCKED));
        }
    };
    if ret == Return::Api && !totp {
        audit_success(app, &user, client).await?;
        return Ok(Finished::Token(mint_user_token(app, &user, "sso")));
    }
    let code = crate::crypto::random_token();
    let mut done = json!({"user": user.id, "sv": user.session_epoch, "totp": totp, "attempts": DONE_ATTEMPTS});
    if let Some(b) = data.get("bind") {
        done["bind"] = b.clone();
    }
    crate::service::pending::put(app, &code, PURPOSE_DONE, &done, now + DONE_TTL_MS).await?;
    Ok(Finished::Code { code, totp })
}

/// Who the ID token names.
struct Account {
    email: String,
    issuer: String,
    subject: String,
    /// `email_verified` is true.
    verified: bool,
    /// `amr` names a second factor.
    second_factor: bool,
}

/// How the IdP's account is the user's (issue 31).
enum Binding {
    /// Bound before, through this IdP at the same server and client.
    Bound,
    /// An existing account, bound now by its verified e-mail (trusted IdPs only).
    Linked,
    /// Created now.
    Created,
}

/// Finds (or binds, or creates) the user, applies the role mapping, records the binding; the
/// audit entry of success is written once the sign-in is complete.
async fn sign_in(
    app: &App,
    idp: &SsoIdp,
    claims: &Map<String, Value>,
    account: &Account,
    client: &ClientInfo,
) -> Result<std::sync::Arc<User>> {
    let IdpConfig::Oidc {
        base_url, client_id, ..
    } = &idp.config
    else {
        return Err(Error::LoginRejected(FAILED));
    };
    let is_link = |l: &SsoLink| {
        l.idp == idp.meta.id
            && l.base_url == *base_url
            && l.client_id == *client_id
            && l.issuer == account.issuer
            && l.subject == account.subject
    };
    let mut w = Write::begin_system(app).await?;
    let mut mapped: Vec<Uuid> = Vec::new();
    for m in idp.mappings.iter().filter(|m| mapping_matches(m, claims)) {
        if w.st.roles.contains_key(&m.role) && !mapped.contains(&m.role) {
            mapped.push(m.role);
        }
    }
    let bound = w.st.users.values().find(|u| u.sso_links.iter().any(is_link)).cloned();
    let refuse = |reason: &str, target: String| (reason.to_string(), target);
    let found = match bound {
        Some(u) => Ok(((*u).clone(), Binding::Bound)),
        None if !account.verified => Err(refuse(
            "the ID token's email is not verified (email_verified is not true)",
            account.email.clone(),
        )),
        None => match w.st.user_by_email(&account.email).cloned() {
            Some(u) if u.sso_links.iter().any(|l| l.idp == idp.meta.id) => Err(refuse(
                "the account is bound to another account of this identity provider",
                u.id.to_string(),
            )),
            Some(u) if !idp.trusted => Err(refuse(
                "the identity provider may not sign in an account it is not bound to (it was last \
                 written by a caller without all of SuperAdmin's rights)",
                u.id.to_string(),
            )),
            Some(u) => Ok(((*u).clone(), Binding::Linked)),
            None if mapped.is_empty() => Err(refuse(
                "no user with this e-mail and no role mapping matched",
                account.email.clone(),
            )),
            None => {
                let seq = w.next_seq(Kind::User).await?;
                Ok((new_user(claims, &account.email, seq, w.now, &mapped), Binding::Created))
            }
        },
    };
    // An IdP no SuperAdmin vouched for signs an account in only while everything it holds is
    // what the IdP maps (issue 31): once someone gave the account more, that IdP no longer speaks
    // for it.
    let found = found.and_then(|(u, b)| {
        let mappable = |r: &Uuid| idp.mappings.iter().any(|m| m.role == *r);
        if matches!(b, Binding::Bound) && !idp.trusted && !u.roles.iter().all(mappable) {
            return Err(refuse(
                "the account holds roles this identity provider does not map (only a trusted \
                 identity provider signs it in)",
                u.id.to_string(),
            ));
        }
        Ok((u, b))
    });
    let (mut user, binding) = match found {
        Ok(f) => f,
        Err((reason, target)) => {
            drop(w);
            let email = Some(account.email.clone());
            return Err(fail(app, client, target, email, reason, Error::LoginRejected(FAILED)).await);
        }
    };
    let system = Author {
        actor: Actor::System,
        client: client.clone(),
    };
    let target = user.id.to_string();
    let refused = if !user.active {
        Some((INACTIVE, "inactive user"))
    } else if user.is_locked_for(client.source.as_deref(), w.now.millis()) {
        Some((crate::service::login::LOCKED, "account locked"))
    } else {
        None
    };
    if let Some((msg, reason)) = refused {
        w.audit_failure(
            &user_author(&user, client),
            DEFAULT_RESOURCE_SET,
            CATEGORY,
            Activity::LoginFailed,
            &target,
            reason,
        );
        w.commit().await?;
        return Err(Error::LoginRejected(msg));
    }
    let link = SsoLink {
        idp: idp.meta.id,
        base_url: base_url.clone(),
        client_id: client_id.clone(),
        issuer: account.issuer.clone(),
        subject: account.subject.clone(),
        created: matches!(binding, Binding::Created),
    };
    match binding {
        Binding::Created => {
            user.sso_links.push(link);
            w.put(user.clone());
            w.audit(&system, DEFAULT_RESOURCE_SET, "Users", Activity::Created, &target);
        }
        Binding::Linked | Binding::Bound => {
            let mut changed = false;
            if matches!(binding, Binding::Linked) {
                // The IdP vouches for this person, not for credentials someone else may have set
                // on the account before it was bound: a pre-created password, an authenticator,
                // another IdP's binding (issue 31, account pre-hijacking). From now on the
                // account signs in through this IdP; a SuperAdmin's own credentials stay (no one
                // but a SuperAdmin can have set them: the rule of acting on users).
                if !user.roles.contains(&SUPER_ADMIN_ROLE) {
                    user.secrets.password_hash = None;
                    user.secrets.totp.clear();
                    user.tokens.clear();
                    user.sso_links.clear();
                    user.end_sessions();
                }
                user.sso_links.push(link);
                changed = true;
            }
            // Mapped roles apply to a user the IdP created, or when a trusted caller wrote
            // the IdP: otherwise whoever configured it could give or take any account's roles.
            let created_here = user.sso_links.iter().any(|l| is_link(l) && l.created);
            if !mapped.is_empty() && (idp.trusted || created_here) {
                // The last active SuperAdmin keeps SuperAdmin (§3.18): a mapping must not leave
                // the installation without one.
                let last_super_admin = user.roles.contains(&SUPER_ADMIN_ROLE)
                    && !w
                        .st
                        .users
                        .values()
                        .any(|u| u.id != user.id && u.active && u.roles.contains(&SUPER_ADMIN_ROLE));
                if last_super_admin && !mapped.contains(&SUPER_ADMIN_ROLE) {
                    mapped.push(SUPER_ADMIN_ROLE);
                }
                let same = user.roles.len() == mapped.len() && mapped.iter().all(|r| user.roles.contains(r));
                if !same {
                    user.roles = mapped;
                    // A role change ends the user's other sessions (issue 22); this one is
                    // minted after.
                    user.end_sessions();
                    changed = true;
                }
            }
            if changed {
                user.modified_at = w.now;
                user.modified_by = system.actor.label();
                w.put(user.clone());
                w.audit(&system, DEFAULT_RESOURCE_SET, "Users", Activity::Updated, &target);
            }
        }
    }
    let st = w.commit().await?;
    st.users
        .get(&user.id)
        .cloned()
        .ok_or_else(|| Error::internal("a signed-in user is missing from the state"))
}

/// A user the IdP creates (§2.3): names from the ID token, the mapped roles.
fn new_user(claims: &Map<String, Value>, email: &str, seq: i32, now: crate::domain::Timestamp, roles: &[Uuid]) -> User {
    let name = |k: &str, d: &str| {
        claims
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(d)
            .to_string()
    };
    let label = Actor::System.label();
    User {
        id: Uuid::new_v4(),
        seq,
        email: email.to_string(),
        first_name: name("given_name", "SSO"),
        last_name: name("family_name", "User"),
        phone_number: None,
        roles: roles.to_vec(),
        active: true,
        locked: false,
        failed_logins: 0,
        source_locks: vec![],
        sso_links: vec![],
        tags: vec![],
        tokens: vec![],
        created_at: now,
        modified_at: now,
        created_by: label.clone(),
        modified_by: label,
        mfa_grace_from: now,
        session_epoch: 0,
        totp_last_step: 0,
        secrets: UserSecrets::default(),
    }
}

fn user_author(user: &User, client: &ClientInfo) -> Author {
    Author {
        actor: Actor::User {
            id: user.id,
            email: user.email.clone(),
            display_name: user.display_name(),
        },
        client: client.clone(),
    }
}

/// The `LoginSucceeded` entry of a completed sign-in, with the TOTP step it spent (if any).
async fn audit_success(app: &App, user: &User, client: &ClientInfo) -> Result<()> {
    let mut w = Write::begin_system(app).await?;
    w.audit(
        &user_author(user, client),
        DEFAULT_RESOURCE_SET,
        CATEGORY,
        Activity::LoginSucceeded,
        user.id,
    );
    w.commit().await?;
    Ok(())
}

/// `mfaRequired` without an enrolled authenticator past the grace period: locked until an
/// administrator unlocks it (§2.2, as a password sign-in).
async fn lock_for_mfa(app: &App, user: &User, client: &ClientInfo) -> Result<()> {
    let mut w = Write::begin_system(app).await?;
    let author = user_author(user, client);
    if let Some(current) = w.st.users.get(&user.id).cloned() {
        let mut u = (*current).clone();
        u.locked = true;
        u.end_sessions();
        w.put(u);
    }
    w.audit_failure(
        &author,
        DEFAULT_RESOURCE_SET,
        CATEGORY,
        Activity::LoginFailed,
        user.id,
        "MFA not enrolled after the grace period",
    );
    w.audit(&author, DEFAULT_RESOURCE_SET, "Users", Activity::Locked, user.id);
    w.commit().await?;
    Ok(())
}

/// `POST /api/v1/sso/exchange` `{ssoCode, totpCode?}`: the token of a sign-in the IdP completed
/// (the console's flow), once the TOTP code it owes is given. A wrong code leaves the sign-in
/// waiting (5 attempts in all, as many as a password sign-in allows before its lock-out).
/// `binding`: the browser's `BINDING_COOKIE`, which a console sign-in's code needs.
pub async fn exchange_code(
    app: &App,
    body: SsoExchangeDto,
    client: &ClientInfo,
    binding: Option<&str>,
) -> Result<LoginResponse> {
    let SsoExchangeDto {
        sso_code: code,
        totp_code,
    } = body;
    if totp_code
        .as_deref()
        .is_some_and(|c| c.len() != 6 || !c.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Error::field("totpCode", "must be 6 digits"));
    }
    let now = crate::clock::now_millis();
    app.login_throttle
        .check(client.source.as_deref(), now)
        .map_err(Error::TooManyRequests)?;
    let mut data = crate::service::pending::take(app, &code, PURPOSE_DONE, now)
        .await?
        .ok_or_else(|| Error::field("ssoCode", "unknown or expired"))?;
    if !bound_here(&data, binding) {
        // Spent: the code of someone else's sign-in is not tried again.
        app.login_throttle.failed(client.source.as_deref(), now);
        return Err(Error::LoginRejected(FAILED));
    }
    let user_id = data
        .get("user")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| Error::internal("stored SSO sign-in without a user"))?;
    crate::service::load::catch_up(app).await;
    let st = app.state_full();
    let user = st.users.get(&user_id).cloned();
    let sv = data.get("sv").and_then(Value::as_u64);
    let locked = |u: &User| u.is_locked_for(client.source.as_deref(), now);
    let Some(user) = user.filter(|u| u.active && !locked(u) && sv == Some(u64::from(u.session_epoch))) else {
        return Err(Error::LoginRejected(FAILED));
    };
    let mut step = None;
    if data.get("totp").and_then(Value::as_bool) == Some(true) {
        step = totp_code
            .as_deref()
            .and_then(|c| crate::service::login::matched_totp(&user, c, now))
            .filter(|s| *s > user.totp_last_step);
        if step.is_none() {
            app.login_throttle.failed(client.source.as_deref(), now);
            let left = data.get("attempts").and_then(Value::as_i64).unwrap_or(0) - 1;
            if left > 0 {
                data["attempts"] = json!(left);
                crate::service::pending::put(app, &code, PURPOSE_DONE, &data, now + DONE_TTL_MS).await?;
            }
            let author = user_author(&user, client);
            crate::service::login::audit_failed_sign_in(
                app,
                user.id.to_string(),
                &author.actor,
                client,
                "TOTP code missing or wrong".into(),
            )
            .await?;
            return Err(Error::LoginRejected(crate::service::login::TOTP_REQUIRED));
        }
    }
    let mut w = Write::begin_system(app).await?;
    let Some(current) = w.st.users.get(&user_id).cloned() else {
        return Err(Error::LoginRejected(FAILED));
    };
    let mut u = (*current).clone();
    if let Some(s) = step {
        // RFC 6238 §5.2: a code is accepted once, whichever node saw it first.
        if s <= u.totp_last_step {
            return Err(Error::LoginRejected(crate::service::login::TOTP_REQUIRED));
        }
        u.totp_last_step = s;
        w.put(u.clone());
    }
    w.audit(
        &user_author(&u, client),
        DEFAULT_RESOURCE_SET,
        CATEGORY,
        Activity::LoginSucceeded,
        u.id,
    );
    w.commit().await?;
    Ok(mint_user_token(app, &u, "sso"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_mapping_string_and_array_claims() {
        let m = RoleMapping {
            attribute_name: Some("groups".into()),
            attribute_value: Some("ops".into()),
            role: Uuid::nil(),
        };
        let c = |v: Value| json!({ "groups": v }).as_object().unwrap().clone();
        assert!(mapping_matches(&m, &c(json!("ops"))));
        assert!(mapping_matches(&m, &c(json!(["dev", "ops"]))));
        assert!(!mapping_matches(&m, &c(json!("opsx"))));
        assert!(!mapping_matches(&m, &c(json!(["dev"]))));
        assert!(!mapping_matches(&m, &Map::new()));
    }

    #[test]
    fn saml_metadata_problems() {
        assert!(
            parse_saml_metadata("<a><b></a>")
                .unwrap_err()
                .starts_with("not well-formed XML")
        );
        assert_eq!(
            parse_saml_metadata(r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"/>"#)
                .unwrap_err(),
            "no EntityDescriptor with an entityID"
        );
        let no_cert = r#"<EntityDescriptor entityID="https://idp.test"><IDPSSODescriptor>
            <SingleSignOnService Binding="b" Location="https://idp.test/sso"/></IDPSSODescriptor></EntityDescriptor>"#;
        assert_eq!(
            parse_saml_metadata(no_cert).unwrap_err(),
            "no signing certificate in the IDPSSODescriptor"
        );
        let enc_only = r#"<EntityDescriptor entityID="https://idp.test"><IDPSSODescriptor>
            <KeyDescriptor use="encryption"><KeyInfo><X509Data><X509Certificate>AAAA</X509Certificate></X509Data></KeyInfo></KeyDescriptor>
            <SingleSignOnService Location="https://idp.test/sso"/></IDPSSODescriptor></EntityDescriptor>"#;
        assert_eq!(
            parse_saml_metadata(enc_only).unwrap_err(),
            "no signing certificate in the IDPSSODescriptor"
        );
        let bad_cert = enc_only.replace("encryption", "signing");
        assert!(
            parse_saml_metadata(&bad_cert)
                .unwrap_err()
                .starts_with("the signing certificate cannot be read")
        );
        let doctype = r#"<!DOCTYPE x [<!ENTITY a "b">]><EntityDescriptor entityID="x"/>"#;
        assert_eq!(parse_saml_metadata(doctype).unwrap_err(), "a DOCTYPE is not allowed");
    }
}
