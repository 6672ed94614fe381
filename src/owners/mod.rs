//! Who owns an object, and under which tool: the owner model.
//!
//! A policy knows one or more schemes, each a tool's owner vocabulary (`settings::Scheme`).
//! Under a scheme, an object's owner is the tuple of the values of the scheme's owner keys
//! (labels, then annotations); the object has an owner there when at least one key is present
//! (even with ""). Two owners under one scheme are the same only when every key is absent on
//! both or equal on both. Under two schemes, owners are one only where an alias relates the
//! schemes and the keys it pairs hold equal values (Flux's helm-controller writes its labels
//! and Helm's annotations for one HelmRelease). An object has one owner when every owner it
//! carries is one with every other; the handover annotation names a successor in the keys of
//! one scheme.
//!
//! `Schemes` is the settings' keys worked out once per policy instance: each key the rules
//! read has a slot, which `request` fills with its value as it reads an object's metadata, and
//! `Marks` reads the owners back from those slots.
//!
//! A key's value names the owner whole, but for a tool whose key also names the object: an
//! Argo CD tracking id names its Application up to the first `:` (`tools::argocd`), and only
//! that part is compared. An alias by a tool's rule (`tools::flux_helm`: the release a
//! HelmRelease installs) is decided per request, from the keys where they decide it and by a
//! lookup where they do not (`Related`).

pub mod markers;

use crate::reading::json::Str;
use crate::reading::request::Wanted;
use crate::settings::{Scheme as SchemeSettings, Settings};
use crate::tools::cluster::Cluster;
use crate::tools::{argocd, flux_helm};

/// One tool's keys, with the slots their values go to.
#[derive(Debug)]
pub struct Scheme {
    /// The tool's name in messages; "" in the one-tool form, whose messages name no tool.
    pub name: String,
    /// The owner keys, labels then annotations.
    pub keys: Vec<String>,
    /// How many of `keys` are labels.
    pub labels: usize,
    pub kind_label: String,
    pub namespace_label: String,
    pub revision_annotation: String,
    pub cluster_scoped_owner_kinds: Vec<String>,
    /// The tool that writes the keys (`tools`), "" for none.
    pub tool: String,
    /// The owner keys (bit `i`: the `i`th) whose owner is an Argo CD Application, named by
    /// the value up to its first `:`.
    applications: u64,
    /// The owner keys (bit `i`) that only qualify the owner the others name: Argo CD's
    /// installation id (`tools::argocd`).
    qualifiers: u64,
    /// The slot of the first owner key; the others follow, then the kind, namespace and
    /// revision slots.
    first: usize,
}

/// Where the three extra keys of a scheme are, after its owner keys.
const KIND: usize = 0;
const NAMESPACE: usize = 1;
const REVISION: usize = 2;
const EXTRAS: usize = 3;

impl Scheme {
    fn kind_slot(&self) -> usize {
        self.first + self.keys.len() + KIND
    }

    pub fn is_cluster_scoped_owner_kind(&self, kind: &str) -> bool {
        self.cluster_scoped_owner_kinds.iter().any(|k| k == kind)
    }

    /// Whether the `i`th owner key is a label (else an annotation).
    pub fn is_label(&self, i: usize) -> bool {
        i < self.labels
    }

    /// The index of owner key `key`.
    pub fn key_index(&self, key: &str) -> Option<usize> {
        self.keys.iter().position(|k| k == key)
    }

    /// An owner under this scheme, of the values of its owner keys.
    fn owner<'m>(&self, values: Values<'m>) -> Owner<'m> {
        Owner {
            values,
            applications: self.applications,
            qualifiers: self.qualifiers,
        }
    }
}

/// Two schemes whose keys name one owner (`settings::Alias`), by scheme and key index: the
/// keys whose values are equal, or a tool's rule.
#[derive(Debug)]
struct Alias {
    schemes: (usize, usize),
    pairs: Vec<(usize, usize)>,
    rule: Option<HelmController>,
}

