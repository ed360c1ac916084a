//! The explain trace of `POST /api/v1/access-policies/evaluate` (issue 22, docs/API-CONVENTIONS.md
//! "Explain"): the §4.8 steps as `{step, name, result, reason, detail}` entries, built from what
//! the steps of [`super::decide`] recorded. Pure: no I/O, nothing issued, nothing written.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::decide::Decision;
use crate::edge::events::{AttestationResult, EntityResult};
use crate::state::HasMeta;

/// The main steps of §4.8, by number and name, in order (step 13, the answer, is the trace's
/// `status` itself).
pub const STEPS: [(u8, &str); 12] = [
    (1, "rateLimit"),
    (2, "edgeToken"),
    (3, "requestBody"),
    (4, "resourceSet"),
    (5, "clientWorkloads"),
    (6, "serverWorkloads"),
    (7, "accessPolicy"),
    (8, "attestation"),
    (9, "accessConditions"),
    (10, "credentialProvider"),
    (11, "credentialType"),
    (12, "fetch"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    Passed,
    Failed,
    Skipped,
}

/// One entry of the trace: a main step, or a check inside one (`trustProvider`,
/// `accessCondition`), which follows its step's entry.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub step: u8,
    pub name: &'static str,
    pub result: Outcome,
    pub reason: Option<String>,
    pub detail: Value,
}

/// The explain answer: what `/edge/v1/credentials` would answer, and why.
#[derive(Debug, Serialize)]
pub struct Trace {
    pub status: u16,
    pub reason: Option<&'static str>,
    /// The body message `/credentials` would send with a GenericResponseDTO (null for 200/404).
    pub message: Option<String>,
    pub steps: Vec<Step>,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            status: 200,
            reason: None,
            message: None,
            steps: Vec::new(),
        }
    }
}

/// The §4.8 step a §4.11 reason is decided at.
pub fn step_of(reason: &str) -> u8 {
    match reason {
        "InvalidToken" => 2,
        "InvalidRequest" | "ResourceSetMismatch" => 4,
        "NoClientWorkload" => 5,
        "NoServerWorkload" => 6,
        "NoAccessPolicy" | "MultipleAccessPolicies" => 7,
        "AttestationFailed" => 8,
        "ConditionFailed" => 9,
        "NoCredentialProvider" | "SelectorRequired" | "SelectorMismatch" => 10,
        "CredentialTypeMismatch" | "UnresolvableClaim" => 11,
        _ => 12,
    }
}

pub fn name_of(step: u8) -> &'static str {
    STEPS.iter().find(|(n, _)| *n == step).map_or("step", |(_, name)| name)
}

impl Trace {
    pub fn push(&mut self, step: u8, name: &'static str, result: Outcome, reason: Option<String>, detail: Value) {
        self.steps.push(Step {
            step,
            name,
            result,
            reason,
            detail,
        });
    }

    /// A main step that passed.
    pub fn pass(&mut self, step: u8, detail: Value) {
        self.push(step, name_of(step), Outcome::Passed, None, detail);
    }

    /// A main step that was not applied.
    pub fn skip(&mut self, step: u8, detail: Value) {
        self.push(step, name_of(step), Outcome::Skipped, None, detail);
    }

    /// The deciding failure: its step fails with the decision's reason, and the answer becomes
    /// the decision's status, reason and message.
    pub fn fail(&mut self, step: u8, d: &Decision, detail: Value) {
        let reason = d.reason.unwrap_or("InvalidRequest");
        self.push(step, name_of(step), Outcome::Failed, Some(reason.to_string()), detail);
        self.decided(
            d.status,
            Some(reason),
            (!d.message.is_empty()).then(|| d.message.to_string()),
        );
    }

    pub fn decided(&mut self, status: u16, reason: Option<&'static str>, message: Option<String>) {
        self.status = status;
        self.reason = reason;
        self.message = message;
    }

    /// Every main step after `step` is `Skipped`: the first failing step decides (§4.8).
    pub fn skip_after(&mut self, step: u8) {
        for (n, _) in STEPS.iter().filter(|(n, _)| *n > step) {
            self.skip(*n, json!({"message": "not reached: an earlier step decided"}));
        }
    }
}

/// `{id, name}` of an entity.
pub fn named<T: HasMeta>(e: &T) -> Value {
    json!({"id": e.meta().id, "name": e.meta().name})
}

/// A step's candidates and the one chosen (null when none was).
pub fn candidates<T: HasMeta>(all: &[Arc<T>], chosen: Option<&EntityResult>) -> Value {
    json!({
        "candidates": all.iter().map(|c| named(c.as_ref())).collect::<Vec<_>>(),
        "chosen": chosen.map(|c| json!({"id": c.id, "name": c.name})),
    })
}

/// One trust-provider check of step 8, as the authorization event records it.
pub fn trust_check(a: &AttestationResult, kind: &str) -> Step {
    let passed = a.result == "Attested";
    Step {
        step: 8,
        name: "trustProvider",
        result: if passed { Outcome::Passed } else { Outcome::Failed },
        reason: a.reason.clone(),
        detail: json!({
            "id": a.id,
            "name": a.name,
            "provider": kind,
            "result": a.result,
            "attribute": a.attribute,
            "expectedValues": a.expected_values,
            "actualValue": a.actual_value,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_names_its_step() {
        for (reason, step) in [
            ("InvalidToken", 2),
            ("InvalidRequest", 4),
            ("NoClientWorkload", 5),
            ("NoServerWorkload", 6),
            ("MultipleAccessPolicies", 7),
            ("AttestationFailed", 8),
            ("SelectorRequired", 10),
            ("CredentialTypeMismatch", 11),
        ] {
            assert_eq!(step_of(reason), step, "{reason}");
        }
        assert_eq!(name_of(7), "accessPolicy");
    }

    #[test]
    fn a_failure_skips_the_later_steps() {
        let mut t = Trace::default();
        t.pass(4, json!({}));
        t.fail(5, &Decision::not_found("NoClientWorkload"), json!({}));
        t.skip_after(5);
        assert_eq!(t.status, 404);
        assert_eq!(t.reason, Some("NoClientWorkload"));
        assert_eq!(t.message, None);
        let names: Vec<_> = t.steps.iter().map(|s| (s.step, s.result)).collect();
        assert_eq!(names[1], (5, Outcome::Failed));
        assert_eq!(names.last(), Some(&(12, Outcome::Skipped)));
        assert_eq!(names.len(), 2 + 7);
    }
}
