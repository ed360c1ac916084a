//! The one driver of the `/edge/v1/credentials` decision (contract §4.8 steps 3–12), run by both
//! its callers: the Edge handler (`credentials.rs`, which records the events and answers with the
//! credential) and the explain endpoint (`http/resources/evaluate.rs`, which builds the trace with
//! `policy::explain`). The steps are `policy::decide`'s; this module adds their I/O — the evidence
//! step 8 verifies and step 9's vendor lookups, through the resource set's routing
//! (`App::upstream_for`, §3.17), and step 12's fetch, which only the Edge handler asks for
//! ([`Fetch`]) — so the two cannot decide differently. What each step saw is returned in a
//! [`Run`]; the authorization event's parts are filled as the steps go. No allocation and no
//! dynamic dispatch of its own: the run moves what the steps computed.

use std::net::IpAddr;

use svc_api::edge::ApiCredentialsRequest;
use uuid::Uuid;

use crate::app::App;
use crate::credential::IssueCx;
use crate::domain::trust::TrustKind;
use crate::policy::decide::{self, Attestation, Attested, Decision, NOT_APPLICABLE, Run};
use crate::policy::identity::Subject;
use crate::policy::outcome::Parts;
use crate::state::State as Snapshot;
use crate::trust::Facts;

/// What the decision starts from: the state, the request body, and the edge token (`/credentials`:
/// the bearer token; explain: the token `/edge/v1/auth` would issue for the evidence).
pub struct Input<'r> {
    pub st: &'r Snapshot,
    pub parsed: &'r Option<ApiCredentialsRequest>,
    /// The request's resource set (§4.3), `None` when malformed, unknown or ambiguous.
    pub selected_rs: Option<Uuid>,
    /// The token's trust provider, its kind, its resource set and its verified facts.
    pub tp: Uuid,
    pub kind: TrustKind,
    pub token_rs: Uuid,
    pub facts: &'r Facts,
    /// Who the request says it is (step 5 matches it). Owned: its parsed claims are cached in a
    /// cell, which a future that crosses threads may not share.
    pub subject: Subject<'r>,
    /// The effective source IP (GeoIP conditions).
    pub source_ip: Option<IpAddr>,
}

/// Whether step 12 runs: the Edge handler fetches the credential; explain never does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    Yes,
    No,
}

/// Steps 3–12: the run, with the authorization event's parts in `ev`.
pub async fn run<'r>(app: &App, input: Input<'r>, fetch: Fetch, ev: &mut Parts) -> Run<'r> {
    let st = input.st;
    let mut run = Run::default();
    // Step 3: the body.
    let valid = match decide::validate_body(input.parsed) {
        Ok(v) => v,
        Err(message) => {
            run.invalid = Some(message);
            return run.refused(3, Decision::fail(400, decide::INVALID, "InvalidRequest"));
        }
    };
    run.valid = Some(valid);
    let client = valid.req.client.as_ref().expect("validated");

    // Steps 4–7.
    let matched = decide::match_policy(
        st,
        input.selected_rs,
        input.token_rs,
        &input.subject,
        &valid,
        ev,
        &mut run,
    );
    let (rs, policy) = match matched {
        Ok(m) => (m.rs, m.policy),
        Err((step, d)) => return run.refused(step, d),
    };
    run.policy = Some(policy.clone());
    decide::content_security(st, &policy, ev);
    // The set's upstream client (through its routing's proxy, §3.17): steps 8 and 12.
    let up = app.upstream_for(rs);

    // Step 8: attestation by the policy's trust providers (verified here: upstream I/O).
    run.attestation = match decide::attestation(st, &policy, input.tp, rs, ev) {
        Attestation::Done if policy.trust_providers.is_empty() => Attested::NoneListed,
        Attestation::Done => Attested::TokenProvider,
        Attestation::Verify(providers) => {
            let mut passed = false;
            for tp in providers {
                let outcome = crate::trust::verify(&app.verify_cx_via(&up), tp, client)
                    .await
                    .map(|_| ());
                if decide::record_attestation(tp, outcome, ev) {
                    passed = true;
                    break;
                }
            }
            run.attestation = Attested::Verified;
            if !passed {
                return run.refused(8, decide::attestation_failed());
            }
            Attested::Verified
        }
    };

    // Step 9: access conditions (the vendors are asked here; the rules are `decide`'s).
    let conds = decide::access_conditions_of(st, &policy);
    if !conds.is_empty()
        && let Err(d) = super::conditions::check(app, st, &conds, client, input.facts, input.source_ip, ev).await
    {
        return run.refused(9, d);
    }

    // Steps 10–11.
    let (cp, mut cp_result) = match decide::choose_provider(st, &policy, &valid, ev) {
        Ok(c) => c,
        Err((step, d)) => {
            // A type mismatch (step 11) names the provider chosen at step 10.
            run.provider = ev
                .credential_provider
                .as_ref()
                .and_then(|c| st.idx.credentials.get(&c.id).cloned());
            return run.refused(step, d);
        }
    };
    // Dynamic values resolve here (§3.5.3).
    let cw_name = st
        .client_workloads
        .get(&policy.client_workload)
        .map_or("", |c| c.meta.name.as_str());
    let values = crate::credential::dynamic::Values {
        kind: input.kind,
        facts: input.facts,
        claims: input.subject.claims(),
        client,
        client_workload: (policy.client_workload, cw_name),
    };
    let cx = IssueCx {
        svc: app.services_via(&up),
        rs,
        client_workload: Some((policy.client_workload, cw_name)),
        server_workload: policy.server_workload,
        access_policy: policy.meta.id,
        credential_provider: cp.id,
        trust_provider: input.tp,
        values: Some(&values),
        csr: valid.req.cert_signing_request.as_deref(),
    };
    let prepared = match cp.prepare(&cx) {
        Ok(p) => p,
        Err(expr) => {
            cp_result.reason = Some(format!("UnresolvableClaim: {expr}"));
            ev.credential_provider = Some(cp_result);
            run.unresolvable = Some(expr);
            run.provider = Some(cp);
            return run.refused(11, Decision::fail(403, NOT_APPLICABLE, "UnresolvableClaim"));
        }
    };
    ev.credential_provider = Some(cp_result);
    // Step 12: the fetch.
    if fetch == Fetch::Yes {
        run.issued = Some(cp.issue(&prepared, &cx).await.map_err(|e| e.reason));
    }
    run.provider = Some(cp);
    run
}