/// helm-controller's rule (`tools::flux_helm`): the first scheme's keys name a HelmRelease
/// (name, namespace), the second's its Helm release (name, namespace).
#[derive(Debug, Clone, Copy)]
struct HelmController {
    helm_release: (usize, usize),
    release: (usize, usize),
}

/// The schemes of a policy, worked out.
#[derive(Debug)]
pub struct Schemes {
    pub list: Vec<Scheme>,
    aliases: Vec<Alias>,
    pub handover_annotation: String,
    /// The slot of the handover annotation's value.
    successor: usize,
    /// The schemes whose tool sets a controller ownerReference (OLM v1's, Crossplane's:
    /// `tools::sets_controller`).
    pub controlled: Vec<usize>,
    /// The first of the three slots of the object's controller reference (`controller`) where
    /// a scheme is controlled; `None`: no rule reads it, and the reader skips
    /// `ownerReferences`.
    controller_slot: Option<usize>,
    /// Each label key the rules read, and the slot its value goes to.
    pub label_keys: Vec<(String, usize)>,
    /// Each annotation key the rules read, and its slot.
    pub annotation_keys: Vec<(String, usize)>,
}

impl Schemes {
    /// Works out the schemes of valid settings.
    pub fn new(settings: &Settings) -> Schemes {
        let mut list = Vec::new();
        let (mut label_keys, mut annotation_keys) = (Vec::new(), Vec::new());
        let mut first = 0;
        let configured = settings.schemes();
        for s in &configured {
            let keys: Vec<String> = s.owner_keys().cloned().collect();
            let applications = match s.tool.as_str() {
                "argocd" => (keys.iter().enumerate())
                    .filter(|(i, k)| *k == argocd::TRACKING_ID && *i < 64)
                    .fold(0, |mask, (i, _)| mask | 1 << i),
                _ => 0,
            };
            let qualifiers = (keys.iter().enumerate())
                .filter(|(i, k)| *k == argocd::INSTALLATION_ID && *i < 64)
                .fold(0, |mask, (i, _)| mask | 1 << i);
            let scheme = Scheme {
                name: s.name.clone(),
                keys,
                labels: s.owner_labels.len(),
                kind_label: s.owner_kind_label.clone(),
                namespace_label: s.owner_namespace_label.clone(),
                revision_annotation: s.revision_annotation.clone(),
                cluster_scoped_owner_kinds: s.cluster_scoped_owner_kinds.clone(),
                tool: s.tool.clone(),
                applications,
                qualifiers,
                first,
            };
            let extras = first + scheme.keys.len();
            label_keys.extend(s.owner_labels.iter().cloned().zip(first..));
            annotation_keys
                .extend((s.owner_annotations.iter().cloned()).zip(first + s.owner_labels.len()..));
            for (key, label, slot) in [
                (&s.owner_kind_label, true, KIND),
                (&s.owner_namespace_label, true, NAMESPACE),
                (&s.revision_annotation, false, REVISION),
            ] {
                let list = if label {
                    &mut label_keys
                } else {
                    &mut annotation_keys
                };
                if !key.is_empty() {
                    list.push((key.clone(), extras + slot));
                }
            }
            first = extras + EXTRAS;
            list.push(scheme);
        }
        let successor = first;
        let controlled: Vec<usize> = (list.iter().enumerate())
            .filter(|(_, s)| crate::tools::sets_controller(&s.tool))
            .map(|(i, _)| i)
            .collect();
        let controller_slot = (!controlled.is_empty()).then_some(successor + 1);
        if !settings.handover_annotation.is_empty() {
            annotation_keys.push((settings.handover_annotation.clone(), successor));
        }
        let aliases = (settings.aliases.iter())
            .filter_map(|a| alias(&configured, a))
            .collect();
        Schemes {
            list,
            aliases,
            handover_annotation: settings.handover_annotation.clone(),
            successor,
            controlled,
            controller_slot,
            label_keys,
            annotation_keys,
        }
    }

