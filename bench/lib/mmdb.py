#!/usr/bin/env python3
"""A minimal MaxMind DB writer (format 2.0, IPv4 tree, 24-bit records), standard library only, for
the benchmark's GeoIP database (`bench/run.sh --conditions`, read by svc from SVC_GEOIP_DB).

A port of crates/svc-server/tests/it/conditions/mmdb.rs, the writer the tests use (written from
the MaxMind DB File Format Specification 2.0): each entry is an IPv4 network and the
GeoIP2-City-shaped record `{country: {iso_code, names: {en}}, subdivisions: [{iso_code}]}` the
service reads.

    mmdb.py OUT NET/LEN COUNTRY NAME [SUBDIVISION...]
        e.g. `mmdb.py geoip.mmdb 127.0.0.0/8 US "United States" TX`. When the `maxminddb` Python
        package is importable, the written file is read back with it and the record of the
        network's first address checked; otherwise the check is left to the service.
"""
import ipaddress
import sys
from dataclasses import dataclass, field

# Data-section types of the format (the ones this writer needs).
MAP, STRING, UINT16, UINT32, UINT64, ARRAY = 7, 2, 5, 6, 9, 11


@dataclass
class Entry:
    """One network of the database: prefix, length, country code, English name, subdivision codes."""
    net: str
    len: int
    country: str
    name: str
    subdivisions: list = field(default_factory=list)


def ctrl(out: bytearray, kind: int, size: int) -> None:
    # The control byte: type in the top 3 bits (extended types: 0 there, type - 7 in the next
    # byte), size in the low 5 bits (29..31: the size follows in 1..3 more bytes).
    if size < 29:
        first, rest = size, b""
    elif size < 29 + 256:
        first, rest = 29, (size - 29).to_bytes(1, "big")
    elif size < 285 + 65536:
        first, rest = 30, (size - 285).to_bytes(2, "big")
    else:
        first, rest = 31, (size - 65821).to_bytes(3, "big")
    if kind <= 7:
        out.append((kind << 5) | first)
    else:
        out.append(first)
        out.append(kind - 7)
    out += rest


def string(out: bytearray, s: str) -> None:
    b = s.encode()
    ctrl(out, STRING, len(b))
    out += b


def uint(out: bytearray, kind: int, v: int) -> None:
    b = v.to_bytes(8, "big").lstrip(b"\0")
    ctrl(out, kind, len(b))
    out += b


def record(out: bytearray, e: Entry) -> None:
    ctrl(out, MAP, 2)
    string(out, "country")
    ctrl(out, MAP, 2)
    string(out, "iso_code")
    string(out, e.country)
    string(out, "names")
    ctrl(out, MAP, 1)
    string(out, "en")
    string(out, e.name)
    string(out, "subdivisions")
    ctrl(out, ARRAY, len(e.subdivisions))
    for s in e.subdivisions:
        ctrl(out, MAP, 1)
        string(out, "iso_code")
        string(out, s)


# Tree records: ("empty",), ("node", index) or ("data", offset in the data section).
EMPTY = ("empty", 0)


def build(entries: list) -> bytes:
    """The database file's bytes."""
    data = bytearray()
    nodes = [[EMPTY, EMPTY]]
    for e in entries:
        offset = len(data)
        record(data, e)
        ip = int(ipaddress.IPv4Address(e.net))
        cur = 0
        for i in range(e.len):
            bit = (ip >> (31 - i)) & 1
            if i + 1 == e.len:
                nodes[cur][bit] = ("data", offset)
            else:
                kind, n = nodes[cur][bit]
                if kind != "node":
                    nodes.append([EMPTY, EMPTY])
                    n = len(nodes) - 1
                    nodes[cur][bit] = ("node", n)
                cur = n
    count = len(nodes)
    out = bytearray()
    for n in nodes:
        for kind, v in n:
            value = {"empty": count, "node": v, "data": count + 16 + v}[kind]
            out += value.to_bytes(3, "big")
    out += bytes(16)
    out += data
    out += b"\xab\xcd\xefMaxMind.com"
    ctrl(out, MAP, 9)
    string(out, "binary_format_major_version")
    uint(out, UINT16, 2)
    string(out, "binary_format_minor_version")
    uint(out, UINT16, 0)
    string(out, "build_epoch")
    uint(out, UINT64, 1_795_000_000)
    string(out, "database_type")
    string(out, "Svc-Bench-City")
    string(out, "description")
    ctrl(out, MAP, 1)
    string(out, "en")
    string(out, "svc benchmark")
    string(out, "ip_version")
    uint(out, UINT16, 4)
    string(out, "languages")
    ctrl(out, ARRAY, 1)
    string(out, "en")
    string(out, "node_count")
    uint(out, UINT32, count)
    string(out, "record_size")
    uint(out, UINT16, 24)
    return bytes(out)


def main() -> int:
    if len(sys.argv) < 5:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    out, net, country, name, subs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
    n = ipaddress.IPv4Network(net)
    entry = Entry(str(n.network_address), n.prefixlen, country, name, subs)
    with open(out, "wb") as f:
        f.write(build([entry]))
    try:
        import maxminddb  # noqa: PLC0415 - optional, only to check the file
    except ImportError:
        print(f"mmdb: wrote {out} ({net} -> {country}); maxminddb not installed, not read back")
        return 0
    with maxminddb.open_database(out) as r:
        got = r.get(str(n.network_address))
    want = {"country": {"iso_code": country, "names": {"en": name}},
            "subdivisions": [{"iso_code": s} for s in subs]}
    if got != want:
        raise SystemExit(f"mmdb: {out}: maxminddb read {got!r}, want {want!r}")
    print(f"mmdb: wrote {out} ({net} -> {country}); read back with maxminddb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
