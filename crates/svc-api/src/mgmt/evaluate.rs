//! The explain endpoint's DTOs (`POST /api/v1/access-policies/evaluate`, ext;
//! docs/API-CONVENTIONS.md "Explain"): the request — the `/edge/v1/credentials` body plus the
//! `clientId` of the trust provider whose evidence it carries — and the answer, what
//! `/edge/v1/credentials` would answer and the trace of its steps.

use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::edge::{ApiCredentialsRequest, AuthRequest};

/// A part of the `/edge/v1/credentials` body inside the explain body. It is read with the Edge
/// API's rules, not this API's: unknown properties are ignored, and a value the Edge API refuses
/// is the answer `/edge/v1/credentials` would give (explained at step 2 or 3), not a 400 of this
/// endpoint; so its schema here admits any value. Its shape is the Edge API's (see
/// `POST /edge/v1/credentials`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct EdgePart(pub Value);

impl JsonSchema for EdgePart {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EdgePart".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> schemars::Schema {
        // Any value: an object's members and an array's items are the Edge API's to read.
        let item = g.subschema_for::<EdgePart>();
        schemars::json_schema!({
            "description": "A part of the /edge/v1/credentials body, read with the Edge API's rules (see that operation).",
            "additionalProperties": true,
            "items": item,
        })
    }
}

/// The explain body: the `/edge/v1/credentials` body plus the `clientId` of its evidence.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationRequestDTO")]
pub struct EvaluationRequest {
    /// The `edgeSdkClientId` of the trust provider whose evidence is in `client`: the workload
    /// authenticates with it at `/edge/v1/auth` first.
    pub client_id: String,
    /// ClientWorkloadDetails (the Edge API's): the workload's evidence and reported facts.
    pub client: Option<EdgePart>,
    /// ServerWorkloadDetails (the Edge API's): `transportProtocol`, `host`, `port`.
    pub server: Option<EdgePart>,
    /// CredentialProviderTypes: the requested type (`ApiKey`, `OAuthToken`, …).
    pub credential_type: Option<EdgePart>,
    /// ConnectionMetadata (the Edge API's): the selector of a policy with several providers.
    pub connection_metadata: Option<EdgePart>,
    /// PEM PKCS#10 CSR, for `X509Svid`.
    pub cert_signing_request: Option<EdgePart>,
}

impl EvaluationRequest {
    fn part(m: &mut Map<String, Value>, key: &str, v: &Option<EdgePart>) {
        if let Some(EdgePart(v)) = v {
            m.insert(key.into(), v.clone());
        }
    }

    /// The `/edge/v1/auth` body the workload sends first, read as the Edge API reads one (`None`:
    /// the Edge API would refuse it).
    pub fn auth_request(&self) -> Option<AuthRequest> {
        let mut m = Map::new();
        m.insert("clientId".into(), Value::String(self.client_id.clone()));
        Self::part(&mut m, "client", &self.client);
        crate::edge::parse_body(&serde_json::to_vec(&m).ok()?).ok()
    }

    /// The `/edge/v1/credentials` body it holds, read as the Edge API reads one (`None`: the Edge
    /// API would refuse it at step 3).
    pub fn credentials_request(&self) -> Option<ApiCredentialsRequest> {
        let mut m = Map::new();
        Self::part(&mut m, "client", &self.client);
        Self::part(&mut m, "server", &self.server);
        Self::part(&mut m, "credentialType", &self.credential_type);
        Self::part(&mut m, "connectionMetadata", &self.connection_metadata);
        Self::part(&mut m, "certSigningRequest", &self.cert_signing_request);
        crate::edge::parse_body(&serde_json::to_vec(&m).ok()?).ok()
    }
}

/// The explain answer: what `/edge/v1/credentials` would answer a workload that authenticated
/// with this `clientId` and evidence, and why.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationDTO")]
pub struct Evaluation {
    /// The status `/edge/v1/credentials` would answer (200: the decision allows; the fetch is
    /// never run).
    pub status: u16,
    /// The authorization event's outcome reason (`NoClientWorkload`, `AttestationFailed`, …);
    /// null for 200.
    pub reason: Option<String>,
    /// The GenericResponseDTO message that answer carries; null for 200 and 404.
    pub message: Option<String>,
    /// One entry per step of the decision, in order, each step's checks after it.
    pub steps: Vec<EvaluationStep>,
}