    /// The keys the reader decodes, with their slots.
    pub fn wanted(&self) -> Wanted<'_> {
        Wanted {
            labels: &self.label_keys,
            annotations: &self.annotation_keys,
            controller: self.controller_slot,
        }
    }

    /// How many of the slots hold keys' values (labels and annotations); the controller's
    /// follow them.
    pub fn key_slots(&self) -> usize {
        self.successor + 1
    }

    /// How many values the rules read off one object.
    pub fn slots(&self) -> usize {
        self.successor + 1 + if self.controller_slot.is_some() { 3 } else { 0 }
    }

    /// The owner of scheme `s` whose keys hold `values` (`(key, value)`), the others
    /// absent: the owner a marker other than the keys names, to compare with the keys'.
    pub fn named<'v>(&self, s: usize, values: &[(&str, &'v str)]) -> Owner<'v> {
        let scheme = &self.list[s];
        let named = (scheme.keys.iter())
            .map(|k| values.iter().find(|(key, _)| key == k).map(|(_, v)| *v))
            .collect();
        scheme.owner(Values::Named(named))
    }

    /// The controlled scheme of `tool`, if the policy has one.
    pub fn controlled_by(&self, tool: &str) -> Option<usize> {
        (self.controlled.iter().copied()).find(|&s| self.list[s].tool == tool)
    }

    /// The object's controller reference where it is a marker, with the scheme whose tool set
    /// it (`tools::controls`): a controller of a kind no scheme's tool sets names no owner the
    /// rules know.
    pub fn tools_controller<'m>(&self, marks: &Marks<'m>) -> Option<(usize, Reference<'m>)> {
        let r = marks.controller(self)?;
        (self.controlled.iter().copied())
            .find(|&s| {
                let scheme = &self.list[s];
                let marked = marks.owner(scheme).is_some();
                crate::tools::controls(&scheme.tool, (r.api_version, r.kind), marked)
            })
            .map(|s| (s, r))
    }

    /// Whether the policy knows several tools (else messages name none, and the rules across
    /// tools have nothing to compare).
    pub fn several(&self) -> bool {
        self.list.len() > 1
    }

    /// The alias of schemes `sa` and `sb`, and whether it lists them the other way round.
    fn alias(&self, sa: usize, sb: usize) -> Option<(&Alias, bool)> {
        (self.aliases.iter())
            .find(|x| x.schemes == (sa, sb) || x.schemes == (sb, sa))
            .map(|x| (x, x.schemes.0 != sa))
    }

    /// Whether an alias joins schemes `sa` and `sb` with `sa` first: an object that carries
    /// one owner under both is that owner of `sa`'s (the ClusterExtension, not the Helm release
    /// OLM v1 installs it with; the HelmRelease, not the release helm-controller writes).
    pub fn leads(&self, sa: usize, sb: usize) -> bool {
        self.alias(sa, sb).is_some_and(|(_, flip)| !flip)
    }

    /// Whether `a` of scheme `sa` and `b` of scheme `sb` are one owner (`related`: what this
    /// request decided of the aliases by a tool's rule).
    pub fn same_owner(
        &self,
        related: &Related,
        (sa, a): (usize, &Owner),
        (sb, b): (usize, &Owner),
    ) -> bool {
        if sa == sb {
            return a == b;
        }
        let Some((alias, flip)) = self.alias(sa, sb) else {
            return false;
        };
        let (a, b) = if flip { (b, a) } else { (a, b) };
        match alias.rule {
            Some(_) => related.decided(a, b).unwrap_or(false),
            None => (alias.pairs.iter()).all(|&(i, j)| a.key(i) == b.key(j)),
        }
    }

    /// Whether all of `owners` are one owner.
    pub fn one_owner(&self, related: &Related, owners: &[Owned]) -> bool {
        owners.iter().enumerate().all(|(n, a)| {
            (owners.iter().skip(n + 1)).all(|b| self.same_owner(related, a.pair(), b.pair()))
        })
    }

    /// Whether the alias of the schemes of `driver` and `driven` lets the first take over
    /// objects the second owns, as helm-controller takes over a Helm release that it finds
    /// installed under the name its HelmRelease gives (fluxcd/helm-controller
    /// `internal/reconcile/state.go`, `ReleaseStatusUnmanaged`, then an upgrade).
    pub fn takes_over(&self, driver: usize, driven: usize) -> bool {
        self.alias(driver, driven)
            .is_some_and(|(alias, flip)| alias.rule.is_some() && !flip)
    }

    /// Decides, for this request, the aliases by a tool's rule: every pair of owners of the
    /// two schemes on the stored object, the new one, or named as their successors. A pair is
    /// decided from its keys where they decide it; a pair on both objects, unchanged, is as it
    /// was judged when it was written; any other is looked up (`Err`: the lookup failed).
    pub fn relate(
        &self,
        cluster: &dyn Cluster,
        old: Option<&Marks>,
        new: &Marks,
    ) -> Result<Related, String> {
        let mut related = Related::default();
        for alias in &self.aliases {
            let Some(rule) = alias.rule else { continue };
            let (sa, sb) = alias.schemes;
            let of = |s: usize, m: &Marks<'_>| {
                let mut out: Vec<OwnedValues> = Vec::new();
                let owner = m.owner(&self.list[s]);
                if owner.is_some() {
                    out.push(owner.strings());
                }
                if let Some(named) = (m.successor(self))
                    .and_then(|v| self.parse_successor(v).ok())
                    .filter(|n| n.scheme == s)
                {
                    out.push(named.owner.strings());
                }
                out
            };
            let on = |m: Option<&Marks>, s: usize| m.map(|m| of(s, m)).unwrap_or_default();
            let (old_a, new_a) = (on(old, sa), of(sa, new));
            if old_a.is_empty() && new_a.is_empty() {
                // No owner of the rule's first tool: nothing to relate (the common case).
                continue;
            }
            let (old_b, new_b) = (on(old, sb), of(sb, new));
            for a in old_a.iter().chain(&new_a) {
                for b in old_b.iter().chain(&new_b) {
                    if related.pairs.iter().any(|(x, y, _)| x == a && y == b) {
                        continue;
                    }
                    let unchanged = [&old_a, &new_a].iter().all(|l| l.contains(a))
                        && [&old_b, &new_b].iter().all(|l| l.contains(b));
                    let one = rule.decide(cluster, a, b, unchanged)?;
                    related.pairs.push((a.clone(), b.clone(), one));
                }
            }
        }
        Ok(related)
    }

    /// The owner a handover annotation names, in label-selector form: `key=value` pairs of the
    /// owner keys of one scheme, comma-separated, each key at most once, no spaces; keys not
    /// listed are absent on the successor, and `key=` is present and empty.
    pub fn parse_successor<'s>(&self, value: &'s str) -> Result<Owned<'s>, String> {
        if value.is_empty() {
            return Err("it is empty".into());
        }
        if let Some(c) = value.chars().find(|c| c.is_whitespace()) {
            return Err(format!("it contains whitespace ({c:?})"));
        }
        let mut named: Option<(usize, Vec<Option<&'s str>>)> = None;
        for pair in value.split(',') {
            let Some((key, v)) = pair.split_once('=') else {
                return Err(format!("{pair:?} is not a key=value pair"));
            };
            let found = (self.list.iter().enumerate())
                .find_map(|(s, scheme)| Some((s, scheme.keys.iter().position(|k| k == key)?)));
            let Some((s, i)) = found else {
                return Err(format!("{key:?} is not one of the owner keys"));
            };
            let (scheme, values) =
                named.get_or_insert_with(|| (s, vec![None; self.list[s].keys.len()]));
            if *scheme != s {
                return Err(format!(
                    "{key:?} is an owner key of {:?}, another tool than {:?}: a successor is \
                     named in the keys of one tool",
                    self.list[s].name, self.list[*scheme].name
                ));
            }
            if values[i].replace(v).is_some() {
                return Err(format!("{key:?} is named twice"));
            }
        }
        match named {
            Some((scheme, values)) => Ok(Owned {
                scheme,
                owner: self.list[scheme].owner(Values::Named(values)),
            }),
            None => Err("it names no owner key".into()),
        }
    }
}

