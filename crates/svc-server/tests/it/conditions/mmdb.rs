//! A minimal MaxMind DB writer (format 2.0, IPv4 tree, 24-bit records), so the GeoIP tests build
//! their own database instead of shipping a fixture: each entry is an IPv4 network and the
//! GeoIP2-City-shaped record `{country: {iso_code, names: {en}}, subdivisions: [{iso_code}]}`
//! the service reads. Written from the public format description (MaxMind DB File Format
//! Specification 2.0).

use std::net::Ipv4Addr;

/// One network of the database: prefix, length, country code, English name, subdivision codes.
pub struct Entry<'a> {
    pub net: Ipv4Addr,
    pub len: u8,
    pub country: &'a str,
    pub name: &'a str,
    pub subdivisions: &'a [&'a str],
}

#[derive(Clone, Copy)]
enum Rec {
    Empty,
    Node(usize),
    Data(usize),
}

fn ctrl(out: &mut Vec<u8>, kind: u8, size: usize) {
    assert!(size < 29, "the test writer keeps every value short");
    if kind <= 7 {
        out.push((kind << 5) | size as u8);
    } else {
        out.push(size as u8);
        out.push(kind - 7);
    }
}

fn string(out: &mut Vec<u8>, s: &str) {
    ctrl(out, 2, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn uint(out: &mut Vec<u8>, kind: u8, v: u64) {
    let bytes = v.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    ctrl(out, kind, 8 - skip);
    out.extend_from_slice(&bytes[skip..]);
}

fn record(out: &mut Vec<u8>, e: &Entry<'_>) {
    ctrl(out, 7, 2);
    string(out, "country");
    ctrl(out, 7, 2);
    string(out, "iso_code");
    string(out, e.country);
    string(out, "names");
    ctrl(out, 7, 1);
    string(out, "en");
    string(out, e.name);
    string(out, "subdivisions");
    ctrl(out, 11, e.subdivisions.len());
    for s in e.subdivisions {
        ctrl(out, 7, 1);
        string(out, "iso_code");
        string(out, s);
    }
}

/// The database file's bytes.
pub fn build(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut nodes: Vec<[Rec; 2]> = vec![[Rec::Empty, Rec::Empty]];
    for e in entries {
        let offset = data.len();
        record(&mut data, e);
        let ip = u32::from(e.net);
        let mut cur = 0;
        for i in 0..e.len as u32 {
            let bit = ((ip >> (31 - i)) & 1) as usize;
            if i + 1 == e.len as u32 {
                nodes[cur][bit] = Rec::Data(offset);
            } else {
                cur = match nodes[cur][bit] {
                    Rec::Node(n) => n,
                    _ => {
                        nodes.push([Rec::Empty, Rec::Empty]);
                        let n = nodes.len() - 1;
                        nodes[cur][bit] = Rec::Node(n);
                        n
                    }
                };
            }
        }
    }
    let count = nodes.len();
    let mut out = Vec::new();
    for n in &nodes {
        for r in n {
            let v = match *r {
                Rec::Empty => count,
                Rec::Node(i) => i,
                Rec::Data(off) => count + 16 + off,
            } as u32;
            out.extend_from_slice(&v.to_be_bytes()[1..]);
        }
    }
    out.extend_from_slice(&[0u8; 16]);
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
    ctrl(&mut out, 7, 9);
    string(&mut out, "binary_format_major_version");
    uint(&mut out, 5, 2);
    string(&mut out, "binary_format_minor_version");
    uint(&mut out, 5, 0);
    string(&mut out, "build_epoch");
    uint(&mut out, 9, 1_795_000_000);
    string(&mut out, "database_type");
    string(&mut out, "Svc-Test-City");
    string(&mut out, "description");
    ctrl(&mut out, 7, 1);
    string(&mut out, "en");
    string(&mut out, "svc tests");
    string(&mut out, "ip_version");
    uint(&mut out, 5, 4);
    string(&mut out, "languages");
    ctrl(&mut out, 11, 1);
    string(&mut out, "en");
    string(&mut out, "node_count");
    uint(&mut out, 6, count as u64);
    string(&mut out, "record_size");
    uint(&mut out, 5, 24);
    out
}

/// The networks the GeoIP tests use: Texas, California, Germany (Berlin), France.
pub fn standard() -> Vec<u8> {
    build(&[
        Entry {
            net: Ipv4Addr::new(203, 0, 113, 0),
            len: 24,
            country: "US",
            name: "United States",
            subdivisions: &["TX"],
        },
        Entry {
            net: Ipv4Addr::new(198, 51, 100, 0),
            len: 24,
            country: "US",
            name: "United States",
            subdivisions: &["CA"],
        },
        Entry {
            net: Ipv4Addr::new(192, 0, 2, 0),
            len: 24,
            country: "DE",
            name: "Germany",
            subdivisions: &["BE"],
        },
        Entry {
            net: Ipv4Addr::new(100, 64, 0, 0),
            len: 16,
            country: "FR",
            name: "France",
            subdivisions: &[],
        },
    ])
}
