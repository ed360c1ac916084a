//! The explain trace of `POST /api/v1/access-policies/evaluate` (issue 22, docs/API-CONVENTIONS.md
//! "Explain"): the §4.8 steps as `{step, name, result, reason, detail}` entries
//! (`svc_api::mgmt::evaluate`), built from the [`Run`] of the one decision driver
//! (`edge::pipeline`) and the authorization event's parts it filled, so the trace shows exactly
//! what `/edge/v1/credentials` decided. Pure: no I/O, nothing issued, nothing written.

use svc_api::mgmt::evaluate::{
    ConditionCheck, Evaluation, EvaluationStep, MappingRef, Named, StepDetail, StepName, StepResult,
};
use uuid::Uuid;

use super::decide::{Attested, Decision, Run};
use super::outcome::{AttestationResult, EntityResult, Parts};
use crate::state::{HasMeta, State as Snapshot};

/// The explain answer being built.
pub struct Trace(pub Evaluation);

impl Default for Trace {
    fn default() -> Self {
        Trace(Evaluation {
            status: 200,
            reason: None,
            message: None,
            steps: Vec::new(),
        })
    }
}

/// A note of explain's own as a step's detail.
pub fn note(message: &str) -> StepDetail {
    StepDetail {
        message: Some(message.to_string()),
        ..Default::default()
    }
}

impl Trace {
    pub fn push(&mut self, step: u8, name: StepName, result: StepResult, reason: Option<String>, detail: StepDetail) {
        self.0.steps.push(EvaluationStep {
            step,
            name,
            result,
            reason,
            detail,
        });
    }

    /// A main step that passed.
    pub fn pass(&mut self, step: u8, detail: StepDetail) {
        self.push(step, StepName::of(step), StepResult::Passed, None, detail);
    }

    /// A main step that was not applied.
    pub fn skip(&mut self, step: u8, detail: StepDetail) {
        self.push(step, StepName::of(step), StepResult::Skipped, None, detail);
    }

    /// The deciding failure: its step fails with the decision's reason, and the answer becomes
    /// the decision's status, reason and message.
    pub fn fail(&mut self, step: u8, d: &Decision, detail: StepDetail) {
        let reason = d.reason.unwrap_or("InvalidRequest");
        self.push(
            step,
            StepName::of(step),
            StepResult::Failed,
            Some(reason.to_string()),
            detail,
        );
        self.decided(
            d.status,
            Some(reason),
            (!d.message.is_empty()).then(|| d.message.to_string()),
        );
    }

    pub fn decided(&mut self, status: u16, reason: Option<&str>, message: Option<String>) {
        self.0.status = status;
        self.0.reason = reason.map(str::to_string);
        self.0.message = message;
    }

    /// Every main step after `step` is `Skipped`: the first failing step decides (§4.8).
    pub fn skip_after(&mut self, step: u8) {
        for n in step + 1..=12 {
            self.skip(n, note("not reached: an earlier step decided"));
        }
    }
}

fn named<T: HasMeta>(e: &T) -> Named {
    Named {
        id: e.meta().id,
        name: e.meta().name.clone(),
        provider_type: None,
    }
}

fn entity(e: &EntityResult) -> Named {
    Named {
        id: e.id,
        name: e.name.clone(),
        provider_type: None,
    }
}

/// A step's candidates and the one chosen (null when none was).
fn candidates<T: HasMeta>(all: &[std::sync::Arc<T>], chosen: Option<&EntityResult>) -> StepDetail {
    StepDetail {
        candidates: Some(all.iter().map(|c| named(c.as_ref())).collect()),
        chosen: Some(chosen.map(entity)),
        ..Default::default()
    }
}

/// A trust provider's check (step 2's refusal, a step 8 check) as the authorization event
/// records it: the failed check's attribute, expected and actual values, and its description.
pub fn trust_detail(a: &AttestationResult, kind: &str) -> StepDetail {
    StepDetail {
        id: Some(a.id),
        name: Some(a.name.clone()),
        provider: Some(kind.to_string()),
        result: Some(a.result.to_string()),
        attribute: a.attribute.clone(),
        expected_values: a.expected_values.clone(),
        actual_value: a.actual_value.clone(),
        message: a.detail.clone(),
        ..Default::default()
    }
}

