//! The request rows kept by client port in memory (issue 34, SQLite; `store::ports` reads and
//! feeds it): per UTC day and resource set, the lowest and highest rows by port, time and order
//! written. Every row a part was fed whose key is at most its lowest kept's greatest is among
//! them (a kept row leaves only for a lower one), and so for the highest: a page whose rows all
//! lie within that is the database's, once each of its rows is found there as kept.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use uuid::Uuid;

use super::events::{day_of, day_start};

/// The rows each end of a part keeps: a first page of `per-page`'s largest size (1,000 rows).
pub const KEEP: usize = 1_000;

/// The parts that keep rows, at most (~64 KB each: ~64 MB); beyond, the oldest day's stop
/// keeping (a list then sorts that day's rows, as it does without the sketch).
pub const KEPT_PARTS: usize = 1_024;

/// The rows of a resource set the start's read sorts at a time, at most (~80 ms at ten million).
pub const BUILD_STRETCH: usize = 250_000;

/// A request row as the sketch keeps it, in the port order (then time, then the order written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub port: u16,
    pub ts: i64,
    pub seq: i64,
    pub tpl: i64,
}

/// The rows of one UTC day of one resource set, as far as the sketch keeps them.
#[derive(Default)]
struct Part {
    /// The lowest rows fed (greatest on top).
    low: BinaryHeap<Entry>,
    /// The highest rows fed (least on top).
    high: BinaryHeap<Reverse<Entry>>,
    /// The rows fed (a row both read at the build and fed meanwhile counts twice).
    seen: u64,
    /// Whether it keeps its ends ([`KEPT_PARTS`]): a list sorts the rows of a part that does not.
    kept: bool,
}

impl Part {
    fn add(&mut self, e: Entry, keep: usize) {
        self.seen += 1;
        if !self.kept {
            return;
        }
        if self.low.len() < keep {
            self.low.push(e);
        } else if let Some(mut top) = self.low.peek_mut()
            && e < *top
        {
            *top = e;
        }
        if self.high.len() < keep {
            self.high.push(Reverse(e));
        } else if let Some(mut top) = self.high.peek_mut()
            && e > top.0
        {
            *top = Reverse(e);
        }
    }
}

/// The sketch's sizes: rows kept per end, parts kept, rows per sort of the start's read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub keep: usize,
    pub parts: usize,
    pub stretch: usize,
}

impl Default for Sizes {
    fn default() -> Sizes {
        Sizes {
            keep: KEEP,
            parts: KEPT_PARTS,
            stretch: BUILD_STRETCH,
        }
    }
}

/// Whether lists may read the sketch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Not built (or its build failed): lists sort, nothing is fed.
    #[default]
    Off,
    /// Built by the read of this generation, rows fed meanwhile.
    Building(u64),
    /// Every stored row with a port of a day not forgotten has been fed or read.
    Ready,
}

/// How far a share's candidates are all of its rows, in the list's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exact {
    /// Every row.
    All,
    /// Every row up to this one (included).
    UpTo(Entry),
    /// None: its rows are sorted from the database.
    Nothing,
}

impl Exact {
    /// Whether the candidates hold every row of the share up to `last`, a page's last row in the
    /// list's order (`None`: the page is not full, so every row).
    pub fn reaches(self, last: Option<&Entry>, desc: bool) -> bool {
        match (self, last) {
            (Exact::All, _) => true,
            (Exact::UpTo(end), Some(last)) => !before(&end, last, desc),
            _ => false,
        }
    }
}

/// A list's share of the rows of one resource set in a stretch of time (a day's part, or the
/// days retention has passed): the candidates the sketch keeps there, and how far they are exact.
pub struct Share {
    pub rs: Uuid,
    pub from: i64,
    pub to: i64,
    pub rows: Vec<Entry>,
    pub exact: Exact,
}