fn alias(schemes: &[SchemeSettings], settings: &crate::settings::Alias) -> Option<Alias> {
    let [a, b] = settings.schemes.as_slice() else {
        return None;
    };
    let find = |n: &String| schemes.iter().position(|s| s.name == *n);
    let (ia, ib) = (find(a)?, find(b)?);
    let key = |s: usize, k: &str| schemes[s].owner_keys().position(|x| x == k);
    let rule = match settings.rule.as_deref() {
        None => None,
        Some("helm-controller") => Some(HelmController {
            helm_release: (key(ia, flux_helm::NAME)?, key(ia, flux_helm::NAMESPACE)?),
            release: (
                key(ib, flux_helm::RELEASE_NAME)?,
                key(ib, flux_helm::RELEASE_NAMESPACE)?,
            ),
        }),
        Some(_) => return None,
    };
    let pairs = match (&settings.keys, rule) {
        (Some(keys), None) => (keys.iter())
            .map(|(ka, kb)| Some((key(ia, ka)?, key(ib, kb)?)))
            .collect::<Option<Vec<_>>>()?,
        (None, Some(_)) => Vec::new(),
        _ => return None,
    };
    Some(Alias {
        schemes: (ia, ib),
        pairs,
        rule,
    })
}

impl HelmController {
    /// Whether the HelmRelease `a` installs the release `b` (owner values of the two schemes).
    fn decide(
        &self,
        cluster: &dyn Cluster,
        a: &[Option<String>],
        b: &[Option<String>],
        unchanged: bool,
    ) -> Result<bool, String> {
        let at = |v: &[Option<String>], i: usize| v.get(i).cloned().flatten();
        let (Some(hr_name), Some(hr_ns), Some(name), Some(ns)) = (
            at(a, self.helm_release.0),
            at(a, self.helm_release.1),
            at(b, self.release.0),
            at(b, self.release.1),
        ) else {
            return Ok(false);
        };
        let helm_release = flux_helm::Named {
            name: &hr_name,
            namespace: &hr_ns,
        };
        let release = flux_helm::Named {
            name: &name,
            namespace: &ns,
        };
        if flux_helm::by_name(helm_release, release) || unchanged {
            return Ok(true);
        }
        let (found_name, found_ns) = flux_helm::release_of(cluster, helm_release)?;
        Ok(found_name == name && found_ns == ns)
    }
}

