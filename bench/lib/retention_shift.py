"""Shifts a kept --events-scale database back in time for bench/retention.sh.

    retention_shift.py sqlite PATH|postgres URL AUDIT OLD WAIT

Every request row, the templates' days and (AUDIT=1) the audit entries move two days back, or,
with OLD=F (0 < F < 1), so far that the cutoff of a purge WAIT s after the server starts (a day
before it) falls after the first F of the rows. SQLite's template entries are refilled in the
writer's order (random places, as its trigger fills them); PostgreSQL is vacuumed after. A
PostgreSQL table partitioned by day (migration 0014) has each day moved whole (two days back only).
"""
import sqlite3
import subprocess
import sys
import time

kind, target, audit, old, wait = sys.argv[1:6]
DAY = 86400000
if kind == "sqlite":
    db = sqlite3.connect(target, isolation_level=None)
    one = lambda sql: db.execute(sql).fetchone()[0]
    run = lambda sql: db.execute(sql)
else:
    psql = lambda sql: subprocess.run(["psql", target, "-qAtc", sql], check=True, capture_output=True, text=True).stdout.strip()
    one = lambda sql: int(psql(sql))
    run = psql
shift, days = -2 * DAY, -2
if old:
    n = one("SELECT COUNT(*) FROM edge_requests")
    at = one(f"SELECT ts FROM edge_requests ORDER BY ts LIMIT 1 OFFSET {int(n * float(old))}")
    shift = int(time.time() * 1000) + (int(wait) + 5) * 1000 - DAY - at
    days = (at + shift) // DAY - at // DAY
statements = [f"UPDATE edge_requests SET ts = ts + {shift}",
              f"UPDATE edge_templates SET day = day + {days}, digest = digest || '-2'"]
if audit == "1":
    statements.append(f"UPDATE audit_logs SET created_at = created_at + {shift}")
if kind == "sqlite":
    statements += ["DELETE FROM edge_request_tpls",
                   "INSERT INTO edge_request_tpls (tpl, ts, seq, rs) SELECT tpl, ts, seq, rs FROM edge_requests "
                   "WHERE tpl IS NOT NULL ORDER BY seq"]
if kind == "sqlite":
    for sql in ["BEGIN", *statements, "COMMIT", "PRAGMA wal_checkpoint(TRUNCATE)"]:
        run(sql)
elif one("SELECT COUNT(*) FROM pg_class WHERE relname = 'edge_requests' AND relkind = 'p'"):
    # Partitioned by day (migration 0014): each day's partition holding rows is detached, its
    # rows shifted in place, and attached again as the day they now fall in (oldest first, so
    # that no range is taken); the rows before the migration's partition end stay in it.
    if shift % DAY:
        sys.exit("retention_shift.py: PostgreSQL's day partitions shift by whole days only (no OLD)")
    legacy = one("SELECT COUNT(*) FROM pg_class WHERE relname = 'edge_requests_legacy'")
    if legacy and not one("SELECT COUNT(*) FROM (SELECT 1 FROM edge_requests_legacy LIMIT 1) AS x"):
        # Empty (a fill migrated by a build before 0014 dropped an empty one): it holds every day
        # before its end, so the days shifted could not be attached.
        run("ALTER TABLE edge_requests DETACH PARTITION edge_requests_legacy; DROP TABLE edge_requests_legacy")
        legacy = 0
    parts = []
    for line in psql("SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits AS i "
                     "JOIN pg_class AS c ON c.oid = i.inhrelid WHERE i.inhparent = 'edge_requests'::regclass").splitlines():
        name, bound = line.split("|")
        lo, hi = (v.strip(" ()'") for v in bound.split("FROM", 1)[1].split("TO"))
        if lo != "MINVALUE" and one(f"SELECT COUNT(*) FROM (SELECT 1 FROM {name} LIMIT 1) AS x"):
            parts.append((int(lo), int(hi), name))
    for lo, hi, name in sorted(parts):
        new = time.strftime("edge_requests_p%Y%m%d", time.gmtime((lo + shift) // 1000))
        run(f"ALTER TABLE edge_requests DETACH PARTITION {name}")
        run(f"UPDATE {name} SET ts = ts + {shift}")
        run(f"ALTER TABLE {name} RENAME TO {new}")
        run(f"ALTER TABLE edge_requests ATTACH PARTITION {new} FOR VALUES FROM ({lo + shift}) TO ({hi + shift})")
    moved = [f"UPDATE edge_requests_legacy SET ts = ts + {shift}"] if legacy else []
    run("BEGIN; " + "; ".join(moved + statements[1:]) + "; COMMIT")
    run("VACUUM ANALYZE")
else:
    run("BEGIN; " + "; ".join(statements) + "; COMMIT")
    run("VACUUM ANALYZE")
