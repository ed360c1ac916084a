//! First start: the settings record, the default resource set, the system roles and, when
//! configured, the bootstrap administrator. Idempotent; runs at every start and creates only what
//! is missing. These are not management writes, so they write no audit entries.

use crate::app::App;
use crate::domain::records::{AUDITOR_ROLE, Grant, ResourceSet, Role, SUPER_ADMIN_ROLE, Settings, User, UserSecrets};
use crate::domain::{DEFAULT_RESOURCE_SET, Kind, Perm, Secret};
use crate::error::Result;
use crate::service::write::{Author, Write};

pub async fn first_start(app: &App) -> Result<()> {
    let st = app.state_full();
    let needs_admin = app.cfg.bootstrap_admin_email.is_some() && st.users.is_empty();
    if !st.settings.is_empty()
        && st.resource_set_exists(&DEFAULT_RESOURCE_SET)
        && st.roles.contains_key(&SUPER_ADMIN_ROLE)
        && st.roles.contains_key(&AUDITOR_ROLE)
        && !needs_admin
        && crate::service::integrations::complete(&st)
    {
        return Ok(());
    }
    drop(st);
    // Hash outside the write lock: argon2 takes a moment.
    let admin_hash = match &app.cfg.bootstrap_admin_password {
        Some(p) if needs_admin => {
            let p = p.clone();
            Some(
                tokio::task::spawn_blocking(move || crate::crypto::password::hash(&p))
                    .await
                    .map_err(crate::error::Error::internal)?,
            )
        }
        _ => None,
    };
    let author = Author::system();
    let mut w = Write::begin_system(app).await?;
    if w.st.settings.is_empty() {
        w.put(Settings::initial(w.now));
    }
    if !w.st.resource_set_exists(&DEFAULT_RESOURCE_SET) {
        let mut meta = w
            .new_meta(Kind::ResourceSet, DEFAULT_RESOURCE_SET, None, &author)
            .await?;
        meta.name = "Default".into();
        meta.description = Some("The default resource set.".into());
        meta.active = true;
        w.put(ResourceSet { meta });
    }
    // §3.11: the built-in integrations, also of resource sets made before they existed.
    let sets: Vec<uuid::Uuid> = w.st.resource_sets.keys().copied().collect();
    for rs in sets {
        crate::service::integrations::add_builtins(&mut w, rs, &author, false).await?;
    }
    for (id, name, write) in [(SUPER_ADMIN_ROLE, "SuperAdmin", true), (AUDITOR_ROLE, "Auditor", false)] {
        if w.st.roles.contains_key(&id) {
            continue;
        }
        let mut meta = w.new_meta(Kind::Role, id, None, &author).await?;
        meta.name = name.into();
        meta.description = Some(
            if write {
                "Every permission, read and write, in every resource set."
            } else {
                "Every permission, read only, in every resource set."
            }
            .into(),
        );
        meta.active = true;
        let grants = Perm::ALL
            .iter()
            .map(|&perm| Grant {
                perm,
                read: true,
                write: write && !perm.read_only(),
            })
            .collect();
        w.put(Role {
            meta,
            system: true,
            grants,
            all_resource_sets: true,
            resource_sets: vec![],
        });
    }
    if let (Some(email), Some(hash)) = (&app.cfg.bootstrap_admin_email, admin_hash)
        && w.st.users.is_empty()
    {
        let seq = w.next_seq(Kind::User).await?;
        let now = w.now;
        w.put(User {
            id: uuid::Uuid::new_v4(),
            seq,
            email: email.clone(),
            first_name: "Bootstrap".into(),
            last_name: "Admin".into(),
            phone_number: None,
            roles: vec![SUPER_ADMIN_ROLE],
            active: true,
            locked: false,
            failed_logins: 0,
            source_locks: vec![],
            sso_links: vec![],
            tags: vec![],
            tokens: vec![],
            created_at: now,
            modified_at: now,
            created_by: Some("system".into()),
            modified_by: Some("system".into()),
            mfa_grace_from: now,
            session_epoch: 0,
            totp_last_step: 0,
            secrets: UserSecrets {
                password_hash: Some(Secret::new(hash)),
                totp: vec![],
            },
        });
        tracing::info!(email = %email, "created the bootstrap administrator");
    }
    w.commit().await?;
    Ok(())
}
