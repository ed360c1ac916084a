//! The GeoIP database of `SVC_GEOIP_DB` (contract §3.10 `SvcGeoIPCondition`, §5.5): a
//! MaxMind-format file read with the `maxminddb` crate, memory-mapped, and opened again when the
//! file changes (its size, modification time or inode; checked by a background job, so the edge
//! path never makes a system call for it). Without a database, or when it cannot be read, every
//! lookup answers nothing and GeoIP conditions fail (§3.10).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use serde::Deserialize;

use crate::policy::conditions::Geo;

/// What identifies one version of the file.
type Stamp = (u64, Option<std::time::SystemTime>, u64);

struct Loaded {
    reader: maxminddb::Reader<maxminddb::Mmap>,
    stamp: Stamp,
}

pub struct GeoDb {
    path: Option<PathBuf>,
    current: ArcSwapOption<Loaded>,
}

// The record's parts are borrowed from the mapped file: a lookup allocates only the `Geo` it
// answers, not a copy of every string on the way.
#[derive(Deserialize)]
struct Names<'a> {
    #[serde(borrow)]
    en: Option<&'a str>,
}

#[derive(Deserialize)]
struct Country<'a> {
    #[serde(borrow)]
    iso_code: Option<&'a str>,
    #[serde(borrow)]
    names: Option<Names<'a>>,
}

#[derive(Deserialize)]
struct Subdivision<'a> {
    #[serde(borrow)]
    iso_code: Option<&'a str>,
}

/// The parts of a GeoIP2 / GeoLite2 City or Country record a condition compares.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    country: Option<Country<'a>>,
    #[serde(borrow)]
    subdivisions: Option<Vec<Subdivision<'a>>>,
}

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.len(), m.modified().ok(), m.ino()))
}

#[allow(unsafe_code)]
fn open(path: &Path) -> Result<Loaded, String> {
    let s = stamp(path).map_err(|e| e.to_string())?;
    // SAFETY: the map is only read. A database file must be replaced, not rewritten in place
    // (as MaxMind's `geoipupdate` does: a new file renamed over the old one), so the mapped
    // pages of the file we opened never change under us; a replacement is a new inode, which
    // `refresh` maps anew. docs/conditions/geoip.md tells operators.
    let reader = unsafe { maxminddb::Reader::open_mmap(path) }.map_err(|e| e.to_string())?;
    Ok(Loaded { reader, stamp: s })
}

impl GeoDb {
    /// Opens the configured database; a file that cannot be read is logged and treated as no
    /// database until it changes.
    pub fn new(path: Option<PathBuf>) -> GeoDb {
        let db = GeoDb {
            path,
            current: ArcSwapOption::empty(),
        };
        db.refresh();
        db
    }

    /// Opens the file again when it changed since it was opened.
    pub fn refresh(&self) {
        let Some(path) = &self.path else { return };
        let now = stamp(path).ok();
        let old = self.current.load();
        if now.is_some() && old.as_ref().map(|l| Some(l.stamp)) == Some(now) {
            return;
        }
        match open(path) {
            Ok(l) => {
                tracing::info!(path = %path.display(), "GeoIP database loaded");
                self.current.store(Some(Arc::new(l)));
            }
            Err(e) => {
                if old.is_some() || now.is_some() {
                    tracing::warn!(path = %path.display(), error = %e, "GeoIP database unreadable");
                }
                self.current.store(None);
            }
        }
    }

    /// Country and subdivisions of `ip`; `None` without a database or for an unknown address.
    pub fn lookup(&self, ip: IpAddr) -> Option<Geo> {
        let db = self.current.load();
        let db = db.as_ref()?;
        let rec: Record<'_> = db.reader.lookup(ip).ok()?.decode().ok()??;
        let country = rec.country?;
        let code = country.iso_code.map(str::to_ascii_uppercase);
        let subdivisions = match &code {
            Some(cc) => rec
                .subdivisions
                .unwrap_or_default()
                .into_iter()
                .filter_map(|s| s.iso_code)
                .map(|s| format!("{cc}-{}", s.to_ascii_uppercase()))
                .collect(),
            None => Vec::new(),
        };
        Some(Geo {
            country: code,
            country_name: country.names.and_then(|n| n.en).map(str::to_owned),
            subdivisions,
        })
    }
}
