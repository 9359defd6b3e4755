//! Where a range starts and ends: the Python source's `offsets.Bound`, and when to stop reading.

/// Everything before (ledger, entry, batch), and that message too when `inclusive`; `batch < 0`
/// stands for the whole entry. The same rule as `pulsar_external_schema.tasks.offsets.Bound`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub ledger: i64,
    pub entry: i64,
    pub batch: i32,
    pub inclusive: bool,
}

/// A bound as Python gives it: (ledger, entry, batch index, inclusive), `spark.offsets.Bound`'s.
pub type Position = (i64, i64, i32, bool);
/// A message's place as Python takes it: (ledger, entry, batch index).
pub type Place = (i64, i64, i32);

impl From<Position> for Bound {
    fn from((ledger, entry, batch, inclusive): Position) -> Self {
        Bound { ledger, entry, batch, inclusive }
    }
}

impl Bound {
    pub fn covers(&self, ledger: i64, entry: i64, batch: i32) -> bool {
        if (ledger, entry) != (self.ledger, self.entry) {
            return (ledger, entry) < (self.ledger, self.entry);
        }
        if self.batch < 0 {
            return self.inclusive;
        }
        batch < self.batch || (batch == self.batch && self.inclusive)
    }
}

/// A message's place in the range.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Behind the start bound: skip it.
    Before,
    /// Inside the range: read it.
    Inside,
    /// Past the end bound: stop, without it.
    After,
}

/// The range one task reads: after `start` (None: from the earliest message) up to `end`.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    pub start: Option<Bound>,
    pub end: Bound,
    /// (ledger, entry) of the last entry written when the read began: the read stops after it
    /// even where `end` lies further on (an exclusive end that was not written yet).
    pub last_written: (i64, i64),
}

impl Range {
    pub fn place(&self, ledger: i64, entry: i64, batch: i32) -> Verdict {
        if self.start.is_some_and(|s| s.covers(ledger, entry, batch)) {
            Verdict::Before
        } else if self.end.covers(ledger, entry, batch) {
            Verdict::Inside
        } else {
            Verdict::After
        }
    }

    /// Whether nothing can follow a message that is the last of its entry at (ledger, entry).
    pub fn done_after_entry(&self, ledger: i64, entry: i64) -> bool {
        let stop = std::cmp::min((self.end.ledger, self.end.entry), self.last_written);
        (ledger, entry) >= stop
    }

    /// (ledger, entry) of the first entry with a message to read, as the broker's cursor takes it.
    pub fn first_entry(&self) -> Option<(i64, i64)> {
        let s = self.start?;
        if s.batch < 0 && s.inclusive {
            Some((s.ledger, s.entry + 1)) // the whole entry is behind
        } else {
            Some((s.ledger, s.entry))
        }
    }

    /// Whether the range has nothing written to read.
    pub fn nothing_written(&self) -> bool {
        self.last_written.0 < 0
            || self.last_written.1 < 0
            || self.first_entry().is_some_and(|first| self.last_written < first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(ledger: i64, entry: i64, batch: i32, inclusive: bool) -> Bound {
        Bound { ledger, entry, batch, inclusive }
    }

    #[test]
    fn covers_as_the_python_bound() {
        let whole = bound(5, 3, -1, true);
        assert!(whole.covers(5, 2, 7) && whole.covers(5, 3, 9) && !whole.covers(5, 4, 0));
        let none_of = bound(5, 3, -1, false);
        assert!(none_of.covers(5, 2, 0) && !none_of.covers(5, 3, 0));
        let at = bound(5, 3, 2, true);
        assert!(at.covers(5, 3, 2) && !at.covers(5, 3, 3));
        let before = bound(5, 3, 2, false);
        assert!(before.covers(5, 3, 1) && !before.covers(5, 3, 2));
    }

    #[test]
    fn a_range_inside_an_entry() {
        let range = Range {
            start: Some(bound(5, 3, 2, true)),
            end: bound(5, 3, 6, true),
            last_written: (5, 9),
        };
        assert_eq!(range.first_entry(), Some((5, 3)));
        assert_eq!(range.place(5, 3, 2), Verdict::Before);
        assert_eq!(range.place(5, 3, 3), Verdict::Inside);
        assert_eq!(range.place(5, 3, 7), Verdict::After);
        assert!(range.done_after_entry(5, 3) && !range.done_after_entry(5, 2));
    }

    #[test]
    fn an_end_not_written_yet_stops_at_the_last_entry() {
        let range = Range { start: None, end: bound(9, 0, -1, false), last_written: (5, 9) };
        assert!(!range.done_after_entry(5, 8) && range.done_after_entry(5, 9));
        assert!(!range.nothing_written());
        let empty = Range { start: Some(bound(5, 9, -1, true)), ..range };
        assert!(empty.nothing_written());
    }
}