impl Share {
    /// Keeps the candidates within its time and among `tpls`, in the list's order, each once (a
    /// row read at the build and fed meanwhile is kept twice).
    pub fn select(&mut self, tpls: &impl Fn(i64) -> bool, desc: bool) {
        let (from, to) = (self.from, self.to);
        self.rows.retain(|e| e.ts >= from && e.ts < to && tpls(e.tpl));
        sort(&mut self.rows, desc);
        self.rows.dedup();
    }
}

/// Whether `a` comes before `b` in the list's order.
fn before(a: &Entry, b: &Entry, desc: bool) -> bool {
    if desc { a > b } else { a < b }
}

/// Sorts in the list's order.
pub fn sort(rows: &mut [Entry], desc: bool) {
    rows.sort_unstable();
    if desc {
        rows.reverse();
    }
}

/// The rows kept by port (see the module).
#[derive(Default)]
pub struct PortSketch {
    state: State,
    generation: u64,
    /// The sizes in force, and those of the next build (tests set smaller ones).
    sizes: Sizes,
    next: Sizes,
    parts: HashMap<(i64, Uuid), Part>,
    kept_parts: usize,
    /// The days before this one are forgotten (retention passed them): no part, rows not kept.
    forgotten_before: Option<i64>,
    /// Lists read through it since start.
    pub reads: u64,
    /// Shares whose rows those lists sorted from the database.
    pub sorted: u64,
}

impl PortSketch {
    /// The sizes of the next build.
    pub fn resize(&mut self, sizes: Sizes) {
        self.next = sizes;
    }

    /// Starts a build: rows fed from now on are kept; returns its generation and sizes.
    pub fn start_build(&mut self) -> (u64, Sizes) {
        self.generation += 1;
        self.state = State::Building(self.generation);
        self.sizes = self.next;
        self.parts.clear();
        self.kept_parts = 0;
        (self.generation, self.sizes)
    }

    /// Ends the build of `generation` (unless another started since): lists read it when `ok`,
    /// else it is dropped.
    pub fn finish_build(&mut self, generation: u64, ok: bool) {
        if self.state != State::Building(generation) {
            return;
        }
        if ok {
            self.state = State::Ready;
        } else {
            self.state = State::Off;
            self.parts.clear();
            self.kept_parts = 0;
        }
    }

    /// Whether the build of `generation` is still the one running.
    pub fn building(&self, generation: u64) -> bool {
        self.state == State::Building(generation)
    }

    /// Whether rows stored now are to be fed.
    pub fn feeding(&self) -> bool {
        self.state != State::Off
    }

    /// Feeds a row of resource set `rs` (stored, or read by the build).
    pub fn add(&mut self, rs: Uuid, e: Entry) {
        let day = day_of(e.ts);
        if self.forgotten_before.is_some_and(|f| day < f) {
            return;
        }
        let keep = self.sizes.keep;
        // One lookup for a row of a known part (nearly every row).
        if let Some(part) = self.parts.get_mut(&(day, rs)) {
            part.add(e, keep);
            return;
        }
        let kept = self.make_room(day);
        self.kept_parts += usize::from(kept);
        let mut part = Part {
            kept,
            ..Part::default()
        };
        part.add(e, keep);
        self.parts.insert((day, rs), part);
    }

    /// Whether a new part of `day` may keep rows: under [`Sizes::parts`], or once the oldest
    /// day's part kept, if older, stops keeping.
    fn make_room(&mut self, day: i64) -> bool {
        if self.kept_parts < self.sizes.parts {
            return true;
        }
        let oldest = self.parts.iter().filter(|(_, p)| p.kept).map(|(k, _)| *k).min();
        match oldest.and_then(|k| self.parts.get_mut(&k).filter(|_| k.0 < day)) {
            Some(part) => {
                *part = Part {
                    seen: part.seen,
                    ..Part::default()
                };
                self.kept_parts -= 1;
                true
            }
            None => false,
        }
    }

