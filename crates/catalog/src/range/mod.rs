//! Version ranges in the blang/semver and Masterminds syntaxes bundles use.
//!
//! One parser accepts both, because catalogs mix them: `olm.skipRange` and
//! `olm.package.required` are written for blang/semver (`>=1.0.0 <2.0.0`, `||`, optional `v`,
//! `1.2.x`), OLM v1 and newer tooling write Masterminds (`>=1.2, <2`, `~1.2`, `^1`, `1.x`,
//! `1.2 - 1.4`). The `semver` crate reads neither faithfully (a bare `1.2.3` means caret there), so
//! ranges are parsed here into plain intervals and compared by semver precedence.
//!
//! Grammar: alternatives separated by `||`; inside one alternative, comparators separated by
//! spaces and/or commas are all required (AND). A comparator is an optional operator (`=`, `==`,
//! `!=`, `>`, `>=`, `<`, `<=`, `~`, `~>`, `^`) and a version that may carry a `v` prefix and may be
//! partial (`1`, `1.2`) or wildcarded (`1.x`, `1.2.*`, `*`). A bare version without wildcard means
//! exactly that version (blang), a partial one means the whole span it names (`1.2` = `1.2.x`).
//!
//! **Pre-release rule** (the one npm and Masterminds use, stated by windlass for every range): a
//! version with a pre-release tag (`1.3.0-rc.1`) satisfies an alternative only if that alternative
//! names a pre-release of the same `major.minor.patch` in one of its comparators, and then also
//! satisfies every comparator. So `>=1.0.0 <2.0.0` does not admit `1.5.0-alpha`, while
//! `>=1.5.0-alpha <2.0.0` admits `1.5.0-beta` but not `1.6.0-beta`. Build metadata is ignored.

use std::{cmp::Ordering, fmt, str::FromStr};

use semver::{Prerelease, Version};

/// A parsed range: a version matches when it satisfies every comparator of at least one
/// alternative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionRange {
    text: String,
    alternatives: Vec<Vec<Comparator>>,
}

/// One bound after expansion: `~1.2` becomes two of these, `1.2.x` too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Comparator {
    Eq(Version),
    Ne(Version),
    Gt(Version),
    Ge(Version),
    Lt(Version),
    Le(Version),
    /// `!=1.2` with a partial version: anything outside `[low, high)`.
    NotIn(Version, Version),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("version range is empty")]
    Empty,
    #[error("version range {range:?}: alternative {index} between `||` is empty")]
    EmptyAlternative { range: String, index: usize },
    #[error("version range {range:?}: {token:?} is not a version: {reason}")]
    BadVersion {
        range: String,
        token: String,
        reason: String,
    },
    #[error("version range {range:?}: operator {op:?} has no version after it")]
    DanglingOperator { range: String, op: String },
    #[error("version range {range:?}: hyphen range needs a version on both sides of `-`")]
    BadHyphen { range: String },
    #[error("version range {range:?}: {op:?} cannot be combined with a wildcard version {token:?}")]
    WildcardWithOperator {
        range: String,
        op: String,
        token: String,
    },
}

impl VersionRange {
    /// Parse a range written in blang/semver or Masterminds syntax.
    pub fn parse(text: &str) -> Result<VersionRange, RangeError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(RangeError::Empty);
        }
        let mut alternatives = Vec::new();
        for (index, alt) in trimmed.split("||").enumerate() {
            let comparators = parse_alternative(text, alt)?;
            if comparators.is_empty() {
                return Err(RangeError::EmptyAlternative {
                    range: text.to_string(),
                    index,
                });
            }
            alternatives.push(comparators);
        }
        Ok(VersionRange {
            text: trimmed.to_string(),
            alternatives,
        })
    }

    /// A range that matches exactly one version.
    pub fn exact(version: &Version) -> VersionRange {
        VersionRange {
            text: format!("={version}"),
            alternatives: vec![vec![Comparator::Eq(version.clone())]],
        }
    }

    /// Whether `version` lies in the range (pre-release rule in the module docs).
    pub fn matches(&self, version: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|alt| alternative_matches(alt, version))
    }

    /// The range as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The expanded alternatives, for tools that want to show what a range means.
    pub fn alternatives(&self) -> &[Vec<Comparator>] {
        &self.alternatives
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for VersionRange {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VersionRange::parse(s)
    }
}

impl serde::Serialize for VersionRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for VersionRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        VersionRange::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Compare by semver precedence: build metadata does not count (the `semver` crate's `Ord`
/// orders by it, which would make `1.0.0+a` and `1.0.0+b` different bounds).
pub fn precedence(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| a.pre.cmp(&b.pre))
}

