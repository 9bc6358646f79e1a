//! Splitting a catalog file into blobs and decoding each on its own, so one malformed blob
//! costs only itself: JSON files are concatenated values, read in chunks (memory stays near the
//! catalog's own size, not the file's), YAML files are `---`-separated documents.
//!
//! JSON blobs are parsed where they lie, without a pass to find where each ends first: `opm`
//! and windlass write every top-level value starting at the beginning of a line, and a newline
//! cannot occur inside a JSON string, so the next `\n{` is where a blob most likely ends. The
//! parser confirms it (the value must end there); when it does not (values on one line, a
//! nested `{` at the start of a line, a malformed blob), the exact end is found by brackets and
//! the blob decoded or reported on its own. A large buffer held in memory is decoded by two
//! threads, split at such a line start; the split is used only when the first part's blobs end
//! exactly there. A stream read from a file goes through the two-thread pipeline of
//! [`super::pipeline`] when the machine has two cores, and is read here one buffer after the
//! other otherwise (or once a guess of the pipeline fails).

use std::io::Read;

use serde::de::DeserializeSeed;

use super::assemble::{Assembler, Place};
use super::decode::{BlobSeed, Context, Fields};
use crate::load::IssueKind;
use crate::name::Interner;

/// Bytes read at a time; a blob larger than this grows the buffer.
const CHUNK: usize = 1 << 20;

/// Below this many bytes a buffer is decoded on one thread: a second one would not pay for
/// itself.
pub(super) const PARALLEL_FROM: usize = 256 << 10;

/// Reads a JSON stream of blobs from `reader`. Only I/O errors stop it; everything else is a
/// problem with one blob.
pub(crate) fn read_json(
    reader: impl Read,
    file: u32,
    assembler: &mut Assembler,
) -> std::io::Result<()> {
    if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        super::pipeline::read_json(reader, CHUNK, PARALLEL_FROM, file, assembler)
    } else {
        read_json_chunked(reader, CHUNK, file, assembler)
    }
}

/// [`read_json`] reading `chunk` bytes at a time, one buffer after the other.
pub(crate) fn read_json_chunked(
    reader: impl Read,
    chunk: usize,
    file: u32,
    assembler: &mut Assembler,
) -> std::io::Result<()> {
    let mut position = Position::new(file);
    let buf = Vec::with_capacity(chunk);
    read_on(reader, chunk, buf, &mut position, assembler)
}

/// Reads the rest of a stream whose next bytes are `buf`, one buffer after the other.
pub(super) fn read_on(
    mut reader: impl Read,
    chunk: usize,
    mut buf: Vec<u8>,
    position: &mut Position,
    assembler: &mut Assembler,
) -> std::io::Result<()> {
    let mut interners = Interners::default();
    let mut end_of_input = false;
    loop {
        if !end_of_input {
            let want = if buf.len() >= chunk / 2 {
                buf.len() * 2
            } else {
                chunk
            };
            end_of_input = fill(&mut reader, &mut buf, want)?;
        }
        let consumed = decode_available(&buf, end_of_input, position, assembler, &mut interners);
        position.forget(&buf[..consumed]);
        buf.drain(..consumed);
        if end_of_input {
            return Ok(());
        }
    }
}

