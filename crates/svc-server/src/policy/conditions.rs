//! Access conditions at `/edge/v1/credentials` (contract §4.8 step 9, §3.10): each variant's rule
//! as a pure function of the condition, the request and what was looked up for it (the GeoIP
//! answer for the source IP, the vendor's device or cloud resource that the handler fetched).
//! A failure names the compared attribute, what was expected and what was found, for the
//! authorization event (§3.24).

use jiff::Timestamp;
use svc_api::edge::ClientWorkloadDetails;

use crate::domain::condition::{ConditionSpec, Location, WEEKDAYS, Window};

/// Country (ISO 3166-1 alpha-2) and subdivisions (ISO 3166-2, `US-TX`) of an IP address.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Geo {
    pub country: Option<String>,
    pub country_name: Option<String>,
    pub subdivisions: Vec<String>,
}

/// A `SensorA` device (§5.4 device lookup).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Device {
    pub hostname: Option<String>,
    pub serial_number: Option<String>,
    pub mac_address: Option<String>,
    pub local_ip: Option<String>,
    pub last_seen: Option<Timestamp>,
    pub reduced_functionality_mode: bool,
}

/// A `CloudSecurityAIntegrationApi` inventory node (§5.4 resource lookup).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CloudResource {
    pub last_seen: Option<Timestamp>,
    pub cluster_connected: bool,
}

/// What the handler obtained for a vendor condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup<T> {
    /// The request names nothing to look up (no agent id, no cloud resource).
    NoSubject(&'static str),
    /// The vendor could not be asked or did not answer in time (fail closed, §4.8 step 9).
    Upstream(String),
    NotFound(String),
    Found(T),
}

/// A failed comparison: the attribute, the expected values, the value found.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub attribute: &'static str,
    pub expected: Vec<String>,
    pub actual: Option<String>,
}

fn fail(attribute: &'static str, expected: Vec<String>, actual: Option<String>) -> Result<(), Failure> {
    Err(Failure {
        attribute,
        expected,
        actual,
    })
}

/// `SvcGeoIPCondition`: the source IP's country equals a location's `alpha2Code` (or, without
/// one, its `shortName`, against the country's code or English name, case-insensitively), and,
/// when that location lists subdivisions, the IP's subdivision is one of them.
pub fn geoip(locations: &[Location], geo: Option<&Geo>) -> Result<(), Failure> {
    let countries = || {
        locations
            .iter()
            .map(|l| l.alpha2_code.clone().unwrap_or_else(|| l.short_name.clone()))
            .collect()
    };
    let Some(geo) = geo.filter(|g| g.country.is_some()) else {
        return fail("country", countries(), None);
    };
    let cc = geo.country.as_deref().unwrap_or_default();
    let same_country = |l: &&Location| match &l.alpha2_code {
        Some(a) => a.eq_ignore_ascii_case(cc),
        None => {
            l.short_name.eq_ignore_ascii_case(cc)
                || geo
                    .country_name
                    .as_deref()
                    .is_some_and(|n| l.short_name.eq_ignore_ascii_case(n))
        }
    };
    let in_country: Vec<&Location> = locations.iter().filter(same_country).collect();
    if in_country.is_empty() {
        return fail("country", countries(), Some(cc.to_string()));
    }
    if in_country.iter().any(|l| l.subdivisions.is_empty()) {
        return Ok(());
    }
    let wanted: Vec<String> = in_country
        .iter()
        .flat_map(|l| {
            l.subdivisions
                .iter()
                .filter_map(|s| s.code(l.alpha2_code.as_deref().or(Some(cc))))
        })
        .collect();
    if geo
        .subdivisions
        .iter()
        .any(|s| wanted.iter().any(|w| w.eq_ignore_ascii_case(s)))
    {
        return Ok(());
    }
    fail("subdivision", wanted, geo.subdivisions.first().cloned())
}