    /// Retention deleted the rows before `day`: those days are forgotten. Their rows (what a
    /// stream's floor held back, a row written late) are sorted when listed.
    pub fn forget_before(&mut self, day: i64) {
        if self.forgotten_before.is_some_and(|f| day <= f) {
            return;
        }
        self.forgotten_before = Some(day);
        self.parts.retain(|(d, _), _| *d >= day);
        self.kept_parts = self.parts.values().filter(|p| p.kept).count();
    }

    /// The shares of a list of resource sets `sets` in `from..to` (ms), in the order `desc`,
    /// their candidates not yet selected ([`Share::select`]); `None` before the sketch is built
    /// or for a page deeper than it keeps (`need` rows).
    pub fn shares(&mut self, sets: &[Uuid], from: i64, to: i64, desc: bool, need: usize) -> Option<Vec<Share>> {
        if self.state != State::Ready || need > self.sizes.keep {
            return None;
        }
        self.reads += 1;
        let (first, last) = (day_of(from), day_of(to.saturating_sub(1)));
        let mut shares = Vec::new();
        for ((day, rs), part) in &self.parts {
            if *day < first || *day > last || !sets.contains(rs) {
                continue;
            }
            let (rows, end): (Vec<Entry>, Option<Entry>) = if desc {
                (part.high.iter().map(|r| r.0).collect(), part.high.peek().map(|r| r.0))
            } else {
                (part.low.iter().copied().collect(), part.low.peek().copied())
            };
            let exact = match end {
                _ if !part.kept => Exact::Nothing,
                _ if part.seen <= self.sizes.keep as u64 => Exact::All,
                Some(end) => Exact::UpTo(end),
                None => Exact::Nothing,
            };
            shares.push(Share {
                rs: *rs,
                from: from.max(day_start(*day)),
                to: to.min(day_start(day.saturating_add(1))),
                rows,
                exact,
            });
        }
        // The days forgotten: sorted, each set's at once.
        let forgotten = self.forgotten_before.map_or(i64::MIN, day_start);
        if from < forgotten {
            shares.extend(sets.iter().map(|rs| Share {
                rs: *rs,
                from,
                to: to.min(forgotten),
                rows: Vec::new(),
                exact: Exact::Nothing,
            }));
        }
        Some(shares)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::events::DAY_MS;

    fn entry(port: u16, seq: i64) -> Entry {
        Entry {
            port,
            ts: 5 * DAY_MS + seq,
            seq,
            tpl: 1,
        }
    }

    fn ready(sizes: Sizes) -> PortSketch {
        let mut sketch = PortSketch::default();
        sketch.resize(sizes);
        let (generation, _) = sketch.start_build();
        sketch.finish_build(generation, true);
        sketch
    }

    /// A part keeps its lowest and highest rows whatever order they come in; a part fed no more
    /// than it keeps is whole; a row fed twice is listed once.
    #[test]
    fn a_part_keeps_its_ends() {
        let sizes = Sizes {
            keep: 3,
            ..Sizes::default()
        };
        let rs = Uuid::from_u128(1);
        let mut sketch = ready(sizes);
        for (i, port) in [50, 10, 40, 30, 20, 60, 70, 5].into_iter().enumerate() {
            sketch.add(rs, entry(port, i as i64));
        }
        let mut shares = sketch.shares(&[rs], 0, i64::MAX, false, 3).unwrap();
        assert_eq!(shares.len(), 1);
        shares[0].select(&|_| true, false);
        let ports: Vec<u16> = shares[0].rows.iter().map(|e| e.port).collect();
        assert_eq!(ports, [5, 10, 20]);
        assert_eq!(shares[0].exact, Exact::UpTo(entry(20, 4)));
        let mut shares = sketch.shares(&[rs], 0, i64::MAX, true, 3).unwrap();
        shares[0].select(&|_| true, true);
        let ports: Vec<u16> = shares[0].rows.iter().map(|e| e.port).collect();
        assert_eq!(ports, [70, 60, 50]);
        assert!(
            sketch.shares(&[rs], 0, i64::MAX, false, 4).is_none(),
            "deeper than kept"
        );
        // Whole: two rows, one of them fed twice (read by the build and fed).
        let mut sketch = ready(sizes);
        sketch.add(rs, entry(9, 1));
        sketch.add(rs, entry(8, 2));
        sketch.add(rs, entry(9, 1));
        let mut shares = sketch.shares(&[rs], 0, i64::MAX, false, 3).unwrap();
        shares[0].select(&|_| true, false);
        assert_eq!(shares[0].rows, [entry(8, 2), entry(9, 1)]);
        assert_eq!(shares[0].exact, Exact::All);
        assert!(Exact::All.reaches(None, false));
        assert!(!Exact::UpTo(entry(9, 1)).reaches(None, false));
        assert!(Exact::UpTo(entry(9, 1)).reaches(Some(&entry(9, 1)), false));
        assert!(!Exact::UpTo(entry(9, 1)).reaches(Some(&entry(10, 1)), false));
        assert!(Exact::UpTo(entry(9, 1)).reaches(Some(&entry(10, 1)), true));
    }

    /// Beyond the parts it may keep, a newer day's part takes the oldest's place, which then
    /// keeps nothing (its rows are sorted); an older day's part keeps nothing. Forgotten days
    /// have no part, and a list of them sorts each set's rows.
    #[test]
    fn the_newest_days_are_kept() {
        let rs = Uuid::from_u128(1);
        let mut sketch = ready(Sizes {
            keep: 2,
            parts: 2,
            stretch: 10,
        });
        let at = |day: i64, port: u16| Entry {
            port,
            ts: day * DAY_MS + 1,
            seq: day,
            tpl: 1,
        };
        for day in [3, 4, 5, 2] {
            sketch.add(rs, at(day, 7));
        }
        let exact = |sketch: &mut PortSketch, day: i64| {
            let shares = sketch
                .shares(&[rs], day_start(day), day_start(day + 1), false, 1)
                .unwrap();
            shares.iter().map(|s| s.exact).collect::<Vec<_>>()
        };
        assert_eq!(exact(&mut sketch, 3), [Exact::Nothing]);
        assert_eq!(exact(&mut sketch, 4), [Exact::All]);
        assert_eq!(exact(&mut sketch, 5), [Exact::All]);
        assert_eq!(exact(&mut sketch, 2), [Exact::Nothing]);
        sketch.forget_before(4);
        sketch.add(rs, at(3, 9));
        // Day 3: the forgotten days' share only (no part).
        let shares = sketch.shares(&[rs], day_start(3), day_start(4), false, 1).unwrap();
        assert_eq!(shares.len(), 1);
        assert_eq!(
            (shares[0].from, shares[0].to, shares[0].exact),
            (day_start(3), day_start(4), Exact::Nothing)
        );
        assert_eq!(exact(&mut sketch, 4), [Exact::All]);
        assert_eq!(sketch.kept_parts, 2);
    }

    /// A build superseded by another neither keeps rows nor makes the sketch ready; a failed
    /// build leaves nothing kept and nothing fed.
    #[test]
    fn only_the_last_build_counts() {
        let mut sketch = PortSketch::default();
        assert!(!sketch.feeding());
        let (first, _) = sketch.start_build();
        let (second, _) = sketch.start_build();
        assert!(!sketch.building(first) && sketch.building(second));
        sketch.finish_build(first, true);
        assert!(sketch.shares(&[], 0, 1, false, 1).is_none());
        sketch.add(Uuid::from_u128(1), entry(1, 1));
        sketch.finish_build(second, false);
        assert!(!sketch.feeding());
        assert!(sketch.parts.is_empty());
    }
}
