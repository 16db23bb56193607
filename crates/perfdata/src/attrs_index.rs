//! Finding a record's attr by event id.

use crate::attr::{AttrEntry, EventAttr};
use crate::record::AttrLookup;

/// The file's attrs with a sorted id index (a handful of ids per CPU, so a
/// binary search beats hashing).
#[derive(Debug, Clone, Default)]
pub struct Attrs {
    entries: Vec<AttrEntry>,
    by_id: Vec<(u64, usize)>,
}

impl Attrs {
    /// Index `entries` by their ids.
    pub fn new(entries: Vec<AttrEntry>) -> Attrs {
        let mut by_id: Vec<(u64, usize)> = entries
            .iter()
            .enumerate()
            .flat_map(|(i, e)| e.ids.iter().map(move |&id| (id, i)))
            .collect();
        by_id.sort_unstable();
        Attrs { entries, by_id }
    }

    /// The attrs, in the file's order.
    pub fn entries(&self) -> &[AttrEntry] {
        &self.entries
    }

    /// Index into [`Attrs::entries`] of the attr that event `id` belongs to.
    pub fn index_of(&self, id: u64) -> Option<usize> {
        if self.entries.len() == 1 {
            return Some(0);
        }
        self.by_id
            .binary_search_by_key(&id, |&(i, _)| i)
            .ok()
            .map(|k| self.by_id[k].1)
    }
}

impl AttrLookup for Attrs {
    fn attr_for_id(&self, id: u64) -> Option<&EventAttr> {
        self.index_of(id).map(|i| &self.entries[i].attr)
    }
    fn first(&self) -> Option<&EventAttr> {
        self.entries.first().map(|e| &e.attr)
    }
    fn listener(&self, flag: u64) -> Option<&EventAttr> {
        self.entries
            .iter()
            .map(|e| &e.attr)
            .find(|a| a.flags & flag != 0)
    }
}