/// What one request decided of the aliases by a tool's rule: for each pair of owners (their
/// values), whether they are one owner.
#[derive(Debug, Default)]
pub struct Related {
    pairs: Vec<(OwnedValues, OwnedValues, bool)>,
}

/// An owner's values, owned (see `Owner::strings`).
type OwnedValues = Vec<Option<String>>;

impl Related {
    /// What was decided of owners `a` and `b` (of the alias's first scheme, then its second).
    fn decided(&self, a: &Owner, b: &Owner) -> Option<bool> {
        let same = |x: &[Option<String>], o: &Owner| {
            x.len() == o.len() && x.iter().zip(o.values()).all(|(x, v)| x.as_deref() == v)
        };
        (self.pairs.iter())
            .find(|(x, y, _)| same(x, a) && same(y, b))
            .map(|(.., one)| *one)
    }
}

/// The values of one scheme's owner keys, in key order; `None` where a key is absent.
#[derive(Debug, Clone)]
enum Values<'m> {
    /// As read off an object.
    Read(&'m [Option<Str<'m>>]),
    /// As named by a handover annotation.
    Named(Vec<Option<&'m str>>),
}

/// An owner under one scheme: the values of its owner keys on one object (or as a handover
/// annotation names them), which of them name an Argo CD Application in part, and which only
/// qualify the owner (Argo CD's installation id).
#[derive(Debug, Clone)]
pub struct Owner<'m> {
    values: Values<'m>,
    applications: u64,
    qualifiers: u64,
}

