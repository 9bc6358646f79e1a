use std::collections::BTreeMap;
use std::io::{Read, Write};

use super::*;
use crate::layout::tests::fixtures;
use crate::manifest::{API_VERSION, KIND};

const ICON: &[u8] = b"<svg xmlns='http://www.w3.org/2000/svg'/>";

fn manifest_yaml(set: &crate::layout::ImageSet, icon: bool) -> Vec<u8> {
    let mut text = format!(
        "apiVersion: {API_VERSION}\nkind: {KIND}\nmetadata: {{name: acme-db}}\nspec:\n  version: 1.0.0\n  bundle: '{}'\n  architectures: [amd64, arm64]\n",
        set.images[0].reference
    );
    if icon {
        text.push_str("  icon: icon.svg\n");
    }
    text.push_str("  relatedImages:\n");
    for image in &set.images[1..] {
        text.push_str(&format!("  - image: '{}'\n", image.reference));
    }
    text.into_bytes()
}

fn contents() -> (Contents, BTreeMap<String, Vec<u8>>) {
    let (images, blobs) = fixtures::set();
    let contents = Contents {
        manifest_yaml: manifest_yaml(&images, true),
        icon: Some(("icon.svg".into(), ICON.to_vec())),
        images,
    };
    (contents, blobs)
}

/// Writes the archive, streaming each blob in chunks of `chunk` bytes.
fn write(contents: &Contents, blobs: &BTreeMap<String, Vec<u8>>, chunk: usize) -> Vec<u8> {
    let mut writer = ArchiveWriter::start(Vec::new(), contents).unwrap();
    while let Some((digest, _)) = writer.next_blob().cloned() {
        let mut blob = writer.blob(&digest).unwrap();
        for piece in blobs[&digest].chunks(chunk.max(1)) {
            blob.write(piece).unwrap();
        }
        blob.finish().unwrap();
    }
    writer.finish().unwrap()
}

/// Keeps what the reader hands over.
#[derive(Default)]
struct Collect(BTreeMap<String, Vec<u8>>);

impl BlobSink for Collect {
    fn blob(
        &mut self,
        _: &crate::layout::ImageSet,
        blob: &BlobInfo,
        content: &mut dyn Read,
    ) -> Result<(), String> {
        let mut bytes = Vec::new();
        content.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        self.0.insert(blob.digest.clone(), bytes);
        Ok(())
    }
}

fn read(archive: &[u8]) -> Result<ReadPackage, ArchiveError> {
    read_archive(archive, ReadLimits::default(), &mut Discard)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// `(path, kind, bytes)` of every entry of an archive.
fn entries(archive: &[u8]) -> Vec<(String, tar::EntryType, Vec<u8>)> {
    let tar = gunzip(archive);
    let mut reader = tar::Archive::new(tar.as_slice());
    reader
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let kind = entry.header().entry_type();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            (path, kind, bytes)
        })
        .collect()
}

