//! SSO: the verification of identity providers (§3.20: OIDC discovery, SAML metadata read with
//! quick-xml) and sign-in through an `OIDCv1` provider (§2.3): authorization-code flow with PKCE,
//! a single-use `state` kept in the shared `pending_states` table (so it completes on any node),
//! `nonce`, ID-token verification through the trust code's key cache and JWS checks,
//! `client_secret_basic` or `private_key_jwt` (the service's RS256 key), user lookup or creation,
//! role mapping, and one audit entry per attempt.

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::app::App;
use crate::domain::records::{SUPER_ADMIN_ROLE, User, UserSecrets};
use crate::domain::sso::{IdpConfig, OidcAuthType, RoleMapping, SsoIdp};
use crate::domain::{Actor, DEFAULT_RESOURCE_SET, Kind};
use crate::error::{Error, Result};
use crate::events::audit::{Activity, ClientInfo};
use crate::service::auth::{LoginResponse, mint_user_token};
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
        let ev = r.read_event().map_err(|e| format!("not well-formed XML ({e})"))?;
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
    let url = format!("{}/.well-known/openid-configuration", base.trim_end_matches('/'));
    app.upstream.check_url(&url).map_err(|e| format!("oidcBaseURL: {e}"))?;
    match app.upstream.get_json(&url).await {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("discovery document is not a JSON object".into()),
        Err(e) => Err(format!("discovery document could not be read ({e})")),
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
                    let f = app
                        .upstream
                        .send(app.upstream.client.get(url))
                        .await
                        .map_err(|e| format!("metadata could not be fetched ({e})"))?;
                    if !(200..300).contains(&f.status) {
                        return Err(format!("metadata could not be fetched (status {})", f.status));
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

/// The IdP a sign-in may use: active, `OIDCv1`, `userAccessEnabled`.
fn usable(app: &App, id: Uuid) -> Option<std::sync::Arc<SsoIdp>> {
    app.state().sso_idps.get(&id).filter(|i| i.offers_sign_in()).cloned()
}

/// `GET /api/v1/sso/login/{idpId}`: the authorization URL to redirect to (after storing the
/// single-use state with its nonce and PKCE verifier). `404` for an IdP that offers no sign-in.
pub async fn start(app: &App, idp_id: Uuid) -> Result<String> {
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
        .append_pair(
            "redirect_uri",
            &crate::http::resources::sso_idps::redirect_url(&app.cfg),
        )
        .append_pair("scope", scopes)
        .append_pair("state", &state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    let data = json!({"idp": idp_id, "nonce": nonce, "verifier": verifier});
    app.store
        .put_pending(
            &state,
            PURPOSE,
            &data.to_string(),
            crate::clock::now_millis() + STATE_TTL_MS,
        )
        .await?;
    Ok(url.to_string())
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
/// key, `iss` = `sub` = the client id, `aud` = the token endpoint.
fn client_assertion(app: &App, client_id: &str, token_endpoint: &str) -> String {
    let now_ms = crate::clock::now_millis();
    let key = app.keys().rsa_signer(now_ms);
    let now = now_ms / 1000;
    let claims = json!({
        "iss": client_id, "sub": client_id, "aud": token_endpoint,
        "jti": Uuid::new_v4(), "iat": now, "exp": now + 300,
    });
    crate::crypto::jose::sign_rs256(&key.pair, Some(&key.kid), claims.to_string().as_bytes())
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
    let redirect = crate::http::resources::sso_idps::redirect_url(&app.cfg);
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", "authorization_code".into()),
        ("code", code.into()),
        ("redirect_uri", redirect),
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
            form.push(("client_assertion", client_assertion(app, client_id, token_endpoint)));
        }
    }
    let f = app
        .upstream
        .send(req.form(&form))
        .await
        .map_err(|e| format!("token endpoint: {e}"))?;
    let answer: Value = serde_json::from_slice(&f.body).unwrap_or(Value::Null);
    if !(200..300).contains(&f.status) {
        let err = answer.get("error").and_then(Value::as_str).unwrap_or("");
        return Err(f.scrub(&format!("token endpoint answered {} {err}", f.status)));
    }
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

/// `GET /api/v1/sso/callback?code=&state=`: completes the sign-in.
pub async fn callback(
    app: &App,
    code: Option<String>,
    state: Option<String>,
    idp_error: Option<String>,
    client: &ClientInfo,
) -> Result<LoginResponse> {
    let state = state
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::field("state", "is required"))?;
    let data = app
        .store
        .take_pending(&state, PURPOSE, crate::clock::now_millis())
        .await?
        .ok_or_else(|| Error::field("state", "unknown or expired"))?;
    let data: Value = serde_json::from_str(&data).map_err(Error::internal)?;
    let idp_id = data
        .get("idp")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| Error::internal("stored SSO state without an IdP"))?;
    let target = idp_id.to_string();
    let rejected = Error::LoginRejected(FAILED);
    if let Some(e) = idp_error {
        let reason = format!("the identity provider answered error={e}");
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
    let Some(email) = claims
        .get("email")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
    else {
        let reason = "the ID token has no email claim".to_string();
        return Err(fail(app, client, target, None, reason, rejected).await);
    };
    // An address the IdP says it has not verified names nobody: whoever typed it in at the IdP
    // would sign in as its owner here (the user is found by e-mail).
    if matches!(claims.get("email_verified"), Some(Value::Bool(false)))
        || claims.get("email_verified").and_then(Value::as_str) == Some("false")
    {
        let reason = "the ID token's email is not verified (email_verified: false)".to_string();
        return Err(fail(app, client, target, Some(email), reason, rejected).await);
    }
    sign_in(app, &idp, &claims, email, client).await
}

/// Finds or creates the user, applies the role mapping, records the attempt, mints the token.
async fn sign_in(
    app: &App,
    idp: &SsoIdp,
    claims: &Map<String, Value>,
    email: String,
    client: &ClientInfo,
) -> Result<LoginResponse> {
    let mut w = Write::begin_system(app).await?;
    let mut mapped: Vec<Uuid> = Vec::new();
    for m in idp.mappings.iter().filter(|m| mapping_matches(m, claims)) {
        if w.st.roles.contains_key(&m.role) && !mapped.contains(&m.role) {
            mapped.push(m.role);
        }
    }
    let existing = w.st.user_by_email(&email).cloned();
    let system = Author {
        actor: Actor::System,
        client: client.clone(),
    };
    let (mut user, created) = match existing {
        Some(u) => ((*u).clone(), false),
        None if mapped.is_empty() => {
            drop(w);
            let reason = "no user with this e-mail and no role mapping matched".to_string();
            return Err(fail(
                app,
                client,
                email.clone(),
                Some(email),
                reason,
                Error::LoginRejected(FAILED),
            )
            .await);
        }
        None => {
            let seq = w.next_seq(Kind::User).await?;
            let now = w.now;
            let name = |k: &str, d: &str| {
                claims
                    .get(k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .unwrap_or(d)
                    .to_string()
            };
            let label = system.actor.label();
            (
                User {
                    id: Uuid::new_v4(),
                    seq,
                    email: email.clone(),
                    first_name: name("given_name", "SSO"),
                    last_name: name("family_name", "User"),
                    phone_number: None,
                    roles: mapped.clone(),
                    active: true,
                    locked: false,
                    failed_logins: 0,
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
                },
                true,
            )
        }
    };
    let author = Author {
        actor: Actor::User {
            id: user.id,
            email: user.email.clone(),
            display_name: user.display_name(),
        },
        client: client.clone(),
    };
    let target = user.id.to_string();
    let refused = if !user.active {
        Some((INACTIVE, "inactive user"))
    } else if user.locked {
        Some((crate::service::login::LOCKED, "account locked"))
    } else {
        None
    };
    if let Some((msg, reason)) = refused {
        w.audit_failure(
            &author,
            DEFAULT_RESOURCE_SET,
            CATEGORY,
            Activity::LoginFailed,
            &target,
            reason,
        );
        w.commit().await?;
        return Err(Error::LoginRejected(msg));
    }
    if created {
        w.put(user.clone());
        w.audit(&system, DEFAULT_RESOURCE_SET, "Users", Activity::Created, &target);
    } else if !mapped.is_empty() {
        // The last active SuperAdmin keeps SuperAdmin (§3.18): a mapping must not leave the
        // installation without one.
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
            // A role change ends the user's other sessions (issue 22); this one is minted after.
            user.end_sessions();
            user.modified_at = w.now;
            user.modified_by = system.actor.label();
            w.put(user.clone());
            w.audit(&system, DEFAULT_RESOURCE_SET, "Users", Activity::Updated, &target);
        }
    }
    w.audit(
        &author,
        DEFAULT_RESOURCE_SET,
        CATEGORY,
        Activity::LoginSucceeded,
        &target,
    );
    w.commit().await?;
    Ok(mint_user_token(app, &user, "sso"))
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
