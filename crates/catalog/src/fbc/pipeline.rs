//! Reading a large JSON stream with two threads that never wait on each other for long.
//!
//! The stream is cut into buffers at line starts that begin a value (see [`super::stream`]).
//! A second thread decodes the later part of each buffer while this thread reads the next
//! buffer, assembles what the second thread decoded of the previous one, then decodes and
//! assembles the earlier part of this one: both stay busy, and blobs are still assembled in
//! the order they were written.
//!
//! Every guess is checked: a buffer's earlier part must end exactly where the later part
//! starts, and its last blob must end at the cut. When one does not (a nested value written at
//! the start of a line), the rest of the stream is read one buffer after the other, from the
//! first blob not yet assembled.

// Buffers are shared as `Arc<Vec<u8>>`: an `Arc<[u8]>` would copy each buffer just read.
#![allow(clippy::rc_buffer)]

use std::io::Read;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::assemble::Assembler;
use super::stream::{
    Decoded, Position, Stop, add_decoded, decode_run, fill, read_on, report_unended, split_point,
    valid_text,
};
use crate::name::Interner;

/// The share of a buffer this thread decodes: it also reads and assembles everything.
const FIRST_SHARE: f64 = 0.4;

/// A buffer whose part from `split` on is decoded by the second thread.
struct Job {
    data: Arc<Vec<u8>>,
    split: usize,
}

/// What the second thread decoded of a job, and how its run ended.
type Done = (Vec<Decoded>, Stop);

/// Reads `reader` in buffers of about `chunk` bytes; a buffer of `parallel_from` bytes or more
/// is shared with a second thread.
pub(super) fn read_json(
    reader: impl Read,
    chunk: usize,
    parallel_from: usize,
    file: u32,
    assembler: &mut Assembler,
) -> std::io::Result<()> {
    std::thread::scope(|scope| {
        let (jobs, job_rx) = sync_channel::<Job>(1);
        let (done_tx, done) = sync_channel::<Done>(1);
        scope.spawn(move || decode_jobs(job_rx, done_tx));
        let mut reading = Reading {
            reader,
            chunk,
            parallel_from,
            position: Position::new(file),
            interner: Interner::default(),
            jobs,
            done,
            spare: Vec::new(),
        };
        reading.run(assembler)
        // Dropping `reading` closes the job queue; the second thread ends with it.
    })
}

/// The second thread: decodes each job's later part, in order.
fn decode_jobs(jobs: Receiver<Job>, done: SyncSender<Done>) {
    let mut interner = Interner::default();
    for Job { data, split } in jobs {
        let bytes = data.as_slice();
        let text = valid_text(bytes);
        let mut items = Vec::new();
        let stop = decode_run(
            bytes,
            text,
            split,
            bytes.len(),
            true,
            &mut interner,
            &mut |d| items.push(d),
        );
        // Let go of the buffer before answering, so the reader can use it again.
        drop(data);
        if done.send((items, stop)).is_err() {
            return;
        }
    }
}

/// A buffer whose earlier part is assembled and whose later part the second thread holds.
struct InFlight {
    data: Arc<Vec<u8>>,
}

struct Reading<R> {
    reader: R,
    chunk: usize,
    parallel_from: usize,
    position: Position,
    interner: Interner,
    jobs: SyncSender<Job>,
    done: Receiver<Done>,
    /// Buffers done with, to read into again: a fresh one costs a page fault per page.
    spare: Vec<Vec<u8>>,
}

/// Where the pipeline left off when a guess failed: the bytes not yet assembled.
struct Rest(Vec<u8>);

impl<R: Read> Reading<R> {
    fn run(&mut self, assembler: &mut Assembler) -> std::io::Result<()> {
        let mut carry: Vec<u8> = Vec::new();
        let mut in_flight: Option<InFlight> = None;
        let mut end_of_input = false;
        loop {
            // The next buffer: what the last one left, and more.
            let mut buf = if carry.len() >= self.chunk / 2 {
                // A value larger than a buffer grows on in place.
                std::mem::take(&mut carry)
            } else {
                let mut buf = self.spare.pop().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(&carry);
                carry.clear();
                buf
            };
            if !end_of_input {
                let want = buf.len() + self.chunk;
                end_of_input = fill(&mut self.reader, &mut buf, want)?;
            }
            let cut = if end_of_input {
                buf.len()
            } else {
                match memchr::memmem::rfind(&buf, b"\n{") {
                    Some(at) => at + 1,
                    // One value larger than the buffer: read more before cutting.
                    None => {
                        carry = buf;
                        continue;
                    }
                }
            };
            carry.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
            let data = Arc::new(buf);
            let split = (data.len() >= self.parallel_from)
                .then(|| split_point(&data, FIRST_SHARE))
                .flatten();
            if let Some(split) = split {
                self.send(Job {
                    data: Arc::clone(&data),
                    split,
                })?;
            }
            if let Some(previous) = in_flight.take()
                && let Err(Rest(mut rest)) = self.land(previous, assembler)?
            {
                // The previous buffer's last blob runs on into this one.
                if split.is_some() {
                    self.receive()?;
                }
                rest.extend_from_slice(&data);
                rest.extend_from_slice(&carry);
                return self.read_on_alone(rest, assembler);
            }
            let last = end_of_input && carry.is_empty();
            match self.first_part(&data, split, last, assembler)? {
                Ok(Some(flight)) => in_flight = Some(flight),
                Ok(None) => self.recycle(data),
                Err(Rest(mut rest)) => {
                    rest.extend_from_slice(&carry);
                    return self.read_on_alone(rest, assembler);
                }
            }
            if last {
                return match in_flight.take() {
                    Some(flight) => match self.land(flight, assembler)? {
                        Ok(()) => Ok(()),
                        Err(Rest(rest)) => self.read_on_alone(rest, assembler),
                    },
                    None => Ok(()),
                };
            }
        }
    }

