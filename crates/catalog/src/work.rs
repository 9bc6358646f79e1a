//! Sharing a list of independent jobs between threads.

use std::sync::Mutex;

/// `work` applied to every item (with its position), by this thread and `helpers` more, each
/// taking the next item until none is left; this thread runs `first` before it starts taking.
/// Results come back in the items' order. Taking in turns rather than splitting the list up
/// front matters: a thread whose memory is fresh runs slower than one that has been working,
/// and a fixed share would leave the other waiting. A panic in any thread is raised here.
pub fn in_turns<T, R>(
    items: Vec<T>,
    helpers: usize,
    first: impl FnOnce(),
    work: impl Fn(usize, T) -> R + Sync,
) -> Vec<R>
where
    T: Send,
    R: Send,
{
    let count = items.len();
    let queue = Mutex::new(items.into_iter().enumerate());
    let take = || {
        let mut done = Vec::new();
        loop {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, item)) = next else { break done };
            done.push((i, work(i, item)));
        }
    };
    let batches = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..helpers).map(|_| scope.spawn(take)).collect();
        first();
        let mut batches = vec![take()];
        for handle in handles {
            batches.push(
                handle
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            );
        }
        batches
    });
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(count).collect();
    for (i, result) in batches.into_iter().flatten() {
        slots[i] = Some(result);
    }
    slots
        .into_iter()
        .map(|r| r.expect("every item is taken by some thread"))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn every_item_is_worked_once_and_results_keep_the_items_order() {
        let calls = AtomicUsize::new(0);
        let mut ran_first = false;
        let items: Vec<u64> = (0..1000).collect();
        let results = in_turns(
            items,
            1,
            || ran_first = true,
            |i, item| {
                calls.fetch_add(1, Ordering::Relaxed);
                assert_eq!(i as u64, item);
                item * 2
            },
        );
        assert!(ran_first);
        assert_eq!(calls.load(Ordering::Relaxed), 1000);
        assert_eq!(results, (0..1000).map(|n| n * 2).collect::<Vec<u64>>());
    }

    #[test]
    fn no_helpers_and_no_items_are_fine() {
        let results = in_turns(vec!["a", "b"], 0, || {}, |_, s| s.to_uppercase());
        assert_eq!(results, ["A", "B"]);
        let none: Vec<u8> = in_turns(Vec::<u8>::new(), 2, || {}, |_, n| n);
        assert!(none.is_empty());
    }

    #[test]
    #[should_panic(expected = "item 7")]
    fn a_panic_in_any_thread_reaches_the_caller() {
        in_turns(
            (0..50).collect(),
            1,
            || {},
            |_, n: u32| {
                if n == 7 {
                    panic!("item 7");
                }
                n
            },
        );
    }
}