/// Reads until `buf` holds `want` bytes or the input ends; true at the end.
pub(super) fn fill(
    reader: &mut impl Read,
    buf: &mut Vec<u8>,
    want: usize,
) -> std::io::Result<bool> {
    let target = want.max(buf.len() + 1);
    buf.reserve(target - buf.len());
    while buf.len() < target {
        let start = buf.len();
        buf.resize(target, 0);
        match reader.read(&mut buf[start..]) {
            Ok(0) => {
                buf.truncate(start);
                return Ok(true);
            }
            Ok(n) => buf.truncate(start + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(start),
            Err(e) => {
                buf.truncate(start);
                return Err(e);
            }
        }
    }
    Ok(false)
}

/// Reads a JSON stream held in memory.
pub(crate) fn read_json_bytes(bytes: &[u8], file: u32, assembler: &mut Assembler) {
    let mut position = Position::new(file);
    decode_available(
        bytes,
        true,
        &mut position,
        assembler,
        &mut Interners::default(),
    );
}

/// Line and document bookkeeping across chunks; lines are counted only when a message needs
/// one, from the last point counted.
pub(super) struct Position {
    file: u32,
    /// Blobs seen so far in the file.
    documents: u32,
    /// Lines before the start of the current buffer.
    lines_before: u32,
    /// A point in the current buffer whose line is known: (offset, line).
    known: (usize, u32),
}

impl Position {
    pub(super) fn new(file: u32) -> Position {
        Position {
            file,
            documents: 0,
            lines_before: 1,
            known: (0, 1),
        }
    }

    /// The place of a blob starting at `offset` of `data`.
    fn place(&mut self, data: &[u8], offset: usize) -> Place {
        let (from, line) = if offset >= self.known.0 {
            self.known
        } else {
            (0, self.lines_before)
        };
        let line = line + newlines(&data[from..offset]);
        self.known = (offset, line);
        Place {
            file: self.file,
            document: self.documents,
            line,
        }
    }

    /// `consumed` leaves the buffer.
    pub(super) fn forget(&mut self, consumed: &[u8]) {
        let (from, line) = if consumed.len() >= self.known.0 {
            self.known
        } else {
            (0, self.lines_before)
        };
        self.lines_before = line + newlines(&consumed[from..]);
        self.known = (0, self.lines_before);
    }
}

fn newlines(bytes: &[u8]) -> u32 {
    memchr::memchr_iter(b'\n', bytes).count() as u32
}

/// What decoding a run of blobs found, in order.
// Nearly every item is a `Blob`: boxing its fields would cost one allocation per bundle.
#[allow(clippy::large_enum_variant)]
pub(super) enum Decoded {
    /// A blob that decoded, starting at this offset.
    Blob(usize, Fields),
    /// A blob at `begin..end` that did not, and why.
    Bad(usize, usize, serde_json::Error),
}

/// How a run of blobs ended.
#[derive(Debug, PartialEq)]
pub(super) enum Stop {
    /// At `until` or the end of the data: the next blob starts at this offset.
    Reached(usize),
    /// A blob starts at this offset and does not end within the data.
    Incomplete(usize),
}

/// Decodes the blobs starting in `data[from..until]` with `interner`, handing each to `out` in
/// order. `text` is the longest valid UTF-8 prefix of `data`. Unless `last`, a blob that may
/// continue past the data is left for later.
pub(super) fn decode_run(
    data: &[u8],
    text: &str,
    from: usize,
    until: usize,
    last: bool,
    interner: &mut Interner,
    out: &mut impl FnMut(Decoded),
) -> Stop {
    let mut offset = from;
    let finder = memchr::memmem::Finder::new(b"\n{");
    // The next line that starts a value, searched for again only once passed (`None`: none
    // up to the end), so a stream written on one line is still scanned once.
    let mut next_line: Option<Option<usize>> = None;
    loop {
        let begin = offset + leading_whitespace(&data[offset..]);
        if begin >= until || begin == data.len() {
            return Stop::Reached(begin);
        }
        let line = match next_line {
            Some(Some(at)) if at > begin => Some(at),
            Some(None) => None,
            _ => {
                let found = finder.find(&data[begin + 1..]).map(|at| begin + 1 + at);
                next_line = Some(found);
                found
            }
        };
        // Where the blob ends if the next one starts a line.
        let likely = line.or(last.then_some(data.len()));
        if let Some(end) = likely
            && let Some(candidate) = text.get(begin..end)
            && let Ok(fields) = decode_str(candidate, interner)
        {
            out(Decoded::Blob(begin, fields));
            offset = end;
            continue;
        }
        // Not where a line start said: find the end by brackets.
        let Some(length) = value_end(&data[begin..]) else {
            return Stop::Incomplete(begin);
        };
        let end = begin + length;
        let exact = match text.get(begin..end) {
            Some(blob) => decode_str(blob, interner),
            None => decode_slice(&data[begin..end], interner),
        };
        out(match exact {
            Ok(fields) => Decoded::Blob(begin, fields),
            Err(error) => Decoded::Bad(begin, end, error),
        });
        offset = end;
    }
}

fn decode_str(text: &str, interner: &mut Interner) -> Result<Fields, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let fields = BlobSeed(Context {
        interner,
        json: true,
    })
    .deserialize(&mut de)?;
    de.end()?;
    Ok(fields)
}