impl Comparator {
    fn satisfied_by(&self, v: &Version) -> bool {
        match self {
            Comparator::Eq(b) => precedence(v, b).is_eq(),
            Comparator::Ne(b) => !precedence(v, b).is_eq(),
            Comparator::Gt(b) => precedence(v, b).is_gt(),
            Comparator::Ge(b) => precedence(v, b).is_ge(),
            Comparator::Lt(b) => precedence(v, b).is_lt(),
            Comparator::Le(b) => precedence(v, b).is_le(),
            Comparator::NotIn(lo, hi) => precedence(v, lo).is_lt() || precedence(v, hi).is_ge(),
        }
    }

    fn versions(&self) -> impl Iterator<Item = &Version> {
        let (a, b) = match self {
            Comparator::Eq(v)
            | Comparator::Ne(v)
            | Comparator::Gt(v)
            | Comparator::Ge(v)
            | Comparator::Lt(v)
            | Comparator::Le(v) => (v, None),
            Comparator::NotIn(lo, hi) => (lo, Some(hi)),
        };
        std::iter::once(a).chain(b)
    }
}

fn alternative_matches(alt: &[Comparator], v: &Version) -> bool {
    if !v.pre.is_empty() {
        let named = alt.iter().flat_map(Comparator::versions).any(|b| {
            !b.pre.is_empty() && (b.major, b.minor, b.patch) == (v.major, v.minor, v.patch)
        });
        if !named {
            return false;
        }
    }
    alt.iter().all(|c| c.satisfied_by(v))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Tilde,
    Caret,
}

/// A version as written, before expansion: missing or wildcard parts are `None`.
struct Partial {
    major: Option<u64>,
    minor: Option<u64>,
    patch: Option<u64>,
    pre: Prerelease,
}

impl Partial {
    fn floor(&self) -> Version {
        let mut v = Version::new(
            self.major.unwrap_or(0),
            self.minor.unwrap_or(0),
            self.patch.unwrap_or(0),
        );
        v.pre = self.pre.clone();
        v
    }

    fn is_full(&self) -> bool {
        self.patch.is_some()
    }

    /// The first version after the span the partial version names (`1.2` -> `1.3.0`); `None`
    /// for `*`, which has no end.
    fn ceiling(&self) -> Option<Version> {
        match (self.major, self.minor, self.patch) {
            (None, _, _) => None,
            (Some(ma), None, _) => Some(Version::new(ma.checked_add(1)?, 0, 0)),
            (Some(ma), Some(mi), None) => Some(Version::new(ma, mi.checked_add(1)?, 0)),
            (Some(ma), Some(mi), Some(pa)) => Some(Version::new(ma, mi, pa.checked_add(1)?)),
        }
    }
}

fn tokenize(alt: &str) -> Vec<&str> {
    alt.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .collect()
}

fn split_op(token: &str) -> (Option<Op>, &str) {
    // Longest operators first so `>=` is not read as `>` followed by `=1.0`.
    const OPS: [(&str, Op); 11] = [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">=", Op::Ge),
        ("=>", Op::Ge),
        ("<=", Op::Le),
        ("=<", Op::Le),
        ("~>", Op::Tilde),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
        ("~", Op::Tilde),
    ];
    if let Some(rest) = token.strip_prefix('^') {
        return (Some(Op::Caret), rest);
    }
    for (text, op) in OPS {
        if let Some(rest) = token.strip_prefix(text) {
            return (Some(op), rest);
        }
    }
    (None, token)
}

fn parse_alternative(range: &str, alt: &str) -> Result<Vec<Comparator>, RangeError> {
    let tokens = tokenize(alt);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (op, mut version_text) = split_op(tokens[i]);
        if version_text.is_empty() {
            // `>= 1.2`: Masterminds allows a space between operator and version.
            i += 1;
            match tokens.get(i) {
                Some(next) if split_op(next).0.is_none() => version_text = next,
                _ => {
                    return Err(RangeError::DanglingOperator {
                        range: range.to_string(),
                        op: tokens[i - 1].to_string(),
                    });
                }
            }
        }
        let low = parse_partial(range, version_text)?;
        // Hyphen range `1.2 - 1.4`: inclusive on both ends, the upper end partial-aware.
        if op.is_none() && tokens.get(i + 1) == Some(&"-") {
            let high_text = tokens.get(i + 2).ok_or_else(|| RangeError::BadHyphen {
                range: range.to_string(),
            })?;
            let high = parse_partial(range, high_text)?;
            out.push(Comparator::Ge(low.floor()));
            match (high.is_full(), high.ceiling()) {
                (true, _) => out.push(Comparator::Le(high.floor())),
                (false, Some(ceiling)) => out.push(Comparator::Lt(ceiling)),
                (false, None) => {}
            }
            i += 3;
            continue;
        }
        expand(range, op, version_text, &low, &mut out)?;
        i += 1;
    }
    Ok(out)
}