impl Owner<'_> {
    fn len(&self) -> usize {
        match &self.values {
            Values::Read(values) => values.len(),
            Values::Named(values) => values.len(),
        }
    }

    /// The value of the `i`th owner key (labels, then annotations), whole.
    pub fn get(&self, i: usize) -> Option<&str> {
        match &self.values {
            Values::Read(values) => values.get(i)?.as_deref(),
            Values::Named(values) => *values.get(i)?,
        }
    }

    /// The part of the `i`th key's value that names the owner: the value, or of an Argo CD
    /// tracking id its Application.
    pub fn key(&self, i: usize) -> Option<&str> {
        let value = self.get(i)?;
        if i < 64 && self.applications & (1 << i) != 0 {
            Some(argocd::application(value))
        } else {
            Some(value)
        }
    }

    pub fn values(&self) -> impl Iterator<Item = Option<&str>> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The values, owned (for `Related`).
    fn strings(&self) -> OwnedValues {
        self.values().map(|v| v.map(str::to_string)).collect()
    }

    /// Whether the `i`th key only qualifies the owner the others name.
    fn qualifies(&self, i: usize) -> bool {
        i < 64 && self.qualifiers & (1 << i) != 0
    }

    /// An object has an owner when at least one owner key is present (even with ""), a key
    /// that only qualifies the owner aside.
    pub fn is_some(&self) -> bool {
        (0..self.len()).any(|i| !self.qualifies(i) && self.get(i).is_some())
    }
}

/// Two owners are one when every key's owner part is absent on both or equal on both; a key
/// that only qualifies the owner may also be absent on one of them (Argo CD writes its
/// installation id once `installationID` is configured, and drops it once it is not: the
/// Application keeps the object), but never differ.
impl PartialEq for Owner<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && (0..self.len()).all(|i| match (self.key(i), other.key(i)) {
                (a, b) if a == b => true,
                (None, _) | (_, None) => self.qualifies(i),
                _ => false,
            })
    }
}

impl Eq for Owner<'_> {}

/// An owner under a scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned<'m> {
    pub scheme: usize,
    pub owner: Owner<'m>,
}

impl<'m> Owned<'m> {
    fn pair(&self) -> (usize, &Owner<'m>) {
        (self.scheme, &self.owner)
    }
}

/// An object's controller ownerReference, as read (`Marks::controller`): the owner Kubernetes'
/// garbage collector follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference<'m> {
    pub api_version: &'m str,
    pub kind: &'m str,
    pub name: &'m str,
}

/// What the rules read off one object: the values of every key the schemes name, by slot.
/// Only these strings are decoded, as the object's metadata is read (`Payload::metadata`).
#[derive(Debug, Clone, Copy)]
pub struct Marks<'m> {
    pub values: &'m [Option<Str<'m>>],
}