fn decode_slice(bytes: &[u8], interner: &mut Interner) -> Result<Fields, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let fields = BlobSeed(Context {
        interner,
        json: true,
    })
    .deserialize(&mut de)?;
    de.end()?;
    Ok(fields)
}

/// Where a second thread may start: the first line that begins a value after `share` of
/// `data`.
pub(super) fn split_point(data: &[u8], share: f64) -> Option<usize> {
    let at = (data.len() as f64 * share) as usize;
    memchr::memmem::find(&data[at..], b"\n{").map(|found| at + found + 1)
}

/// The share of a buffer the calling thread decodes when two do: it also assembles what it
/// decodes as it goes, so the other thread takes a little more.
const FIRST_SHARE: f64 = 0.5;

/// One thread's interner for each of the two decoding threads, kept across buffers.
#[derive(Default)]
struct Interners {
    first: Interner,
    second: Interner,
}

/// Decodes every complete value in `data` and adds it to `assembler`; returns how many bytes
/// were used. Unless `last`, an incomplete value at the end is left for the next call.
fn decode_available(
    data: &[u8],
    last: bool,
    position: &mut Position,
    assembler: &mut Assembler,
    interners: &mut Interners,
) -> usize {
    let text = valid_text(data);
    let mut add = |item: Decoded| add_decoded(item, data, position, assembler);
    let split = (data.len() >= PARALLEL_FROM
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
    .then(|| split_point(data, FIRST_SHARE))
    .flatten();
    let Interners { first, second } = interners;
    let stop = match split {
        Some(split) => {
            // This thread assembles its part while the other decodes the rest.
            let (first_stop, (rest, rest_stop)) = std::thread::scope(|scope| {
                let rest = scope.spawn(|| {
                    // Blobs run a few hundred bytes: room for all without growing.
                    let mut rest = Vec::new();
                    let stop = decode_run(data, text, split, data.len(), last, second, &mut |d| {
                        rest.push(d)
                    });
                    (rest, stop)
                });
                let first_stop = decode_run(data, text, 0, split, last, first, &mut add);
                let rest = rest.join().expect("a catalog decoding thread panicked");
                (first_stop, rest)
            });
            if first_stop == Stop::Reached(split) {
                rest.into_iter().for_each(&mut add);
                rest_stop
            } else {
                // The parts do not meet (a blob spans the split): decode on from where the
                // first stopped, and throw the other thread's work away.
                let from = match first_stop {
                    Stop::Reached(at) | Stop::Incomplete(at) => at,
                };
                decode_run(data, text, from, data.len(), last, first, &mut add)
            }
        }
        None => decode_run(data, text, 0, data.len(), last, first, &mut add),
    };
    match stop {
        Stop::Reached(_) => data.len(),
        Stop::Incomplete(begin) if !last => begin,
        Stop::Incomplete(begin) => {
            report_unended(data, begin, position, assembler);
            data.len()
        }
    }
}

/// The longest prefix of `data` that is UTF-8 text.
pub(super) fn valid_text(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// A value that starts at `begin` of the stream's last buffer and never ends.
pub(super) fn report_unended(
    data: &[u8],
    begin: usize,
    position: &mut Position,
    assembler: &mut Assembler,
) {
    position.documents += 1;
    let place = position.place(data, begin);
    assembler.problem(
        place,
        IssueKind::UnreadableFile,
        None,
        None,
        "not JSON: a value starts here and never ends; the rest of the file is left out",
    );
}

/// One decoded blob into the catalog, or its problem into the report.
pub(super) fn add_decoded(
    item: Decoded,
    data: &[u8],
    position: &mut Position,
    assembler: &mut Assembler,
) {
    position.documents += 1;
    match item {
        Decoded::Blob(begin, fields) => {
            let place = Place {
                file: position.file,
                document: position.documents,
                line: 0,
            };
            assembler.add(fields, place, || position.place(data, begin).line);
        }
        Decoded::Bad(begin, end, error) => {
            report_bad_blob(&data[begin..end], &error, data, begin, position, assembler)
        }
    }
}

/// The parser's message without its position, which counts from the start of the blob.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

fn leading_whitespace(data: &[u8]) -> usize {
    data.iter()
        .take_while(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        .count()
}

/// The length of the value at the start of `data`: for an object or array, up to its closing
/// bracket by depth outside strings (it may be malformed inside; the parser says how); `None`
/// when it does not end in `data`. Any other value runs to the next whitespace or bracket.
fn value_end(data: &[u8]) -> Option<usize> {
    let (open, close) = match data.first()? {
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        _ => {
            return data
                .iter()
                .position(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t' | b'{' | b'['))
                .or(Some(data.len()))
                .map(|n| n.max(1));
        }
    };
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(found) = memchr::memchr3(b'"', open, close, &data[i..]) {
        i += found;
        match data[i] {
            b'"' => {
                // To the closing quote, past escaped characters.
                i += 1;
                loop {
                    let next = i + memchr::memchr2(b'"', b'\\', data.get(i..)?)?;
                    if data[next] == b'\\' {
                        i = next + 2;
                    } else {
                        i = next;
                        break;
                    }
                }
            }
            b if b == open => depth += 1,
            _ => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
        }
        i += 1;
    }
    None
}

fn identity_of(value: &serde_json::Value) -> (Option<String>, Option<String>) {
    let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(String::from);
    let package = text("package").or_else(|| {
        (value.get("schema").and_then(|s| s.as_str()) == Some("olm.package"))
            .then(|| text("name"))
            .flatten()
    });
    let name = match value.get("schema").and_then(|s| s.as_str()) {
        Some("olm.bundle") => text("name"),
        _ => None,
    };
    (package, name)
}

/// Reports a blob that did not decode: why, naming the field or the line.
fn report_bad_blob(
    blob: &[u8],
    error: &serde_json::Error,
    data: &[u8],
    begin: usize,
    position: &mut Position,
    assembler: &mut Assembler,
) {
    let place = position.place(data, begin);
    match serde_json::from_slice::<serde_json::Value>(blob) {
        Ok(value) => blob_problem(assembler, place, Some(&value), &error.to_string()),
        Err(syntax) => {
            let line = place.line + syntax.line().saturating_sub(1) as u32;
            let message = format!("not JSON at line {line}: {}", without_position(&syntax));
            let (package, name) = sniff_identity(blob);
            blob_problem_message(assembler, place, package, name, message);
        }
    }
}

/// The package and bundle name of a blob that is not JSON, where its text shows them plainly.
fn sniff_identity(blob: &[u8]) -> (Option<String>, Option<String>) {
    let text = String::from_utf8_lossy(blob);
    let field = |key: &str| {
        let at = text.find(&format!("\"{key}\""))?;
        let rest = text[at + key.len() + 2..].trim_start().strip_prefix(':')?;
        let rest = rest.trim_start().strip_prefix('"')?;
        let end = rest.find('"')?;
        Some(rest[..end].to_string())
    };
    let bundle = (field("schema").as_deref() == Some("olm.bundle"))
        .then(|| field("name"))
        .flatten();
    (field("package"), bundle)
}

fn blob_problem_message(
    assembler: &mut Assembler,
    place: Place,
    package: Option<String>,
    bundle: Option<String>,
    message: String,
) {
    assembler.problem(
        place,
        IssueKind::BadBlob,
        package.as_deref(),
        bundle.as_deref(),
        format!("{message}; left out"),
    );
}

/// Reports a blob that did not decode, naming the field when the blob is at least a value.
fn blob_problem(
    assembler: &mut Assembler,
    place: Place,
    value: Option<&serde_json::Value>,
    error: &str,
) {
    let (package, name) = value.map(identity_of).unwrap_or_default();
    let detail = match value {
        Some(value) => {
            let mut track = serde_path_to_error::Track::new();
            let seed = BlobSeed(Context {
                interner: &mut assembler.interner,
                json: false,
            });
            match seed.deserialize(serde_path_to_error::Deserializer::new(value, &mut track)) {
                Err(e) => format!("{}: {e}", track.path()),
                Ok(_) => error.to_string(),
            }
        }
        None => error.to_string(),
    };
    assembler.problem(
        place,
        IssueKind::BadBlob,
        package.as_deref(),
        name.as_deref(),
        format!("{detail}; left out"),
    );
}

/// Options for catalog YAML: the last of repeated keys wins, YAML 1.2 booleans only.
fn yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::LastWins;
    options.with_snippet = false;
    options.strict_booleans = true;
    options
}

/// Reads a `---`-separated YAML stream; each document is decoded on its own, so a syntax
/// error costs one document.
pub(crate) fn read_yaml(text: &str, file: u32, assembler: &mut Assembler) {
    let mut document = 0u32;
    for (line, doc) in documents(text) {
        if doc
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#') || is_marker(l))
        {
            continue;
        }
        document += 1;
        let place = Place {
            file,
            document,
            line,
        };
        let decoded =
            serde_saphyr::with_deserializer_from_str_with_options(doc, yaml_options(), |de| {
                BlobSeed(Context {
                    interner: &mut assembler.interner,
                    json: false,
                })
                .deserialize(de)
            });
        match decoded {
            Ok(fields) => assembler.add(fields, place, || line),
            Err(e) => {
                let value: Option<serde_json::Value> =
                    serde_saphyr::from_str_with_options(doc, yaml_options()).ok();
                let at = e
                    .location()
                    .map(|l| format!("line {}: ", line as u64 + l.line().saturating_sub(1)))
                    .unwrap_or_default();
                let message = e.to_string();
                let first = message.lines().next().unwrap_or_default();
                blob_problem(assembler, place, value.as_ref(), &format!("{at}{first}"));
            }
        }
    }
}

fn is_marker(line: &str) -> bool {
    let rest = line
        .strip_prefix("---")
        .or_else(|| line.strip_prefix("..."));
    rest.is_some_and(|r| r.trim().is_empty())
}

/// The documents of a YAML stream with the line each starts on. A document starts at a
/// `---` line (which may carry content); markers cannot occur inside a document's content
/// at column 0, so splitting on them is exact.
fn documents(text: &str) -> Vec<(u32, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut start_line = 1u32;
    let mut offset = 0;
    for (line, piece) in (1u32..).zip(text.split_inclusive('\n')) {
        let starts_document =
            piece.starts_with("---") && piece[3..].chars().next().is_none_or(|c| c.is_whitespace());
        if starts_document && offset > start {
            out.push((start_line, &text[start..offset]));
            start = offset;
            start_line = line;
        } else if starts_document {
            start_line = line;
        }
        offset += piece.len();
    }
    if offset > start {
        out.push((start_line, &text[start..]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_end_at_their_closing_bracket_whatever_strings_hold() {
        assert_eq!(value_end(br#"{"a": "}{\"", "b": [1]} {"#), Some(23));
        assert_eq!(value_end(br#"{"a": "#), None);
        assert_eq!(value_end(b"12 {"), Some(2));
        assert_eq!(value_end(br#"[{"a": "]"}, [2]] {"#), Some(17));
        assert_eq!(value_end(br#"{"a": "\\"#), None);
    }

    #[test]
    fn yaml_documents_split_on_markers_only() {
        let text = "a: 1\n---\nb: |\n  --- not a marker\n--- {c: 3}\n---\n";
        let docs = documents(text);
        assert_eq!(
            docs,
            vec![
                (1, "a: 1\n"),
                (2, "---\nb: |\n  --- not a marker\n"),
                (5, "--- {c: 3}\n"),
                (6, "---\n")
            ]
        );
    }
}
