//! The client-port order (issue 34). On PostgreSQL `edge_requests` has an index on `(rs, port
//! NULLS FIRST, ts, seq)` (migration 0012), and a list ordered on the port reads each resource
//! set's rows in its order; its insert is PostgreSQL's work in each event transaction. SQLite has
//! none: there it would be the server's own, ~9,400 instructions a `/credentials` request (a
//! table of it filled in the background ~8,000 at the least), over issue 34's budget
//! (docs/PERFORMANCE.md); its lists sort the window's rows.

use super::event_pages::{Window, dense_rows};
use super::{Dialect, Store};

impl Store {
    /// Whether `edge_requests` has the client-port index (PostgreSQL; see the module).
    pub fn keeps_port_index(&self) -> bool {
        self.dialect() == Dialect::Postgres
    }

    /// A statement giving the first `need` rows (`seq, tpl, ts, port`) of the window `w` among
    /// the templates `tpls` (an id list) by client port, then time, then the order written (all
    /// of it reversed when `desc`; no port lowest). PostgreSQL reads each resource set's rows in
    /// the index's order and merges them (the index does not order a list of sets); SQLite sorts
    /// the window's rows.
    pub(super) fn rows_by_port(&self, w: &Window<'_>, tpls: &str, desc: bool, need: usize) -> String {
        let dir = if desc { "DESC" } else { "ASC" };
        let order = format!(
            "ORDER BY port {dir}{nulls}, ts {dir}, seq {dir} LIMIT {need}",
            nulls = self.nulls_lowest(desc)
        );
        debug_assert!(!w.rs.is_empty(), "a window has a resource set");
        if !self.keeps_port_index() {
            return dense_rows(w.conds, tpls, &order);
        }
        let one_set = |rs: &String| dense_rows(&format!("rs = {rs} AND {}", w.times), tpls, &order);
        match w.rs {
            [rs] => one_set(rs),
            sets => {
                let parts: Vec<String> = sets
                    .iter()
                    .enumerate()
                    .map(|(i, rs)| format!("SELECT * FROM ({}) AS p{i}", one_set(rs)))
                    .collect();
                format!(
                    "SELECT seq, tpl, ts, port FROM ({}) AS u {order}",
                    parts.join(" UNION ALL ")
                )
            }
        }
    }
}
