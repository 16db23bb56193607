//! Putting a symbol table in address order. A big binary has tens of
//! thousands of function symbols, in no useful order; sorting them was
//! most of the time spent loading its symbols, and a radix sort on the
//! bytes in which the addresses differ (three or four of eight) is a few
//! passes over the table.

/// The indices of `starts` in address order; equal addresses keep their
/// order (the sort is stable).
pub(super) fn order(starts: &[u64]) -> Vec<u32> {
    let mut items: Vec<(u64, u32)> = starts.iter().copied().zip(0..).collect();
    let (mut low, mut high) = (u64::MAX, 0);
    for &(s, _) in &items {
        low = low.min(s);
        high = high.max(s);
    }
    if items.len() < 256 {
        // Stable, and cheaper than counting for a small table.
        items.sort_by_key(|&(s, _)| s);
        return items.into_iter().map(|(_, i)| i).collect();
    }
    // Only the bytes below the highest one in which two addresses differ.
    let digits = (64 - (low ^ high).leading_zeros()).div_ceil(8);
    let mut spare = vec![(0u64, 0u32); items.len()];
    for d in 0..digits {
        let shift = 8 * d;
        let digit = |s: u64| ((s >> shift) & 0xff) as usize;
        let mut at = [0usize; 256];
        for &(s, _) in &items {
            at[digit(s)] += 1;
        }
        let mut sum = 0;
        for slot in at.iter_mut() {
            (*slot, sum) = (sum, sum + *slot);
        }
        for &item in &items {
            let slot = &mut at[digit(item.0)];
            spare[*slot] = item;
            *slot += 1;
        }
        std::mem::swap(&mut items, &mut spare);
    }
    items.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::order;

    /// The oracle: the standard library's stable sort.
    fn by_std(starts: &[u64]) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..starts.len() as u32).collect();
        idx.sort_by_key(|&i| starts[i as usize]);
        idx
    }

    #[test]
    fn orders_as_a_stable_sort_does() {
        let mut rng = crate::test_rng::XorShift::new();
        let mut next = || rng.next();
        let cases: Vec<Vec<u64>> = vec![
            vec![],
            vec![5],
            (0..100).map(|_| next() % 50).collect(),
            // Addresses of a binary: many equal (aliases), a few bytes wide.
            (0..5000)
                .map(|_| 0x40_0000 + (next() % 3000) * 16)
                .collect(),
            // Every byte differs somewhere, the top one included.
            (0..5000).map(|_| next()).collect(),
            (0..3000).map(|i| 1000 - i / 3).collect(),
        ];
        for starts in cases {
            assert_eq!(order(&starts), by_std(&starts), "{} starts", starts.len());
        }
    }
}
