//! Taking bundles out of a package without breaking its channels.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Channel, ChannelEntry, Name, Package};

/// Removes the bundles named in `names` from `package` and from every channel ([`splice`]).
/// Channels left empty are removed; the default channel is never moved to another one
/// (subscribers would silently switch streams).
pub fn without_bundles(package: &mut Package, names: &BTreeSet<String>) {
    if names.is_empty() {
        return;
    }
    package.bundles.retain(|name, _| !names.contains(name));
    for channel in package.channels.values_mut() {
        splice(channel, names);
    }
    package.channels.retain(|_, c| !c.entries.is_empty());
}

/// Removes the entries named in `names` from one channel. An entry that replaced a removed one
/// now replaces what that one replaced (through any run of removed entries) and skips the
/// removed ones, so an installed removed version still has its way up; it also takes over what
/// the removed entries skipped.
pub(crate) fn splice(channel: &mut Channel, names: &BTreeSet<String>) {
    let removed: BTreeMap<&str, &ChannelEntry> = channel
        .entries
        .iter()
        .filter(|e| names.contains(e.name.as_str()))
        .map(|e| (e.name.as_str(), e))
        .collect();
    if removed.is_empty() {
        return;
    }
    let mut spliced: Vec<ChannelEntry> = Vec::with_capacity(channel.entries.len());
    for entry in &channel.entries {
        if removed.contains_key(entry.name.as_str()) {
            continue;
        }
        let mut entry = entry.clone();
        let mut seen = BTreeSet::new();
        while let Some(gone) = entry
            .replaces
            .as_ref()
            .and_then(|r| removed.get(r.as_str()))
            .filter(|gone| seen.insert(gone.name.as_str()))
        {
            push_unique(&mut entry.skips, gone.name.clone());
            for skipped in &gone.skips {
                push_unique(&mut entry.skips, skipped.clone());
            }
            entry.replaces = gone.replaces.clone();
        }
        spliced.push(entry);
    }
    channel.entries = spliced;
}

fn push_unique(list: &mut Vec<Name>, name: Name) {
    if !list.contains(&name) {
        list.push(name);
    }
}