fn expand(
    range: &str,
    op: Option<Op>,
    token: &str,
    p: &Partial,
    out: &mut Vec<Comparator>,
) -> Result<(), RangeError> {
    let floor = p.floor();
    let ceiling = p.ceiling();
    let full = p.is_full();
    match op.unwrap_or(Op::Eq) {
        Op::Eq if full => out.push(Comparator::Eq(floor)),
        Op::Eq => {
            out.push(Comparator::Ge(floor));
            out.extend(ceiling.map(Comparator::Lt));
        }
        Op::Ne if full => out.push(Comparator::Ne(floor)),
        Op::Ne => match ceiling {
            Some(c) => out.push(Comparator::NotIn(floor, c)),
            None => {
                return Err(RangeError::WildcardWithOperator {
                    range: range.to_string(),
                    op: "!=".into(),
                    token: token.into(),
                });
            }
        },
        Op::Gt if full => out.push(Comparator::Gt(floor)),
        // `>1.2` means above the whole 1.2 span; `>*` can match nothing.
        Op::Gt => match ceiling {
            Some(c) => out.push(Comparator::Ge(c)),
            None => {
                return Err(RangeError::WildcardWithOperator {
                    range: range.to_string(),
                    op: ">".into(),
                    token: token.into(),
                });
            }
        },
        Op::Ge => out.push(Comparator::Ge(floor)),
        Op::Lt => out.push(Comparator::Lt(floor)),
        Op::Le if full => out.push(Comparator::Le(floor)),
        Op::Le => {
            if let Some(c) = ceiling {
                out.push(Comparator::Lt(c));
            }
        }
        Op::Tilde => {
            out.push(Comparator::Ge(floor.clone()));
            // `~1` spans the major; `~1.2` and `~1.2.3` span the minor.
            let upper = match (p.major, p.minor) {
                (None, _) => None,
                (Some(ma), None) => ma.checked_add(1).map(|n| Version::new(n, 0, 0)),
                (Some(ma), Some(mi)) => mi.checked_add(1).map(|n| Version::new(ma, n, 0)),
            };
            out.extend(upper.map(Comparator::Lt));
        }
        Op::Caret => {
            out.push(Comparator::Ge(floor.clone()));
            // The first non-zero part written is the one that may not change.
            let upper = match (p.major, p.minor, p.patch) {
                (None, _, _) => None,
                (Some(ma), _, _) if ma > 0 => ma.checked_add(1).map(|n| Version::new(n, 0, 0)),
                (Some(_), None, _) => Some(Version::new(1, 0, 0)),
                (Some(_), Some(mi), _) if mi > 0 => {
                    mi.checked_add(1).map(|n| Version::new(0, n, 0))
                }
                (Some(_), Some(_), None) => Some(Version::new(0, 1, 0)),
                (Some(_), Some(_), Some(pa)) => pa.checked_add(1).map(|n| Version::new(0, 0, n)),
            };
            out.extend(upper.map(Comparator::Lt));
        }
    }
    Ok(())
}

fn parse_partial(range: &str, token: &str) -> Result<Partial, RangeError> {
    let bad = |reason: &str| RangeError::BadVersion {
        range: range.to_string(),
        token: token.to_string(),
        reason: reason.to_string(),
    };
    let text = token.strip_prefix(['v', 'V']).unwrap_or(token);
    // Build metadata never affects matching; drop it before looking at the parts.
    let text = text.split_once('+').map_or(text, |(v, _)| v);
    let (core, pre) = match text.split_once('-') {
        Some((_, "")) => return Err(bad("pre-release after `-` is empty")),
        Some((core, pre)) => (
            core,
            Prerelease::new(pre).map_err(|e| bad(&format!("pre-release: {e}")))?,
        ),
        None => (text, Prerelease::EMPTY),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 {
        return Err(bad("more than three dot-separated parts"));
    }
    let mut nums: [Option<u64>; 3] = [None; 3];
    let mut wildcard_seen = false;
    for (slot, part) in nums.iter_mut().zip(&parts) {
        if matches!(*part, "x" | "X" | "*") {
            wildcard_seen = true;
            continue;
        }
        if wildcard_seen {
            return Err(bad("a number cannot follow a wildcard"));
        }
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("each part must be a number or x/X/*"));
        }
        if part.len() > 1 && part.starts_with('0') {
            return Err(bad("leading zeros are not allowed"));
        }
        *slot = Some(part.parse().map_err(|_| bad("number too large"))?);
    }
    let [major, minor, patch] = nums;
    if !pre.is_empty() && patch.is_none() {
        return Err(bad("a pre-release needs a full major.minor.patch version"));
    }
    Ok(Partial {
        major,
        minor,
        patch,
        pre,
    })
}

#[cfg(test)]
mod tests;