/// `SvcTimeCondition`: `now` in `tz` falls in one window of its weekday, start ≤ t < end.
pub fn time(schedule: &[Window], tz: &str, now: Timestamp) -> Result<(), Failure> {
    let expected = || {
        schedule
            .iter()
            .map(|w| {
                format!(
                    "{} {:02}:{:02}-{:02}:{:02}",
                    WEEKDAYS[w.weekday as usize],
                    w.start / 60,
                    w.start % 60,
                    w.end / 60,
                    w.end % 60
                )
            })
            .collect()
    };
    let Ok(zone) = jiff::tz::db().get(tz) else {
        return fail("time", expected(), None);
    };
    let local = now.to_zoned(zone);
    let day = local.weekday().to_sunday_zero_offset() as u8;
    let minute = local.hour() as u16 * 60 + local.minute() as u16;
    if schedule
        .iter()
        .any(|w| w.weekday == day && w.start <= minute && minute < w.end)
    {
        return Ok(());
    }
    let actual = format!("{} {:02}:{:02} {tz}", WEEKDAYS[day as usize], minute / 60, minute % 60);
    fail("time", expected(), Some(actual))
}

/// Whether the vendor last saw its subject within `max` seconds of `now`.
fn recent(last_seen: Option<Timestamp>, max: Option<i32>, now: Timestamp) -> Result<(), Failure> {
    let max = i64::from(max.unwrap_or(i32::MAX));
    match last_seen {
        Some(t) if now.as_second() - t.as_second() <= max => Ok(()),
        other => fail(
            "lastSeen",
            vec![format!("within {max} s")],
            other.map(|t| t.to_string()),
        ),
    }
}

/// MAC addresses compared lower-case with `:` separators (§3.10).
pub fn normal_mac(m: &str) -> String {
    m.trim().to_ascii_lowercase().replace('-', ":")
}

fn lookup_failed<T>(l: &Lookup<T>, attribute: &'static str) -> Option<Result<(), Failure>> {
    match l {
        Lookup::Found(_) => None,
        Lookup::NoSubject(what) => Some(fail(attribute, vec![], Some(format!("missing: {what}")))),
        Lookup::NotFound(id) => Some(fail(attribute, vec![id.clone()], Some("not found".into()))),
        Lookup::Upstream(why) => Some(fail("upstream", vec![], Some(why.clone()))),
    }
}

/// `SensorA`: the device exists, was seen recently, and matches every enabled flag.
pub fn sensor_a(
    spec: &ConditionSpec,
    max_last_seen: Option<i32>,
    device: &Lookup<Device>,
    client: &ClientWorkloadDetails,
    now: Timestamp,
) -> Result<(), Failure> {
    if let Some(f) = lookup_failed(device, "sensorA.agentId") {
        return f;
    }
    let (
        Lookup::Found(d),
        ConditionSpec::SensorA {
            match_local_ip,
            match_hostname,
            match_mac_address,
            match_serial_number,
            prevent_restricted_functionality_mode,
        },
    ) = (device, spec)
    else {
        return fail("integrationType", vec![], None);
    };
    recent(d.last_seen, max_last_seen, now)?;
    let host = client.host.as_ref();
    if *match_hostname {
        let reported = host.and_then(|h| h.hostname.as_deref());
        let same = matches!((&d.hostname, reported), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b));
        if !same {
            return fail(
                "hostname",
                d.hostname.iter().cloned().collect(),
                reported.map(str::to_string),
            );
        }
    }
    if *match_serial_number {
        let reported = host.and_then(|h| h.system_serial_number.as_deref());
        if d.serial_number.as_deref().is_none() || d.serial_number.as_deref() != reported {
            return fail(
                "systemSerialNumber",
                d.serial_number.iter().cloned().collect(),
                reported.map(str::to_string),
            );
        }
    }
    let interfaces = host.and_then(|h| h.network_interfaces.as_deref()).unwrap_or_default();
    if *match_mac_address {
        let want = d.mac_address.as_deref().map(normal_mac);
        let macs: Vec<String> = interfaces
            .iter()
            .filter_map(|i| i.mac_address.as_deref())
            .map(normal_mac)
            .collect();
        if want.is_none() || !macs.iter().any(|m| Some(m) == want.as_ref()) {
            return fail("macAddress", want.into_iter().collect(), macs.first().cloned());
        }
    }
    if *match_local_ip {
        let addrs: Vec<&str> = interfaces
            .iter()
            .flat_map(|i| {
                i.ipv4_addresses
                    .iter()
                    .flatten()
                    .chain(i.ipv6_addresses.iter().flatten())
                    .map(String::as_str)
            })
            .collect();
        let want = d.local_ip.as_deref();
        if want.is_none() || !addrs.iter().any(|a| Some(*a) == want) {
            return fail(
                "localIP",
                want.map(str::to_string).into_iter().collect(),
                addrs.first().map(|a| a.to_string()),
            );
        }
    }
    if *prevent_restricted_functionality_mode && d.reduced_functionality_mode {
        return fail("reducedFunctionalityMode", vec!["no".into()], Some("yes".into()));
    }
    Ok(())
}