/// A tar of the given entries, with headers written by hand so that tests can write what the
/// `tar` builder refuses (`..`, absolute paths, links).
fn raw_tar(entries: &[(String, tar::EntryType, Vec<u8>, Option<&str>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, kind, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        let name = &mut header.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_entry_type(*kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        if let Some(link) = link {
            header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_cksum();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0; 1024]);
    out
}

fn rebuilt(
    archive: &[u8],
    edit: impl FnOnce(&mut Vec<(String, tar::EntryType, Vec<u8>, Option<&str>)>),
) -> Vec<u8> {
    let mut list: Vec<(String, tar::EntryType, Vec<u8>, Option<&str>)> = entries(archive)
        .into_iter()
        .map(|(p, k, b)| (p, k, b, None))
        .collect();
    edit(&mut list);
    gzip(&raw_tar(&list))
}

#[test]
fn an_archive_reads_back_to_what_was_written() {
    let (contents, blobs) = contents();
    let archive = write(&contents, &blobs, 7);
    let mut collected = Collect::default();
    let package = read_archive(archive.as_slice(), ReadLimits::default(), &mut collected).unwrap();
    assert_eq!(package.manifest.metadata.name, "acme-db");
    assert_eq!(package.manifest_yaml, contents.manifest_yaml);
    assert_eq!(package.icon, contents.icon);
    assert_eq!(package.images, contents.images);
    assert_eq!(collected.0, blobs);
    assert_eq!(
        package.blob_bytes,
        blobs.values().map(|b| b.len() as u64).sum::<u64>()
    );
}

#[test]
fn archives_are_byte_for_byte_reproducible_and_in_the_documented_order() {
    let (contents, blobs) = contents();
    let first = write(&contents, &blobs, 3);
    // Chunking and the order blobs were learnt in do not matter.
    let mut again = contents.clone();
    let mut reordered = crate::layout::ImageSet {
        images: again.images.images.clone(),
        ..Default::default()
    };
    for (digest, manifest) in again.images.manifests.iter().rev() {
        reordered.manifests.insert(digest.clone(), manifest.clone());
    }
    for (digest, blob) in again.images.blobs.iter().rev() {
        reordered.blobs.insert(digest.clone(), blob.clone());
    }
    again.images = reordered;
    assert_eq!(write(&again, &blobs, 1 << 20), first);
    // gzip header: no timestamp, "unknown" operating system.
    assert_eq!(&first[4..8], &[0, 0, 0, 0]);
    assert_eq!(first[9], 255);
    let listed = entries(&first);
    let paths: Vec<&str> = listed.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(
        &paths[..7],
        [
            "manifest.yaml",
            "icon.svg",
            "images/",
            "images/blobs/",
            "images/blobs/sha256/",
            "images/oci-layout",
            "images/index.json"
        ]
    );
    let manifests = contents.images.manifest_order();
    for (i, descriptor) in manifests.iter().enumerate() {
        assert_eq!(paths[7 + i], blob_path(&descriptor.digest));
    }
    let rest = &paths[7 + manifests.len()..];
    let mut sorted = rest.to_vec();
    sorted.sort_unstable();
    assert_eq!(rest, sorted, "configs and layers by digest");
    let tar = gunzip(&first);
    let mut reader = tar::Archive::new(tar.as_slice());
    for entry in reader.entries().unwrap() {
        let header = entry.unwrap().header().clone();
        assert_eq!(header.mtime().unwrap(), 0);
        assert_eq!((header.uid().unwrap(), header.gid().unwrap()), (0, 0));
        let mode = header.mode().unwrap();
        assert!(mode == 0o644 || mode == 0o755, "{mode:o}");
    }
}

#[test]
fn every_truncation_is_refused() {
    let (contents, blobs) = contents();
    let archive = write(&contents, &blobs, 64);
    for cut in (0..archive.len()).step_by(3) {
        let error = read(&archive[..cut]).expect_err(&format!("cut at {cut} read"));
        let text = error.to_string();
        assert!(
            matches!(
                error,
                ArchiveError::Truncated { .. }
                    | ArchiveError::Missing { .. }
                    | ArchiveError::Corrupt { .. }
            ),
            "cut at {cut}: {text}"
        );
    }
    let error = read(&archive[..archive.len() / 2]).unwrap_err().to_string();
    assert!(
        error.starts_with("the archive is truncated: it ends "),
        "{error}"
    );
    // A tar cut short and compressed again (no gzip error to see) is incomplete.
    let tar = gunzip(&archive);
    let error = read(&gzip(&tar[..tar.len() - 3 * 1024]))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("is missing (was it truncated?)") || error.contains("truncated"),
        "{error}"
    );
}

#[test]
fn size_and_entry_limits_stop_the_reading() {
    let (contents, blobs) = contents();
    let archive = write(&contents, &blobs, 64);
    let small = ReadLimits {
        max_total_bytes: 600,
        ..Default::default()
    };
    let error = read_archive(archive.as_slice(), small, &mut Discard).unwrap_err();
    assert!(
        matches!(error, ArchiveError::TooLarge { limit: 600, .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("larger than 600 bytes unpacked (at entry `"),
        "{error}"
    );
    let few = ReadLimits {
        max_entries: 4,
        ..Default::default()
    };
    let error = read_archive(archive.as_slice(), few, &mut Discard).unwrap_err();
    assert!(error.to_string().contains("more than 4 entries"), "{error}");
    // A blob that claims to be huge is refused before a byte of it is read.
    let bomb = rebuilt(&archive, |list| {
        let last = list.last_mut().unwrap();
        last.2 = vec![0; 64 << 20];
    });
    assert!(bomb.len() < 1 << 20, "64 MiB of zeros compress small");
    let limits = ReadLimits {
        max_total_bytes: 16 << 20,
        ..Default::default()
    };
    let error = read_archive(bomb.as_slice(), limits, &mut Discard).unwrap_err();
    assert!(matches!(error, ArchiveError::TooLarge { .. }), "{error}");
}

#[test]
fn entries_that_escape_or_are_not_files_are_refused() {
    let (contents, blobs) = contents();
    let archive = write(&contents, &blobs, 64);
    let cases: Vec<(String, tar::EntryType, Option<&str>, &str)> = vec![
        (
            "../../etc/cron.d/x".into(),
            tar::EntryType::Regular,
            None,
            "`..` is not allowed",
        ),
        (
            "images/../../x".into(),
            tar::EntryType::Regular,
            None,
            "`..` is not allowed",
        ),
        (
            "/etc/passwd".into(),
            tar::EntryType::Regular,
            None,
            "absolute paths",
        ),
        (
            "images/blobs/sha256/link".into(),
            tar::EntryType::Symlink,
            Some("/etc/shadow"),
            "links are not allowed",
        ),
        (
            "images/hard".into(),
            tar::EntryType::Link,
            Some("manifest.yaml"),
            "links are not allowed",
        ),
        (
            "images/dev".into(),
            tar::EntryType::Char,
            None,
            "entries are not allowed",
        ),
    ];
    for (path, kind, link, expected) in cases {
        let evil = rebuilt(&archive, |list| {
            list.insert(1, (path.clone(), kind, b"x".to_vec(), link))
        });
        let error = read(&evil).unwrap_err();
        assert!(
            matches!(error, ArchiveError::UnsafeEntry { .. }),
            "{path}: {error}"
        );
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("archive entry `{path}`")) && text.contains(expected),
            "{text}"
        );
    }
}

#[test]
fn archives_that_are_not_what_build_writes_are_refused() {
    let (contents, blobs) = contents();
    let archive = write(&contents, &blobs, 64);
    let layer = contents.blob_order()[0].0.clone();
    let layer_path = blob_path(&layer);
    type Edit = Box<dyn Fn(&mut Vec<(String, tar::EntryType, Vec<u8>, Option<&str>)>)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|list| {
                list.push((
                    "notes.txt".into(),
                    tar::EntryType::Regular,
                    b"hi".to_vec(),
                    None,
                ))
            }),
            "archive entry `notes.txt`: is not part of a package",
        ),
        (
            Box::new(move |list| {
                let entry = list.iter_mut().find(|e| e.0 == layer_path).unwrap();
                entry.2[0] ^= 0xff;
            }),
            "its content hashes to",
        ),
        (
            Box::new(|list| {
                list.swap(0, 1);
            }),
            "archive entry `icon.svg`: comes before manifest.yaml, which must be first",
        ),
        (
            Box::new(|list| {
                let manifest = list.remove(7);
                list.push(manifest);
            }),
            // Its config and layers now come before it.
            "is a blob no manifest read before it lists",
        ),
        (
            Box::new(|list| {
                let last = list.pop().unwrap();
                list.insert(7, last);
            }),
            "is a blob no manifest read before it lists",
        ),
        (
            Box::new(|list| {
                let copy = list.last().unwrap().clone();
                list.push(copy);
            }),
            "appears twice",
        ),
        (
            Box::new(|list| {
                list[0].2 = String::from_utf8(list[0].2.clone())
                    .unwrap()
                    .replace(
                        "relatedImages:",
                        "relatedImages:\n  - image: quay.io/acme/extra:1",
                    )
                    .into_bytes();
            }),
            "image quay.io/acme/extra:1, which manifest.yaml names",
        ),
    ];
    for (edit, expected) in cases {
        let bad = rebuilt(&archive, edit);
        let error = read(&bad).unwrap_err().to_string();
        assert!(error.contains(expected), "expected `{expected}`: {error}");
    }
}