    /// Decodes and assembles `data` up to `split` (all of it without one). `Some` when the
    /// rest is with the second thread; `Err` with the bytes not assembled when a guess failed.
    fn first_part(
        &mut self,
        data: &Arc<Vec<u8>>,
        split: Option<usize>,
        last: bool,
        assembler: &mut Assembler,
    ) -> std::io::Result<Result<Option<InFlight>, Rest>> {
        let bytes = data.as_slice();
        let text = valid_text(bytes);
        let until = split.unwrap_or(bytes.len());
        let mut decode = |from: usize, until: usize, reading: &mut Self| {
            let position = &mut reading.position;
            decode_run(
                bytes,
                text,
                from,
                until,
                true,
                &mut reading.interner,
                &mut |item| add_decoded(item, bytes, position, assembler),
            )
        };
        let mut stop = decode(0, until, self);
        if let Some(split) = split {
            if stop == Stop::Reached(split) {
                return Ok(Ok(Some(InFlight {
                    data: Arc::clone(data),
                })));
            }
            // A blob spans the split: the second thread's work is thrown away, and this
            // thread decodes on from where it stopped.
            self.receive()?;
            if let Stop::Reached(from) = stop {
                stop = decode(from, bytes.len(), self);
            }
        }
        Ok(self.ended(bytes, stop, last, assembler))
    }

    /// Assembles the second thread's part of `flight`.
    fn land(
        &mut self,
        flight: InFlight,
        assembler: &mut Assembler,
    ) -> std::io::Result<Result<(), Rest>> {
        let (items, stop) = self.receive()?;
        let bytes = flight.data.as_slice();
        for item in items {
            add_decoded(item, bytes, &mut self.position, assembler);
        }
        let ended = self.ended(bytes, stop, false, assembler).map(|_| ());
        self.recycle(flight.data);
        Ok(ended)
    }

    /// Keeps a buffer no thread uses any more for the next read.
    fn recycle(&mut self, data: Arc<Vec<u8>>) {
        if self.spare.len() < 2
            && let Ok(buf) = Arc::try_unwrap(data)
        {
            self.spare.push(buf);
        }
    }

    /// A buffer decoded up to `stop`: done (and forgotten) when its last blob ended; at the
    /// end of the stream an unended value is a problem; otherwise its bytes from that value
    /// on are returned to read on from.
    fn ended(
        &mut self,
        bytes: &[u8],
        stop: Stop,
        last: bool,
        assembler: &mut Assembler,
    ) -> Result<Option<InFlight>, Rest> {
        match stop {
            Stop::Reached(_) => {}
            Stop::Incomplete(begin) if last => {
                report_unended(bytes, begin, &mut self.position, assembler)
            }
            Stop::Incomplete(begin) => {
                self.position.forget(&bytes[..begin]);
                return Err(Rest(bytes[begin..].to_vec()));
            }
        }
        self.position.forget(bytes);
        Ok(None)
    }

    /// The rest of the stream, one buffer after the other.
    fn read_on_alone(&mut self, rest: Vec<u8>, assembler: &mut Assembler) -> std::io::Result<()> {
        read_on(
            &mut self.reader,
            self.chunk,
            rest,
            &mut self.position,
            assembler,
        )
    }

    fn send(&self, job: Job) -> std::io::Result<()> {
        self.jobs.send(job).map_err(|_| gone())
    }

    fn receive(&self) -> std::io::Result<Done> {
        self.done.recv().map_err(|_| gone())
    }
}

/// The second thread stopped without an answer: it panicked.
fn gone() -> std::io::Error {
    std::io::Error::other("the catalog decoding thread stopped")
}
