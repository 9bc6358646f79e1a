//! Reading many catalog files with two threads: a catalog image holds one
//! `configs/<package>/catalog.json` per package, each too small to be worth splitting, so the
//! second thread decodes whole JSON files while this one decodes others and assembles every
//! file in order (the order decides which of two duplicates wins and how problems read).
//!
//! Files are shared by bytes: this thread takes [`FIRST_SHARE`] of them (it assembles too) and
//! the other the rest. A file too large for one thread goes through the buffer split of
//! [`super::stream`] on its own, after what came before it.

use std::sync::mpsc::channel;

use super::assemble::Assembler;
use super::stream::{
    Decoded, PARALLEL_FROM, Position, Stop, add_decoded, decode_run, read_json_bytes,
    report_unended, valid_text,
};
use crate::name::Interner;

/// The share of the JSON bytes this thread decodes: it also assembles all of them.
const FIRST_SHARE: f64 = 0.4;

/// One catalog file, in the order the catalog is read.
pub(super) enum Item<'a> {
    /// A JSON stream and the index the assembler gave its file.
    Json { file: u32, bytes: &'a [u8] },
    /// Anything read on this thread in its place (a YAML file, a file that could not be read).
    Other(Box<dyn FnOnce(&mut Assembler) + 'a>),
}

/// Which thread decodes an item.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    This,
    Other,
    /// Large enough to be split by itself.
    Split,
}

/// Reads `items` into `assembler`, in their order.
pub(super) fn read_in_order(items: Vec<Item<'_>>, assembler: &mut Assembler) {
    let json: usize = items
        .iter()
        .map(|item| match item {
            Item::Json { bytes, .. } => bytes.len(),
            Item::Other(_) => 0,
        })
        .sum();
    let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let sides = if two_cores && json >= PARALLEL_FROM {
        share(&items)
    } else {
        vec![Side::This; items.len()]
    };
    if !sides.contains(&Side::Other) {
        let mut interner = Interner::default();
        for item in items {
            read_here(item, Side::This, &mut interner, assembler);
        }
        return;
    }
    std::thread::scope(|scope| {
        let (jobs, job_queue) = channel::<&[u8]>();
        let (done, answers) = channel::<(Vec<Decoded>, Stop)>();
        scope.spawn(move || {
            let mut interner = Interner::default();
            for bytes in job_queue {
                let mut decoded = Vec::new();
                let text = valid_text(bytes);
                let stop = decode_run(bytes, text, 0, bytes.len(), true, &mut interner, &mut |d| {
                    decoded.push(d)
                });
                if done.send((decoded, stop)).is_err() {
                    return;
                }
            }
        });
        for (item, side) in items.iter().zip(&sides) {
            if let (Item::Json { bytes, .. }, Side::Other) = (item, side) {
                // The receiver lives until every answer is taken below.
                let _ = jobs.send(bytes);
            }
        }
        drop(jobs);
        let mut interner = Interner::default();
        for (item, side) in items.into_iter().zip(sides) {
            match (item, side) {
                (Item::Json { file, bytes }, Side::Other) => {
                    let (decoded, stop) = answers
                        .recv()
                        .expect("the catalog decoding thread answers every file");
                    let mut position = Position::new(file);
                    for item in decoded {
                        add_decoded(item, bytes, &mut position, assembler);
                    }
                    if let Stop::Incomplete(begin) = stop {
                        report_unended(bytes, begin, &mut position, assembler);
                    }
                }
                (item, side) => read_here(item, side, &mut interner, assembler),
            }
        }
    });
}

fn read_here(item: Item<'_>, side: Side, interner: &mut Interner, assembler: &mut Assembler) {
    match item {
        Item::Json { file, bytes } if side == Side::Split => {
            read_json_bytes(bytes, file, assembler)
        }
        Item::Json { file, bytes } => {
            let mut position = Position::new(file);
            let text = valid_text(bytes);
            let stop = decode_run(bytes, text, 0, bytes.len(), true, interner, &mut |item| {
                add_decoded(item, bytes, &mut position, assembler)
            });
            if let Stop::Incomplete(begin) = stop {
                report_unended(bytes, begin, &mut position, assembler);
            }
        }
        Item::Other(read) => read(assembler),
    }
}

/// Gives each JSON file to the thread that has so far been given less than its share.
fn share(items: &[Item<'_>]) -> Vec<Side> {
    let (mut this, mut other) = (0.0_f64, 0.0_f64);
    items
        .iter()
        .map(|item| match item {
            Item::Json { bytes, .. } if bytes.len() >= PARALLEL_FROM * 4 => Side::Split,
            Item::Json { bytes, .. } => {
                let size = bytes.len() as f64;
                if this / FIRST_SHARE <= other / (1.0 - FIRST_SHARE) {
                    this += size;
                    Side::This
                } else {
                    other += size;
                    Side::Other
                }
            }
            Item::Other(_) => Side::This,
        })
        .collect()
}
