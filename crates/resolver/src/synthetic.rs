//! Catalogs built in code: a small builder for tests and examples, and the generated catalog the
//! benchmarks resolve against.
//!
//! Bundles are named `<package>.v<version>`; APIs are `<Kind>` in group `test.windlass.dev`,
//! version `v1`, so tests read like the catalogs they describe.

use windlass_catalog::{
    Bundle, Catalog, Channel, ChannelEntry, Package, Property, model::Gvk, model::RawJson,
};

pub const GROUP: &str = "test.windlass.dev";

pub fn gvk(kind: &str) -> Gvk {
    Gvk {
        group: GROUP.into(),
        version: "v1".into(),
        kind: kind.into(),
    }
}

pub fn bundle_name(package: &str, version: &str) -> String {
    format!("{package}.v{version}")
}

#[derive(Clone, Debug, Default)]
pub struct CatalogBuilder {
    catalog: Catalog,
}

impl CatalogBuilder {
    pub fn new() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// Add `<package>.v<version>` to the package's `stable` channel (created on first use and
    /// made the default channel).
    pub fn bundle(&mut self, package: &str, version: &str) -> BundleSpec<'_> {
        let pkg = self
            .catalog
            .packages
            .entry(package.to_string())
            .or_insert_with(|| Package {
                name: package.into(),
                default_channel: Some("stable".into()),
                ..Default::default()
            });
        let name = bundle_name(package, version);
        let version =
            semver::Version::parse(version).unwrap_or_else(|_| semver::Version::new(0, 0, 0));
        pkg.bundles.insert(
            name.clone(),
            Bundle {
                name: name.clone(),
                package: package.into(),
                version: version.clone(),
                image: None,
                properties: vec![Property::Package {
                    package_name: package.into(),
                    version: version.to_string().into(),
                }],
                related_images: Vec::new(),
            },
        );
        channel_mut(pkg, "stable").entries.push(ChannelEntry {
            name: name.as_str().into(),
            ..Default::default()
        });
        BundleSpec { package: pkg, name }
    }

    /// Set (or clear) a package's default channel.
    pub fn default_channel(&mut self, package: &str, channel: Option<&str>) -> &mut Self {
        if let Some(p) = self.catalog.packages.get_mut(package) {
            p.default_channel = channel.map(str::to_string);
        }
        self
    }

    pub fn build(&self) -> Catalog {
        self.catalog.clone()
    }

    /// The catalog, without the copy `build` makes.
    pub fn finish(self) -> Catalog {
        self.catalog
    }
}

fn channel_mut<'p>(pkg: &'p mut Package, channel: &str) -> &'p mut Channel {
    let package = pkg.name.clone();
    pkg.channels
        .entry(channel.to_string())
        .or_insert_with(|| Channel {
            name: channel.into(),
            package: package.into(),
            entries: Vec::new(),
        })
}

/// Edits one bundle just added; versions name bundles of the same package.
pub struct BundleSpec<'b> {
    package: &'b mut Package,
    name: String,
}

impl BundleSpec<'_> {
    fn entries(&mut self) -> impl Iterator<Item = &mut ChannelEntry> {
        let name = self.name.clone();
        self.package
            .channels
            .values_mut()
            .flat_map(|c| c.entries.iter_mut())
            .filter(move |e| e.name == name)
    }

    fn props(&mut self) -> &mut Vec<Property> {
        &mut self
            .package
            .bundles
            .get_mut(&self.name)
            .expect("bundle just added")
            .properties
    }

    /// Put the bundle in these channels instead of `stable`.
    pub fn channels(mut self, channels: &[&str]) -> Self {
        let entry = self.entries().next().cloned().unwrap_or_default();
        for c in self.package.channels.values_mut() {
            c.entries.retain(|e| e.name != self.name);
        }
        for ch in channels {
            channel_mut(self.package, ch).entries.push(entry.clone());
        }
        self.package.channels.retain(|_, c| !c.entries.is_empty());
        self
    }

    pub fn replaces(mut self, version: &str) -> Self {
        let r = bundle_name(&self.package.name, version);
        let r = windlass_catalog::model::Name::from(r);
        self.entries().for_each(|e| e.replaces = Some(r.clone()));
        self
    }

    pub fn skips(mut self, versions: &[&str]) -> Self {
        let names: Vec<windlass_catalog::model::Name> = versions
            .iter()
            .map(|v| bundle_name(&self.package.name, v).into())
            .collect();
        self.entries().for_each(|e| e.skips = names.clone());
        self
    }

    pub fn skip_range(mut self, range: &str) -> Self {
        self.entries()
            .for_each(|e| e.skip_range = Some(range.into()));
        self
    }

    /// The bundle owns API `kind`.
    pub fn owns(mut self, kind: &str) -> Self {
        self.props().push(Property::Gvk(gvk(kind)));
        self
    }

    /// The bundle needs some bundle that owns API `kind`.
    pub fn needs_api(mut self, kind: &str) -> Self {
        self.props().push(Property::GvkRequired(gvk(kind)));
        self
    }

    /// The bundle needs `package` in `range`.
    pub fn needs(mut self, package: &str, range: &str) -> Self {
        self.props().push(Property::PackageRequired {
            package_name: package.into(),
            version_range: range.into(),
        });
        self
    }

    /// The bundle carries an `olm.constraint` with this value (written as in a catalog).
    pub fn constraint(mut self, value: serde_json::Value) -> Self {
        self.props().push(Property::Other {
            type_: windlass_catalog::constraint::CONSTRAINT_TYPE.into(),
            value: RawJson::from_value(&value),
        });
        self
    }

    /// The bundle carries any other property.
    pub fn property(mut self, type_: &str, value: serde_json::Value) -> Self {
        self.props().push(Property::Other {
            type_: type_.into(),
            value: RawJson::from_value(&value),
        });
        self
    }
}