#[test]
fn the_writer_checks_each_blob_it_is_given() {
    let (contents, blobs) = contents();
    let order = contents.blob_order();
    let (first, size) = order[0].clone();
    let mut writer = ArchiveWriter::start(Vec::new(), &contents).unwrap();
    assert!(matches!(
        writer.blob(&order[1].0),
        Err(WriteError::OutOfOrder { .. })
    ));
    let mut blob = writer.blob(&first).unwrap();
    let mut wrong = blobs[&first].clone();
    wrong[0] ^= 1;
    blob.write(&wrong).unwrap();
    assert!(matches!(blob.finish(), Err(WriteError::Digest { .. })));
    let mut writer = ArchiveWriter::start(Vec::new(), &contents).unwrap();
    let mut blob = writer.blob(&first).unwrap();
    let long = vec![0; size as usize + 1];
    assert!(matches!(blob.write(&long), Err(WriteError::Size { .. })));
    let writer = ArchiveWriter::start(Vec::new(), &contents).unwrap();
    assert!(matches!(writer.finish(), Err(WriteError::Missing(_))));
}

#[test]
fn an_archive_without_an_icon_reads_too() {
    let (mut contents, blobs) = contents();
    contents.icon = None;
    contents.manifest_yaml = manifest_yaml(&contents.images, false);
    let archive = write(&contents, &blobs, 64);
    assert_eq!(read(&archive).unwrap().icon, None);
}

proptest::proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..4096)) {
        let _ = read(&bytes);
        let _ = read(&gzip(&bytes));
    }
}
