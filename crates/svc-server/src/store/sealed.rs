//! The columns that hold values sealed by `crypto::aead` (issue 32: at-rest key rotation), each
//! with the associated-data label its values were sealed under. The sealing code takes its labels
//! from here, so a rotation re-wraps exactly what was sealed; a test scans every text column of
//! every table for sealed values and fails on one outside these columns.
//!
//! What they hold: `entities.secrets`, every entity's secret bundle (trust-provider and
//! credential-provider secrets, stored OAuth and ciB tokens, users' password hashes and TOTP
//! seeds, SSO client secrets and keys, log-stream collector secrets, integration secrets);
//! `signing_keys.material`, the ES256/RS256 signing keys and the HS256 internal token key;
//! `meta.value`, the X.509 CA's key (`x509_ca`) and the encryption key's check value;
//! `pending_states.data`, the single-use states of sign-ins and consents (`service::pending`).

use sqlx::Row;

use super::{Result, Store};

/// One sealed column: its table, the columns that name a row, and how a row's label is made.
pub struct SealedColumn {
    pub table: &'static str,
    pub keys: &'static [&'static str],
    pub column: &'static str,
    pub label: fn(&[String]) -> String,
}

/// The label of an entity's secret bundle.
pub fn entity_label(kind: &str, id: &str) -> String {
    format!("entity:{kind}:{id}")
}

/// The label of a signing key's material.
pub fn key_label(kid: &str) -> String {
    format!("key:{kid}")
}

/// The label of a single-use state's data (`pending_states`, keyed by the state itself).
pub fn pending_label(state: &str) -> String {
    format!("pending:{state}")
}

/// The `meta` row that proves the encryption key (its value is sealed, see `service::rekey`).
pub const CHECK_KEY: &str = "encryption_check";

/// The label of a sealed `meta` value (the check value's predates the rule).
pub fn meta_label(key: &str) -> String {
    if key == CHECK_KEY {
        "meta:check".into()
    } else {
        format!("meta:{key}")
    }
}

pub const SEALED: &[SealedColumn] = &[
    SealedColumn {
        table: "entities",
        keys: &["kind", "id"],
        column: "secrets",
        label: |k| entity_label(&k[0], &k[1]),
    },
    SealedColumn {
        table: "signing_keys",
        keys: &["kid"],
        column: "material",
        label: |k| key_label(&k[0]),
    },
    SealedColumn {
        table: "meta",
        keys: &["key"],
        column: "value",
        label: |k| meta_label(&k[0]),
    },
    SealedColumn {
        table: "pending_states",
        keys: &["state"],
        column: "data",
        label: |k| pending_label(&k[0]),
    },
];

/// One sealed value and where it is.
#[derive(Clone)]
pub struct SealedValue {
    pub column: &'static SealedColumn,
    pub keys: Vec<String>,
    pub value: String,
}

impl SealedValue {
    pub fn label(&self) -> String {
        (self.column.label)(&self.keys)
    }

    /// `table.column of k1/k2`, for messages (never the value).
    pub fn place(&self) -> String {
        format!(
            "{}.{} of {}",
            self.column.table,
            self.column.column,
            self.keys.join("/")
        )
    }
}