/// One entry of the trace: a step, or a check inside one.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationStepDTO")]
pub struct EvaluationStep {
    /// The step of `/edge/v1/credentials` (1–12); a check carries its step's number.
    #[schemars(range(min = 1, max = 12))]
    pub step: u8,
    pub name: StepName,
    pub result: StepResult,
    /// `Failed`: the reason (the deciding step's outcome reason, a check's trust reason); else
    /// null.
    pub reason: Option<String>,
    pub detail: StepDetail,
}

/// The steps, in order, then the checks inside them (`trustProvider`: one listed trust provider
/// checked at step 8).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationStepName")]
pub enum StepName {
    RateLimit,
    EdgeToken,
    RequestBody,
    ResourceSet,
    ClientWorkloads,
    ServerWorkloads,
    AccessPolicy,
    Attestation,
    AccessConditions,
    CredentialProvider,
    CredentialType,
    Fetch,
    // A check of step 8: one listed trust provider (a plain comment: a documented variant
    // would split the enum's schema).
    TrustProvider,
}

impl StepName {
    /// The main steps, numbered from 1.
    pub const MAIN: [StepName; 12] = [
        StepName::RateLimit,
        StepName::EdgeToken,
        StepName::RequestBody,
        StepName::ResourceSet,
        StepName::ClientWorkloads,
        StepName::ServerWorkloads,
        StepName::AccessPolicy,
        StepName::Attestation,
        StepName::AccessConditions,
        StepName::CredentialProvider,
        StepName::CredentialType,
        StepName::Fetch,
    ];

    /// Main step `n` (1–12).
    pub fn of(n: u8) -> StepName {
        Self::MAIN[usize::from(n.clamp(1, 12)) - 1]
    }
}

/// `Passed`; `Failed`: the step that decided, or a check that refused; `Skipped`: after the
/// deciding step, or a step explain does not run (1, 12).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[schemars(rename = "AccessPolicyEvaluationStepResult")]
pub enum StepResult {
    Passed,
    Failed,
    Skipped,
}

/// What a step saw: each step fills the properties it has (docs/API-CONVENTIONS.md "Explain"
/// lists them); the others are absent.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationStepDetailDTO")]
pub struct StepDetail {
    /// Explain's note on the step, or what failed (step 2: the evidence's failed check, step 3:
    /// the body's problem, a trust-provider check: its failed check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Step 2: the clientId.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Step 2, refused: the status `/edge/v1/auth` would answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_status: Option<u16>,
    /// Step 2 (the token's) and step 4: the resource set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_set: Option<Uuid>,
    /// Step 2: the trust provider of the clientId.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_provider: Option<TrustProviderRef>,
    /// Step 3: the validated target and type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_type: Option<String>,
    /// Steps 5–7: the candidates that matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<Named>>,
    /// Steps 5–7 and 10: the one chosen; null when none was.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    #[schemars(with = "Option<Named>")]
    pub chosen: Option<Option<Named>>,
    /// Step 7: the policy's active content-security entries (`Identified`: they change no
    /// decision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_security: Option<Vec<Named>>,
    /// Step 9: each active access condition of the policy, evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ConditionCheck>>,
    /// Step 10: the policy's credential-provider mappings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mappings: Option<Vec<MappingRef>>,
    /// Step 11: the requested type, the chosen provider's (null: none), and a dynamic value
    /// that cannot resolve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    #[schemars(with = "Option<String>")]
    pub provided: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolvable: Option<String>,
    /// A trust-provider check (and step 8's provider names): the provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The trust provider's kind (`OidcIdToken`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A trust-provider check: `Attested` or `Unauthorized`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Step 2 or a trust-provider check, refused by a check that compares a value: the
    /// attribute (a match attribute, or a claim such as `aud`, `iss`, `exp`), the values it had
    /// to hold and the value it held (never the evidence itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_values: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_value: Option<String>,
}

