//! Single-use states kept until they expire (an SSO sign-in's `state`, its finished sign-in's
//! code, a consent's `state`): their data (PKCE verifiers, nonces, the user a code signs in)
//! sealed at rest under the row's own label (`store::sealed::pending_label`), so a database or
//! a backup read shows none of it; a value that does not open (stored by a release before, or
//! under a key retired since) is unknown, as an expired one is.

use serde_json::Value;

use crate::app::App;
use crate::error::Error;

/// Stores `data` under `key` for `purpose` until `expires_at` (ms), sealed.
pub async fn put(app: &App, key: &str, purpose: &str, data: &Value, expires_at: i64) -> Result<(), Error> {
    let sealed = app
        .cipher
        .seal(data.to_string().as_bytes(), &crate::store::sealed::pending_label(key));
    app.store.put_pending(key, purpose, &sealed, expires_at).await?;
    Ok(())
}

/// Takes (spends) the data stored under `key` for `purpose`, if it is there, unexpired at `now`
/// and opens.
pub async fn take(app: &App, key: &str, purpose: &str, now: i64) -> Result<Option<Value>, Error> {
    let Some(sealed) = app.store.take_pending(key, purpose, now).await? else {
        return Ok(None);
    };
    let Ok(plain) = app.cipher.open(&sealed, &crate::store::sealed::pending_label(key)) else {
        tracing::warn!(purpose, "a single-use state did not open: taken as unknown");
        return Ok(None);
    };
    serde_json::from_slice(&plain).map(Some).map_err(Error::internal)
}