/// One trust-provider check of step 8.
fn trust_check(a: &AttestationResult, kind: &str) -> EvaluationStep {
    EvaluationStep {
        step: 8,
        name: StepName::TrustProvider,
        result: if a.result == "Attested" {
            StepResult::Passed
        } else {
            StepResult::Failed
        },
        reason: a.reason.clone(),
        detail: trust_detail(a, kind),
    }
}

/// Steps 3–12 of the trace from the decision's run: the steps up to the one that decided pass,
/// that one fails, the later ones are skipped; step 12 (the fetch) is never run. `token_rs`: the
/// resource set of the edge token (step 4's).
pub fn steps(trace: &mut Trace, st: &Snapshot, run: &Run<'_>, ev: &Parts, token_rs: Uuid) {
    let refused_at = run.refusal.map_or(13, |(step, _)| step);
    let decision = run.decision();
    let kind_of = |id: &Uuid| st.idx.trust.get(id).map_or("", |t| t.kind.spec().name);

    // Step 3: the body.
    let Some(valid) = run.valid else {
        let message = run.invalid.clone().unwrap_or_default();
        trace.push(
            3,
            StepName::RequestBody,
            StepResult::Failed,
            Some("InvalidRequest".into()),
            note(&message),
        );
        trace.decided(400, Some("InvalidRequest"), Some(message));
        trace.skip_after(3);
        return;
    };
    trace.pass(
        3,
        StepDetail {
            host: Some(valid.host.to_string()),
            port: Some(valid.port),
            credential_type: Some(valid.credential_type.as_str().to_string()),
            ..Default::default()
        },
    );

    // Steps 4–7.
    let policy_detail = |chosen: bool| {
        let listed = if ev.access_policies.is_empty() {
            ev.access_policy.iter().map(entity).collect()
        } else {
            ev.access_policies.iter().map(entity).collect()
        };
        StepDetail {
            candidates: Some(listed),
            chosen: Some(ev.access_policy.as_ref().filter(|_| chosen).map(entity)),
            content_security: chosen.then(|| {
                ev.content_security
                    .iter()
                    .map(|c| Named {
                        id: c.id,
                        name: c.name.clone(),
                        provider_type: None,
                    })
                    .collect()
            }),
            ..Default::default()
        }
    };
    for n in 4..=7u8 {
        let passed = n < refused_at;
        let detail = match n {
            4 => StepDetail {
                resource_set: Some(run.rs.unwrap_or(token_rs)),
                ..Default::default()
            },
            5 => candidates(&run.clients, ev.client_workload.as_ref()),
            6 => candidates(&run.servers, ev.server_workload.as_ref()),
            _ => policy_detail(passed),
        };
        if passed {
            trace.pass(n, detail);
        } else {
            trace.fail(n, &decision, detail);
            trace.skip_after(n);
            return;
        }
    }

    // Step 8: attestation, then its checks: the providers verified in the policy's order (or
    // the token's own), and the listed ones not verified.
    let mut checks: Vec<EvaluationStep> = ev
        .trust_providers
        .iter()
        .map(|a| trust_check(a, kind_of(&a.id)))
        .collect();
    let message = match run.attestation {
        Attested::NoneListed => "the access policy lists no trust provider",
        Attested::TokenProvider => "the access policy lists the trust provider of the edge token",
        _ => {
            "the access policy does not list the trust provider of the edge token: the request's evidence is verified against the providers it lists"
        }
    };
    if run.attestation == Attested::Verified
        && let (Some(policy), Some(rs)) = (&run.policy, run.rs)
    {
        let tried: Vec<Uuid> = ev.trust_providers.iter().map(|a| a.id).collect();
        for id in policy.trust_providers.iter().filter(|&id| !tried.contains(id)) {
            let (name, why) = match st.idx.trust.get(id) {
                Some(t) if t.active && t.rs == rs => (t.name.clone(), "not needed: another trust provider attested"),
                Some(t) => (t.name.clone(), "inactive or in another resource set"),
                None => (String::new(), "no such trust provider"),
            };
            checks.push(EvaluationStep {
                step: 8,
                name: StepName::TrustProvider,
                result: StepResult::Skipped,
                reason: None,
                detail: StepDetail {
                    id: Some(*id),
                    name: Some(name),
                    provider: Some(kind_of(id).to_string()),
                    message: Some(why.to_string()),
                    ..Default::default()
                },
            });
        }
    }
    if refused_at == 8 {
        trace.fail(8, &decision, note(message));
        trace.0.steps.extend(checks);
        trace.skip_after(8);
        return;
    }
    trace.pass(8, note(message));
    trace.0.steps.extend(checks);

    // Step 9: access conditions.
    let conditions = StepDetail {
        conditions: Some(
            ev.access_conditions
                .iter()
                .map(|c| ConditionCheck {
                    id: c.id,
                    name: c.name.clone(),
                    result: c.result.to_string(),
                    reason: c.reason.clone(),
                    attribute: c.attribute.clone(),
                    expected_values: c.expected_values.clone(),
                    actual_value: c.actual_value.clone(),
                })
                .collect(),
        ),
        ..Default::default()
    };
    if refused_at == 9 {
        trace.fail(9, &decision, conditions);
        trace.skip_after(9);
        return;
    }
    trace.pass(9, conditions);

    // Steps 10–11.
    let mappings = run.policy.as_ref().map(|policy| {
        policy
            .mappings
            .iter()
            .map(|m| {
                let cp = st.idx.credentials.get(&m.credential_provider);
                MappingRef {
                    id: m.credential_provider,
                    name: cp.map(|c| c.name.clone()),
                    provider_type: cp.map(|c| c.cp_type.clone()),
                    is_active: cp.is_some_and(|c| c.active),
                    mapping_type: m.mapping_type.as_str().to_string(),
                }
            })
            .collect()
    });
    let chosen = run.provider.as_ref().map(|cp| Named {
        id: cp.id,
        name: cp.name.clone(),
        provider_type: Some(cp.cp_type.clone()),
    });
    if refused_at == 10 {
        let detail = StepDetail {
            mappings,
            chosen: Some(None),
            ..Default::default()
        };
        trace.fail(10, &decision, detail);
        trace.skip_after(10);
        return;
    }
    trace.pass(
        10,
        StepDetail {
            mappings,
            chosen: Some(chosen),
            ..Default::default()
        },
    );
    let types = StepDetail {
        requested: Some(valid.credential_type.as_str().to_string()),
        provided: Some(
            run.provider
                .as_ref()
                .and_then(|cp| cp.credential_type())
                .map(|t| t.as_str().to_string()),
        ),
        unresolvable: run.unresolvable.clone(),
        ..Default::default()
    };
    if refused_at == 11 {
        trace.fail(11, &decision, types);
        trace.skip_after(11);
        return;
    }
    trace.pass(11, types);
    trace.skip(
        12,
        note("explain never issues a credential: /edge/v1/credentials would now fetch it from the chosen credential provider"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_skips_the_later_steps() {
        let mut t = Trace::default();
        t.pass(4, StepDetail::default());
        t.fail(5, &Decision::not_found("NoClientWorkload"), StepDetail::default());
        t.skip_after(5);
        assert_eq!(t.0.status, 404);
        assert_eq!(t.0.reason.as_deref(), Some("NoClientWorkload"));
        assert_eq!(t.0.message, None);
        let names: Vec<_> = t.0.steps.iter().map(|s| (s.step, s.result)).collect();
        assert_eq!(names[1], (5, StepResult::Failed));
        assert_eq!(names.last(), Some(&(12, StepResult::Skipped)));
        assert_eq!(names.len(), 2 + 7);
        assert_eq!(t.0.steps[1].name, StepName::ClientWorkloads);
    }
}