impl Store {
    /// At most `limit` values of `c` not sealed under the key `kid`.
    pub async fn sealed_not_under(
        &self,
        c: &'static SealedColumn,
        kid: &str,
        limit: usize,
    ) -> Result<Vec<SealedValue>> {
        let sql = format!(
            "SELECT {keys}, {col} FROM {table} WHERE {col} LIKE 'v1:%' AND {col} NOT LIKE $1 ORDER BY {keys} LIMIT $2",
            keys = c.keys.join(", "),
            col = c.column,
            table = c.table,
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(format!("v1:{kid}:%"))
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await?;
        Ok(rows
            .iter()
            .map(|r| SealedValue {
                column: c,
                keys: (0..c.keys.len()).map(|i| r.get::<String, _>(i)).collect(),
                value: r.get(c.keys.len()),
            })
            .collect())
    }

    /// Every value of `c` (a backup's check: they are few, thousands at most).
    pub async fn all_sealed(&self, c: &'static SealedColumn) -> Result<Vec<SealedValue>> {
        self.sealed_not_under(c, "", i32::MAX as usize).await
    }

    /// Replaces sealed values in one short transaction, each only if it still holds what was
    /// read (a write of the service in between sealed it anew and wins); returns how many were
    /// replaced. No change-log row: what they hold is unchanged.
    pub async fn replace_sealed(&self, values: &[(SealedValue, String)]) -> Result<usize> {
        self.live(true, async {
            let mut tx = self.begin_write().await?;
            let mut n = 0;
            for (v, new) in values {
                let c = v.column;
                let cond: Vec<String> = c
                    .keys
                    .iter()
                    .enumerate()
                    .map(|(i, k)| format!("{k} = ${}", i + 3))
                    .collect();
                let sql = format!(
                    "UPDATE {} SET {col} = $1 WHERE {col} = $2 AND {}",
                    c.table,
                    cond.join(" AND "),
                    col = c.column
                );
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(new).bind(&v.value);
                for k in &v.keys {
                    q = q.bind(k);
                }
                n += q.execute(&mut *tx).await?.rows_affected() as usize;
            }
            tx.commit().await?;
            Ok(n)
        })
        .await
    }

    /// How many sealed values each key id seals, over every sealed column.
    pub async fn sealed_counts(&self) -> Result<std::collections::BTreeMap<String, u64>> {
        let mut out = std::collections::BTreeMap::new();
        for c in SEALED {
            let sql = format!(
                "SELECT {col} FROM {table} WHERE {col} LIKE 'v1:%'",
                col = c.column,
                table = c.table
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(self.pool()).await?;
            for r in &rows {
                let v: String = r.get(0);
                if let Some(kid) = crate::crypto::aead::kid_of(&v) {
                    *out.entry(kid.to_string()).or_insert(0) += 1;
                }
            }
        }
        Ok(out)
    }

    /// Stores the new check value (sealed under the new key) in place of `old`, the rotation's
    /// record and a change-log row `encryption` in one transaction under the cluster's write
    /// lock: every node seals with the new key from its next refresh. `false` when the check
    /// value was not `old` any more (another rotation moved first).
    pub async fn switch_encryption(&self, old: &str, new: &str, rotation: &str) -> Result<bool> {
        self.live(true, async {
            let mut tx = self.begin_write().await?;
            self.lock_writes(&mut tx).await?;
            let n = sqlx::query("UPDATE meta SET value = $1 WHERE key = $2 AND value = $3")
                .bind(new)
                .bind(CHECK_KEY)
                .bind(old)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if n != 1 {
                return Ok(false);
            }
            put_meta(&mut tx, ROTATION_KEY, rotation).await?;
            note_change(&mut tx, "encryption").await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    /// Records the rotation's progress (`rotation`, JSON) and has every node look again (a
    /// change-log row `encryption`): a key file read again, a retired key forgotten.
    pub async fn note_encryption(&self, rotation: Option<&str>) -> Result<()> {
        self.live(true, async {
            let mut tx = self.begin_write().await?;
            self.lock_writes(&mut tx).await?;
            if let Some(r) = rotation {
                put_meta(&mut tx, ROTATION_KEY, r).await?;
            }
            note_change(&mut tx, "encryption").await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }
}

/// The `meta` row recording an at-rest key rotation (JSON; key ids only).
pub const ROTATION_KEY: &str = "encryption_rotation";

async fn put_meta(tx: &mut sqlx::Transaction<'static, sqlx::Any>, key: &str, value: &str) -> Result<()> {
    sqlx::query("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
        .bind(key)
        .bind(value)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

async fn note_change(tx: &mut sqlx::Transaction<'static, sqlx::Any>, kind: &str) -> Result<()> {
    sqlx::query("INSERT INTO changes (kind, id, at) VALUES ($1, '', $2)")
        .bind(kind)
        .bind(crate::clock::now_millis())
        .execute(&mut **tx)
        .await?;
    Ok(())
}
