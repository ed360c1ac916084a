//! Match rules on verified facts (contract §4.6): grouped by (attribute, key); within a group any
//! value may equal the fact (OR), every group must hold (AND). Exact, case-sensitive; array facts
//! match when any element equals; number and boolean claims compare by their JSON text; an absent
//! fact fails every rule on it.

use serde_json::Value;

use super::{Fact, TrustError, Verified};
use crate::domain::trust::MatchRule;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleGroup {
    pub attribute: String,
    pub key: Option<String>,
    pub values: Vec<String>,
}

pub fn group(rules: &[MatchRule]) -> Vec<RuleGroup> {
    let mut out: Vec<RuleGroup> = Vec::new();
    for r in rules {
        match out.iter_mut().find(|g| g.attribute == r.attribute && g.key == r.key) {
            Some(g) => g.values.push(r.value.clone()),
            None => out.push(RuleGroup {
                attribute: r.attribute.clone(),
                key: r.key.clone(),
                values: vec![r.value.clone()],
            }),
        }
    }
    out
}

/// A claim's comparable text: strings as they are, numbers and booleans as JSON text; arrays give
/// each element; objects and null give nothing.
pub fn claim_values(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Number(_) | Value::Bool(_) => vec![v.to_string()],
        Value::Array(a) => a.iter().flat_map(claim_values).collect(),
        Value::Object(_) | Value::Null => vec![],
    }
}

/// Looks up a claim: the top-level claim named `key`, or, when absent and `key` contains `.`, the
/// nested claim along that dotted path.
pub fn claim<'v>(claims: &'v serde_json::Map<String, Value>, key: &str) -> Option<&'v Value> {
    claims.get(key).or_else(|| {
        if !key.contains('.') {
            return None;
        }
        let mut parts = key.split('.');
        let first = claims.get(parts.next()?)?;
        parts.try_fold(first, |v, seg| v.get(seg))
    })
}

fn fact_for(g: &RuleGroup, v: &Verified) -> Option<Fact> {
    if g.attribute == "OidcCustom" {
        let claims = v.claims.as_ref()?;
        let vals = claim_values(claim(claims, g.key.as_deref()?)?);
        return match vals.len() {
            0 => None,
            1 => Some(Fact::One(vals.into_iter().next().unwrap_or_default())),
            _ => Some(Fact::Many(vals)),
        };
    }
    v.facts.get(&g.attribute).cloned()
}

pub fn check(groups: &[RuleGroup], v: &Verified) -> Result<(), TrustError> {
    for g in groups {
        let fact = fact_for(g, v);
        let ok = fact
            .as_ref()
            .is_some_and(|f| f.values().iter().any(|x| g.values.contains(x)));
        if !ok {
            return Err(TrustError::MatchRuleFailed {
                attribute: g.attribute.clone(),
                expected: g.values.clone(),
                actual: fact.map(|f| f.display()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(a: &str, v: &str, k: Option<&str>) -> MatchRule {
        MatchRule {
            attribute: a.into(),
            value: v.into(),
            key: k.map(Into::into),
        }
    }

    fn verified() -> Verified {
        let mut v = Verified::default();
        v.facts.insert("OidcIssuer".into(), Fact::One("https://idp".into()));
        v.facts
            .insert("OidcSubject".into(), Fact::One("system:job:build".into()));
        v.facts
            .insert("OidcAudience".into(), Fact::Many(vec!["a".into(), "b".into()]));
        v.claims = json!({"n": 42, "flag": true, "org": {"team": "blue"}, "o.k": "top"})
            .as_object()
            .cloned();
        v
    }

    #[test]
    fn and_of_ors() {
        let g = group(&[
            rule("OidcIssuer", "https://idp", None),
            rule("OidcSubject", "system:job:build", None),
            rule("OidcSubject", "system:job:release", None),
        ]);
        assert_eq!(g.len(), 2);
        assert!(check(&g, &verified()).is_ok());
        let g = group(&[
            rule("OidcSubject", "system:job:test", None),
            rule("OidcSubject", "system:job:release", None),
        ]);
        assert_eq!(
            check(&g, &verified()),
            Err(TrustError::MatchRuleFailed {
                attribute: "OidcSubject".into(),
                expected: vec!["system:job:test".into(), "system:job:release".into()],
                actual: Some("system:job:build".into()),
            })
        );
    }

    #[test]
    fn arrays_numbers_custom_claims_and_absent_facts() {
        let v = verified();
        assert!(check(&group(&[rule("OidcAudience", "b", None)]), &v).is_ok());
        assert!(check(&group(&[rule("OidcCustom", "42", Some("n"))]), &v).is_ok());
        assert!(check(&group(&[rule("OidcCustom", "true", Some("flag"))]), &v).is_ok());
        assert!(check(&group(&[rule("OidcCustom", "blue", Some("org.team"))]), &v).is_ok());
        assert!(
            check(&group(&[rule("OidcCustom", "top", Some("o.k"))]), &v).is_ok(),
            "top-level claim wins"
        );
        assert!(
            check(&group(&[rule("OidcCustom", "Blue", Some("org.team"))]), &v).is_err(),
            "case-sensitive"
        );
        let e = check(&group(&[rule("CiARepository", "x", None)]), &v).unwrap_err();
        assert!(matches!(e, TrustError::MatchRuleFailed { actual: None, .. }));
    }
}
