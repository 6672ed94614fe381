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

use crate::json::Str;
use crate::request::Wanted;
use crate::settings::{Scheme as SchemeSettings, Settings};

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
}

/// Two schemes whose keys name one owner (`settings::Alias`), by scheme and key index.
#[derive(Debug)]
struct Alias {
    schemes: (usize, usize),
    pairs: Vec<(usize, usize)>,
}

/// The schemes of a policy, worked out.
#[derive(Debug)]
pub struct Schemes {
    pub list: Vec<Scheme>,
    aliases: Vec<Alias>,
    pub handover_annotation: String,
    /// The slot of the handover annotation's value.
    successor: usize,
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
            let scheme = Scheme {
                name: s.name.clone(),
                keys: s.owner_keys().cloned().collect(),
                labels: s.owner_labels.len(),
                kind_label: s.owner_kind_label.clone(),
                namespace_label: s.owner_namespace_label.clone(),
                revision_annotation: s.revision_annotation.clone(),
                cluster_scoped_owner_kinds: s.cluster_scoped_owner_kinds.clone(),
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
        if !settings.handover_annotation.is_empty() {
            annotation_keys.push((settings.handover_annotation.clone(), successor));
        }
        let aliases = (settings.aliases.iter())
            .filter_map(|a| alias(&configured, a.schemes.as_slice(), a.keys.as_ref()?))
            .collect();
        Schemes {
            list,
            aliases,
            handover_annotation: settings.handover_annotation.clone(),
            successor,
            label_keys,
            annotation_keys,
        }
    }

    /// The keys the reader decodes, with their slots.
    pub fn wanted(&self) -> Wanted<'_> {
        Wanted {
            labels: &self.label_keys,
            annotations: &self.annotation_keys,
        }
    }

    /// How many values the rules read off one object.
    pub fn slots(&self) -> usize {
        self.successor + 1
    }

    /// Whether the policy knows several tools (else messages name none, and the rules across
    /// tools have nothing to compare).
    pub fn several(&self) -> bool {
        self.list.len() > 1
    }

    /// Whether `a` of scheme `sa` and `b` of scheme `sb` are one owner.
    pub fn same_owner(&self, (sa, a): (usize, &Owner), (sb, b): (usize, &Owner)) -> bool {
        if sa == sb {
            return a == b;
        }
        let alias = self
            .aliases
            .iter()
            .find(|x| x.schemes == (sa, sb) || x.schemes == (sb, sa));
        alias.is_some_and(|x| {
            let flip = x.schemes.0 != sa;
            x.pairs.iter().all(|&(i, j)| {
                let (i, j) = if flip { (j, i) } else { (i, j) };
                a.get(i) == b.get(j)
            })
        })
    }

    /// Whether all of `owners` are one owner.
    pub fn one_owner(&self, owners: &[Owned]) -> bool {
        owners
            .iter()
            .enumerate()
            .all(|(n, a)| (owners.iter().skip(n + 1)).all(|b| self.same_owner(a.pair(), b.pair())))
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
                owner: Owner::Named(values),
            }),
            None => Err("it names no owner key".into()),
        }
    }
}

fn alias(
    schemes: &[SchemeSettings],
    names: &[String],
    keys: &crate::settings::OwnerValues,
) -> Option<Alias> {
    let [a, b] = names else { return None };
    let find = |n: &String| schemes.iter().position(|s| s.name == *n);
    let (ia, ib) = (find(a)?, find(b)?);
    let key = |s: usize, k: &String| schemes[s].owner_keys().position(|x| x == k);
    let pairs = (keys.iter())
        .map(|(ka, kb)| Some((key(ia, ka)?, key(ib, kb)?)))
        .collect::<Option<Vec<_>>>()?;
    Some(Alias {
        schemes: (ia, ib),
        pairs,
    })
}

/// The values of one scheme's owner keys on one object, in key order; `None` where a key is
/// absent.
#[derive(Debug, Clone)]
pub enum Owner<'m> {
    /// As read off an object.
    Read(&'m [Option<Str<'m>>]),
    /// As named by a handover annotation.
    Named(Vec<Option<&'m str>>),
}

impl Owner<'_> {
    fn len(&self) -> usize {
        match self {
            Owner::Read(values) => values.len(),
            Owner::Named(values) => values.len(),
        }
    }

    /// The value of the `i`th owner key (labels, then annotations).
    pub fn get(&self, i: usize) -> Option<&str> {
        match self {
            Owner::Read(values) => values.get(i)?.as_deref(),
            Owner::Named(values) => *values.get(i)?,
        }
    }

    pub fn values(&self) -> impl Iterator<Item = Option<&str>> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// An object has an owner when at least one owner key is present (even with "").
    pub fn is_some(&self) -> bool {
        self.values().any(|v| v.is_some())
    }
}

impl PartialEq for Owner<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.values().eq(other.values())
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
        Owner::Read(self.values.get(scheme.first..end).unwrap_or_default())
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
            owner: Owner::Named(values.to_vec()),
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
        assert!(s.one_owner(&[flux.clone(), helm.clone()]));
        assert!(!s.one_owner(&[flux.clone(), other]));
        assert!(!s.one_owner(&[helm.clone(), argo.clone()]));
        assert!(!s.one_owner(&[flux, helm, argo]));
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