/// `null` kept apart from absent: `Some(None)` is written as `null`.
mod nullable {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<Option<T>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

/// An entity by id and name (a provider also by its type).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationNamedDTO")]
pub struct Named {
    pub id: Uuid,
    pub name: String,
    /// A credential provider's type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub provider_type: Option<String>,
}

/// Step 2's trust provider.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationTrustProviderDTO")]
pub struct TrustProviderRef {
    pub id: Uuid,
    pub name: String,
    /// Its kind (`OidcIdToken`, …).
    pub provider: String,
}

/// Step 9: one access condition, as the authorization event records it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationConditionDTO")]
pub struct ConditionCheck {
    pub id: Uuid,
    pub name: String,
    /// `Passed` or `Failed`.
    pub result: String,
    pub reason: Option<String>,
    pub attribute: Option<String>,
    pub expected_values: Option<Vec<String>>,
    pub actual_value: Option<String>,
}

/// Step 10: one of the policy's credential-provider mappings.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AccessPolicyEvaluationMappingDTO")]
pub struct MappingRef {
    pub id: Uuid,
    /// Null when the provider is gone.
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub provider_type: Option<String>,
    pub is_active: bool,
    /// `None`, `AccessKeyId`, `AccountName`, `HttpHeader`, `HttpBody`.
    pub mapping_type: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chosen_of_none_is_null_and_an_unset_one_absent() {
        let d = StepDetail {
            chosen: Some(None),
            ..Default::default()
        };
        assert_eq!(serde_json::to_value(&d).unwrap(), serde_json::json!({"chosen": null}));
        assert_eq!(
            serde_json::to_value(StepDetail::default()).unwrap(),
            serde_json::json!({})
        );
        let back: StepDetail = serde_json::from_value(serde_json::json!({"chosen": null})).unwrap();
        assert_eq!(back.chosen, Some(None));
        let absent: StepDetail = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(absent.chosen, None);
    }

    #[test]
    fn the_body_is_strict_at_its_top_level_and_admits_anything_inside_its_edge_parts() {
        use crate::schema::read;
        use serde_json::json;
        let refused = |v: Value| read::<EvaluationRequest>(v).unwrap_err().0;
        assert_eq!(refused(json!({"client": {}})), "clientId: is required");
        assert_eq!(refused(json!({"clientId": null})), "clientId: is required");
        assert_eq!(
            refused(json!({"clientId": 3})),
            "clientId: must be a string, not a number"
        );
        assert_eq!(
            refused(json!({"clientId": "c", "policy": 1})),
            "policy: unknown property"
        );
        assert_eq!(refused(json!([1])), "body: must be a JSON object, not an array");
        // Whatever the Edge parts hold is the Edge API's to refuse, at step 2 or 3.
        let any = json!({"clientId": "c", "client": "text", "server": [{"a": [{"b": 1}]}, 2],
                         "credentialType": {"x": [1, {"y": null}]}, "connectionMetadata": 7,
                         "certSigningRequest": false});
        let r = read::<EvaluationRequest>(any.clone()).unwrap();
        assert_eq!(r.server, Some(EdgePart(any["server"].clone())));
        assert!(r.credentials_request().is_none() && r.auth_request().is_none());
    }

    #[test]
    fn the_edge_parts_are_read_as_the_edge_api_reads_them() {
        let req: EvaluationRequest = serde_json::from_value(serde_json::json!({
            "clientId": "c", "client": {"oidc": {"identityToken": "t"}, "future": 1},
            "server": {"host": "h", "port": 443}, "credentialType": "ApiKey"}))
        .unwrap();
        let auth = req.auth_request().unwrap();
        assert_eq!(auth.client_id.as_deref(), Some("c"));
        let cred = req.credentials_request().unwrap();
        assert_eq!(cred.credential_type.as_deref(), Some("ApiKey"));
        // An object the Edge API reads only from an object: the whole body is refused there.
        let arrays: EvaluationRequest =
            serde_json::from_value(serde_json::json!({"clientId": "c", "server": ["TCP", "h", 443]})).unwrap();
        assert!(arrays.credentials_request().is_none());
        let number: EvaluationRequest =
            serde_json::from_value(serde_json::json!({"clientId": "c", "credentialType": 3})).unwrap();
        assert!(number.credentials_request().is_none());
    }
}