impl<'m> Marks<'m> {
    fn at(&self, slot: usize) -> Option<&'m str> {
        self.values.get(slot)?.as_deref()
    }

    /// The owner under `scheme` (possibly absent: see `Owner::is_some`).
    pub fn owner(&self, scheme: &Scheme) -> Owner<'m> {
        let end = scheme.first + scheme.keys.len();
        scheme.owner(Values::Read(
            self.values.get(scheme.first..end).unwrap_or_default(),
        ))
    }

    pub fn kind(&self, scheme: &Scheme) -> Option<&'m str> {
        self.at(scheme.kind_slot())
    }

    pub fn namespace(&self, scheme: &Scheme) -> Option<&'m str> {
        self.at(scheme.kind_slot() - KIND + NAMESPACE)
    }

    pub fn revision(&self, scheme: &Scheme) -> Option<&'m str> {
        self.at(scheme.kind_slot() - KIND + REVISION)
    }

    /// The handover annotation's value, if present.
    pub fn successor(&self, schemes: &Schemes) -> Option<&'m str> {
        self.at(schemes.successor)
    }

    /// The object's controller ownerReference, where a rule reads it (`Schemes::controlled`).
    pub fn controller(&self, schemes: &Schemes) -> Option<Reference<'m>> {
        let first = schemes.controller_slot?;
        Some(Reference {
            api_version: self.at(first).unwrap_or(""),
            kind: self.at(first + 1).unwrap_or(""),
            name: self.at(first + 2)?,
        })
    }

    /// The owners the object carries, one per scheme where it has one, in scheme order.
    pub fn owners(&self, schemes: &Schemes) -> Vec<Owned<'m>> {
        (schemes.list.iter().enumerate())
            .map(|(scheme, s)| Owned {
                scheme,
                owner: self.owner(s),
            })
            .filter(|o| o.owner.is_some())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemes(json: &str) -> Schemes {
        let settings = Settings::from_json(json.as_bytes()).unwrap();
        settings.validate().unwrap();
        Schemes::new(&settings)
    }

    const TOOLS: &str = r#"{"schemes":[
        {"name":"flux-helm","ownerLabels":["helm.toolkit.fluxcd.io/name","helm.toolkit.fluxcd.io/namespace"]},
        {"name":"helm","ownerAnnotations":["meta.helm.sh/release-name","meta.helm.sh/release-namespace"]},
        {"name":"argocd","ownerAnnotations":["argocd.argoproj.io/tracking-id"]}],
        "aliases":[{"schemes":["helm","flux-helm"],"keys":{"meta.helm.sh/release-name":"helm.toolkit.fluxcd.io/name"}}],
        "handoverAnnotation":"single-owner.kubewarden.io/handover-to"}"#;

    fn named<'a>(scheme: usize, values: &[Option<&'a str>]) -> Owned<'a> {
        Owned {
            scheme,
            owner: Owner {
                values: Values::Named(values.to_vec()),
                applications: 0,
                qualifiers: 0,
            },
        }
    }

    #[test]
    fn the_one_tool_form_reads_the_slots_it_always_read() {
        let s = schemes("{}");
        assert_eq!(s.slots(), 2 + 4);
        assert!(!s.several());
        assert_eq!(
            s.label_keys,
            [
                ("olm.operatorframework.io/owner-kind".to_string(), 0),
                ("olm.operatorframework.io/owner-name".to_string(), 1),
                ("olm.operatorframework.io/owner-kind".to_string(), 2),
            ]
        );
        assert_eq!(
            s.annotation_keys,
            [("olm.operatorframework.io/revision".to_string(), 4)]
        );
    }

    #[test]
    fn aliased_owners_are_one_where_their_paired_keys_agree() {
        let s = schemes(TOOLS);
        let flux = named(0, &[Some("podinfo"), Some("flux-system")]);
        let helm = named(1, &[Some("podinfo"), Some("apps")]);
        let other = named(1, &[Some("other"), Some("apps")]);
        let argo = named(2, &[Some("podinfo:apps/Deployment:apps/podinfo")]);
        let r = Related::default();
        assert!(s.one_owner(&r, &[flux.clone(), helm.clone()]));
        assert!(!s.one_owner(&r, &[flux.clone(), other]));
        assert!(!s.one_owner(&r, &[helm.clone(), argo.clone()]));
        assert!(!s.one_owner(&r, &[flux, helm, argo]));
    }

    #[test]
    fn a_successor_is_named_in_one_tools_keys() {
        let s = schemes(TOOLS);
        let argo = s
            .parse_successor("argocd.argoproj.io/tracking-id=shop:/ConfigMap:shop/x")
            .unwrap();
        assert_eq!(argo, named(2, &[Some("shop:/ConfigMap:shop/x")]));
        let e = s
            .parse_successor("meta.helm.sh/release-name=a,argocd.argoproj.io/tracking-id=b")
            .unwrap_err();
        assert!(e.contains("another tool than \"helm\""), "{e}");
        let e = s.parse_successor("app=x").unwrap_err();
        assert!(e.contains("not one of the owner keys"), "{e}");
    }
}