/// `CloudSecurityAIntegrationApi`: the resource is in the inventory, seen recently, and (with
/// `containerClusterConnected`) its cluster is connected.
pub fn cloud_security_a(
    spec: &ConditionSpec,
    max_last_seen: Option<i32>,
    resource: &Lookup<CloudResource>,
    now: Timestamp,
) -> Result<(), Failure> {
    if let Some(f) = lookup_failed(resource, "providerUniqueId") {
        return f;
    }
    let Lookup::Found(r) = resource else {
        return fail("providerUniqueId", vec![], None);
    };
    recent(r.last_seen, max_last_seen, now)?;
    if let ConditionSpec::CloudSecurityA {
        container_cluster_connected: true,
        ..
    } = spec
        && !r.cluster_connected
    {
        return fail("clusterConnected", vec!["true".into()], Some("false".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::condition::Subdivision;

    fn loc(short: &str, a2: Option<&str>, subs: &[&str]) -> Location {
        Location {
            short_name: short.into(),
            alpha2_code: a2.map(str::to_string),
            subdivisions: subs
                .iter()
                .map(|s| Subdivision {
                    name: s.to_string(),
                    alpha2_code: None,
                    subdivision_code: Some(s.to_string()),
                })
                .collect(),
        }
    }

    fn geo(cc: &str, name: &str, subs: &[&str]) -> Geo {
        Geo {
            country: Some(cc.into()),
            country_name: Some(name.into()),
            subdivisions: subs.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn geoip_rules() {
        let us_tx = [loc("United States", Some("US"), &["US-TX"])];
        assert!(geoip(&us_tx, Some(&geo("US", "United States", &["US-TX"]))).is_ok());
        let f = geoip(&us_tx, Some(&geo("US", "United States", &["US-CA"]))).unwrap_err();
        assert_eq!((f.attribute, f.actual.as_deref()), ("subdivision", Some("US-CA")));
        let f = geoip(&us_tx, Some(&geo("DE", "Germany", &[]))).unwrap_err();
        assert_eq!((f.attribute, f.actual.as_deref()), ("country", Some("DE")));
        assert_eq!(geoip(&us_tx, None).unwrap_err().actual, None);
        let by_name = [loc("germany", None, &[])];
        assert!(geoip(&by_name, Some(&geo("DE", "Germany", &[]))).is_ok());
    }

    #[test]
    fn time_windows() {
        // 2026-11-23 is a Monday; 09:30 UTC is 10:30 in Berlin.
        let now: Timestamp = "2026-11-23T09:30:00Z".parse().unwrap();
        let w = |d, s, e| Window {
            weekday: d,
            start: s,
            end: e,
        };
        assert!(time(&[w(1, 600, 660)], "Europe/Berlin", now).is_ok());
        assert!(time(&[w(1, 570, 600)], "UTC", now).is_ok());
        let f = time(&[w(1, 540, 570)], "UTC", now).unwrap_err();
        assert_eq!(f.actual.as_deref(), Some("Monday 09:30 UTC"));
        assert!(time(&[w(2, 0, 1440)], "UTC", now).is_err());
    }
}