/// A deterministic catalog shaped like a large real one: `packages` packages with `versions`
/// versions each in a replaces chain (every fifth entry also carries a skipRange over the
/// previous four). Package `i` needs package `i + 1` (in a range covering its newer half) when
/// `i % 4 != 3`, so dependency chains are three deep; every package also needs one of a few
/// shared APIs, each owned by one provider package (the last few packages).
pub fn generate(packages: usize, versions: usize) -> Catalog {
    let providers = (packages / 50).clamp(1, 20);
    let mut b = CatalogBuilder::new();
    for i in 0..packages {
        let name = format!("pkg{i:05}");
        for v in 0..versions {
            let version = format!("1.{v}.0");
            let mut spec = b.bundle(&name, &version);
            if v > 0 {
                spec = spec.replaces(&format!("1.{}.0", v - 1));
            }
            if v % 5 == 4 {
                spec = spec.skip_range(&format!(">=1.{}.0 <1.{v}.0", v - 4));
            }
            let provider = packages - providers + i % providers;
            if i >= packages - providers {
                spec = spec.owns(&format!("Shared{}", i - (packages - providers)));
            } else {
                spec = spec
                    .owns(&format!("Own{i}"))
                    .needs_api(&format!("Shared{}", provider - (packages - providers)));
                if i % 4 != 3 && i + 1 < packages - providers {
                    spec = spec.needs(
                        &format!("pkg{:05}", i + 1),
                        &format!(">=1.{}.0", versions / 2),
                    );
                }
            }
            let _ = spec;
        }
    }
    b.finish()
}

/// [`generate`] with `olm.constraint`s on every `every`-th package (providers excepted): its
/// bundles carry a CEL rule asking for the next package at `1.<versions/2>.0` or newer through
/// `semver_compare` (a rule OLM weighs against every bundle of the catalog), and the package
/// after it an `any` of that range and the package's shared API (weighed against that package's
/// bundles and the API's owners only).
pub fn generate_with_constraints(packages: usize, versions: usize, every: usize) -> Catalog {
    let mut catalog = generate(packages, versions);
    let providers = (packages / 50).clamp(1, 20);
    let every = every.max(2);
    for (i, package) in catalog.packages.values_mut().enumerate() {
        if i + 2 >= packages - providers {
            break;
        }
        let next = format!("pkg{:05}", i + 1);
        let half = format!("1.{}.0", versions / 2);
        let value = match i % every {
            0 => serde_json::json!({
                "failureMessage": format!("needs {next} {half} or newer"),
                "cel": {"rule": format!(
                    "properties.exists(p, p.type == 'olm.package' && p.value.packageName == '{next}' \
                     && semver_compare(p.value.version, '{half}') >= 0)"
                )},
            }),
            1 => serde_json::json!({
                "any": {"constraints": [
                    {"package": {"packageName": next, "versionRange": format!(">={half}")}},
                    {"gvk": {"group": GROUP, "version": "v1", "kind": format!("Shared{}", i % providers)}},
                ]},
            }),
            _ => continue,
        };
        for bundle in package.bundles.values_mut() {
            bundle.properties.push(Property::Other {
                type_: windlass_catalog::constraint::CONSTRAINT_TYPE.into(),
                value: RawJson::from_value(&value),
            });
        }
    }
    catalog
}
