//! Work split over the cores (in consecutive parts, or item by item as
//! cores free up), for the steps of a report that only read: one core
//! would otherwise work while the others idle.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many cores to use: all, up to 8 (past that, merging costs more
/// than the parts save).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Items per part of `n`: a part per core, of at least `min` items.
fn part_len(n: usize, min: usize) -> usize {
    n.div_ceil(cores()).max(min).max(1)
}

/// `f` of consecutive parts of `items`, in order: a part per core, of at
/// least `min` items (a thread costs more than a few items save). The
/// first part runs on this thread.
pub fn map_parts<'a, T: Sync, R: Send>(
    items: &'a [T],
    min: usize,
    f: impl Fn(&'a [T]) -> R + Sync,
) -> Vec<R> {
    let mut parts = items.chunks(part_len(items.len(), min));
    let first = parts.next().unwrap_or_default();
    let f = &f;
    std::thread::scope(|s| {
        let others: Vec<_> = parts.map(|part| s.spawn(move || f(part))).collect();
        let mut out = vec![f(first)];
        for h in others {
            out.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        out
    })
}

/// `f` of consecutive parts of `items`, each part changed in place: a
/// part per core, of at least `min` items, each given with the index of
/// its first item. The first part runs on this thread.
pub fn for_parts_mut<T: Send>(items: &mut [T], min: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let per_part = part_len(items.len(), min);
    let mut parts = items.chunks_mut(per_part).enumerate();
    let Some((_, first)) = parts.next() else {
        return;
    };
    let f = &f;
    std::thread::scope(|s| {
        for (i, part) in parts {
            s.spawn(move || f(i * per_part, part));
        }
        f(0, first);
    });
}

/// `a` on another core while `b` runs on this thread: two steps of
/// different work that only read what they share.
pub fn join<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    if cores() < 2 {
        return (a(), b());
    }
    std::thread::scope(|s| {
        let a = s.spawn(a);
        let b = b();
        (a.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), b)
    })
}

/// The next of `n` items for a worker to take, counted in `next`; `None`
/// once all are taken.
pub fn take(next: &AtomicUsize, n: usize) -> Option<usize> {
    let i = next.fetch_add(1, Ordering::Relaxed);
    (i < n).then_some(i)
}

/// `f` of each item, on every core, each core taking the next item when
/// it is done with one: for a few items of very uneven cost. In order.
pub fn map_each<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while let Some(i) = take(&next, items.len()) {
            done.push((i, f(&items[i])));
        }
        done
    };
    let mut all = std::thread::scope(|s| {
        let others: Vec<_> = (1..cores().min(items.len()))
            .map(|_| s.spawn(work))
            .collect();
        let mut all = work();
        for h in others {
            all.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        all
    });
    all.sort_unstable_by_key(|&(i, _)| i);
    all.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_come_back_in_order_and_cover_everything() {
        let items: Vec<u32> = (0..10_000).collect();
        for min in [1, 7, 4096, 20_000] {
            let parts = map_parts(&items, min, |p| p.to_vec());
            assert!(parts.len() <= cores().max(1));
            assert!(parts.iter().all(|p| !p.is_empty()));
            assert_eq!(parts.concat(), items, "min {min}");
        }
        assert_eq!(map_parts(&[] as &[u32], 1, |p| p.len()), vec![0]);
    }

    #[test]
    fn parts_changed_in_place_know_where_they_start() {
        for (n, min) in [(10_000, 1), (10_000, 4096), (10, 20_000), (0, 1)] {
            let mut items = vec![0usize; n];
            for_parts_mut(&mut items, min, |start, part| {
                for (i, x) in part.iter_mut().enumerate() {
                    *x += start + i + 1;
                }
            });
            let want: Vec<usize> = (1..=n).collect();
            assert_eq!(items, want, "n {n} min {min}");
        }
    }

    #[test]
    fn each_item_mapped_once_in_order() {
        let items: Vec<u64> = (0..1000).collect();
        // Uneven costs, as the heaviest graphs come first.
        let out = map_each(&items, |&x| (0..(1000 - x) * 50).fold(x, |a, b| a ^ b) ^ x);
        let want: Vec<u64> = items
            .iter()
            .map(|&x| (0..(1000 - x) * 50).fold(x, |a, b| a ^ b) ^ x)
            .collect();
        assert_eq!(out, want);
        assert!(map_each(&[] as &[u32], |&x| x).is_empty());
    }
}
