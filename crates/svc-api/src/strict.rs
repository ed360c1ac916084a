//! Strict JSON text (issue 22): an object may not repeat a key — two readers could otherwise
//! disagree on which value counts, `serde_json` keeping the last — and management bodies may not
//! carry NUL characters in any string. [`parse`] reads a management body into a `Value` with
//! both checks; [`unique_keys`] checks an Edge API body for repeated keys without building one.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a body was refused: `Syntax` for text that is no JSON (the parser's message), `Rule`
/// for well-formed JSON that breaks a rule (`<path>: <reason>`).
#[derive(Debug, PartialEq, Eq)]
pub enum StrictError {
    Syntax(String),
    Rule(String),
}

/// Marks a rule message inside serde's error (which keeps only text).
const RULE: &str = "\u{1}rule:";

fn split(e: serde_json::Error) -> StrictError {
    let text = e.to_string();
    match text.find(RULE) {
        Some(i) => {
            let rest = &text[i + RULE.len()..];
            // serde_json appends " at line L column C".
            let msg = rest.rsplit_once(" at line ").map_or(rest, |(m, _)| m);
            StrictError::Rule(msg.to_string())
        }
        None => StrictError::Syntax(text),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn at(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

/// Parses a management body: JSON whose objects repeat no key and whose strings (keys included)
/// hold no NUL character.
pub fn parse(bytes: &[u8]) -> Result<Value, StrictError> {
    let mut d = serde_json::Deserializer::from_slice(bytes);
    let v = ValueSeed { path: String::new() }.deserialize(&mut d).map_err(split)?;
    d.end().map_err(split)?;
    Ok(v)
}

struct ValueSeed {
    path: String,
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn no_nul<E: de::Error>(path: &str, s: &str) -> Result<(), E> {
    if s.contains('\0') {
        return Err(E::custom(format!(
            "{RULE}{}: must not contain NUL characters",
            at(path)
        )));
    }
    Ok(())
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        no_nul(&self.path, v)?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        no_nul(&self.path, &v)?;
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueSeed {
            path: format!("{}[{}]", at(&self.path), out.len()),
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let path = join(&self.path, &k);
            no_nul(&path, &k)?;
            if out.contains_key(&k) {
                return Err(de::Error::custom(format!("{RULE}{path}: duplicate key")));
            }
            let v = map.next_value_seed(ValueSeed { path: path.clone() })?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// Checks that no object of the JSON text repeats a key; `Err(path)` names the first repeat.
/// Text that is no JSON passes: the caller's own parse reports it.
pub fn unique_keys(bytes: &[u8]) -> Result<(), String> {
    let mut d = serde_json::Deserializer::from_slice(bytes);
    match (Unique { path: None }).deserialize(&mut d).map_err(split) {
        Err(StrictError::Rule(m)) => Err(m),
        _ => Ok(()),
    }
}

/// A value walked for repeated keys only; the path is built only for the message.
struct Unique<'a> {
    path: Option<&'a str>,
}

impl<'de> DeserializeSeed<'de> for Unique<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct K;
        impl<'de> Visitor<'de> for K {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(K)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Unique { path: self.path })?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            if keys.contains(&k) {
                let path = join(self.path.unwrap_or(""), &k);
                return Err(de::Error::custom(format!("{RULE}{path}: duplicate key")));
            }
            // A nested repeat's path names its parent's key and its own: enough to find it.
            map.next_value_seed(Unique { path: Some(k.as_ref()) })?;
            keys.push(k);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_and_nul_characters_are_refused() {
        assert_eq!(
            parse(br#"{"name":"a","name":"b"}"#),
            Err(StrictError::Rule("name: duplicate key".into()))
        );
        assert_eq!(
            parse(br#"{"a":{"b":1,"b":2}}"#),
            Err(StrictError::Rule("a.b: duplicate key".into()))
        );
        assert_eq!(
            parse(br#"{"name":"a\u0000b"}"#),
            Err(StrictError::Rule("name: must not contain NUL characters".into()))
        );
        assert_eq!(
            parse(br#"{"tags":[{"key":"k\u0000"}]}"#),
            Err(StrictError::Rule("tags[0].key: must not contain NUL characters".into()))
        );
        assert!(matches!(parse(b"{\"a\":"), Err(StrictError::Syntax(_))));
        let v = parse(br#"{"a":[1,-2,3.5,true,null,"x"],"b":{"c":"d"}}"#).unwrap();
        assert_eq!(v, serde_json::json!({"a":[1,-2,3.5,true,null,"x"],"b":{"c":"d"}}));
        assert_eq!(
            unique_keys(br#"{"client":{"oidc":{},"oidc":{}}}"#),
            Err("client.oidc: duplicate key".into())
        );
        assert_eq!(unique_keys(br#"{"a":"x\"y","b":[{"a":1},{"a":2}]}"#), Ok(()));
        assert_eq!(unique_keys(br#"{"a":1,"a":2}"#), Err("a: duplicate key".into()));
        assert_eq!(unique_keys(b"not json"), Ok(()));
    }
}
