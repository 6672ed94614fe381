//! The owner markers: what the rules read off an object to tell its owner, whether a write
//! changes them, and the condition that lets the API server tell it too.
//!
//! An object's markers are the values of every key the settings read (each scheme's owner
//! keys, kind and namespace labels and revision annotation, and the handover annotation) and,
//! where a scheme's tool sets one, its controller ownerReference (`tools::controls`: OLM v1's
//! to a ClusterExtension or a ClusterObjectSet; Crossplane's to an XR of any kind, on an object
//! that carries its label; another controller names no owner the rules know). Nothing else of
//! an object names its owner.
//!
//! The rules judge ownership changes: an UPDATE that leaves every marker as stored cannot
//! change the owner, so it is accepted as its object was judged when the markers were written,
//! and an object that broke a rule before the policy was installed may still be written
//! (Kubernetes ratchets existing invalid values the same way: KEP-4008). Only the identity
//! rules, which judge who writes and not what, see every write of an owned object.
//!
//! Since that answer is known before the module is asked, the API server need not ask:
//! `condition` writes the webhook's CEL matchCondition from the same keys, true for the writes
//! the module judges (a CREATE that carries a marker, an UPDATE that changes one, and with
//! bindings any write of an object with a marker). An ordinary write of an owned object is
//! then decided inside the API server, and goes through while the policy server is down.
//! The CEL uses only what Kubernetes 1.30's CEL environment has (`has`, `in`, `exists`,
//! `filter`, the conditional and comparisons), and reads no list whose length the request sets
//! but the object's ownerReferences.

use crate::owners::{Marks, Scheme, Schemes};
use crate::settings::Settings;
use crate::tools::olm_v1;

/// Whether the UPDATE from `old` to `new` changes a marker: the one test of what the rules
/// judge, which `condition` writes in CEL.
pub fn changed(schemes: &Schemes, old: &Marks, new: &Marks) -> bool {
    let keys = schemes.key_slots();
    old.values.get(..keys) != new.values.get(..keys)
        || schemes.tools_controller(old) != schemes.tools_controller(new)
}

/// One of a webhook's matchConditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchCondition {
    pub name: &'static str,
    pub expression: String,
}

/// The name of the condition of a policy without bindings.
pub const OWNERSHIP_CHANGE: &str = "ownership-change";
/// The name of the condition of a policy with bindings.
pub const OWNED_OBJECT: &str = "owned-object";

/// Which writes the module judges with a policy's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// A CREATE that carries a marker, an UPDATE that changes one (`OWNERSHIP_CHANGE`).
    OwnershipChanges,
    /// With bindings: every write of an object that carries a marker before or after
    /// (`OWNED_OBJECT`), since who writes is judged on every write.
    OwnedObjects,
    /// The stamping policy stamps objects that carry no marker yet: every write.
    Everything,
}

impl Judged {
    pub fn of(settings: &Settings) -> Judged {
        if settings.stamp {
            Judged::Everything
        } else if settings.has_bindings() {
            Judged::OwnedObjects
        } else {
            Judged::OwnershipChanges
        }
    }
}

/// The matchCondition that sends the API server's writes to the policy exactly where the
/// module judges them (valid settings; `None` for the stamping policy, which needs every
/// write). A write it leaves out, the module would accept without judging it.
pub fn condition(settings: &Settings) -> Option<MatchCondition> {
    let schemes = Schemes::new(settings);
    let markers = Cel::new(&schemes);
    match Judged::of(settings) {
        Judged::Everything => None,
        // Who writes a subresource is not judged (`writers`): there, as without bindings.
        Judged::OwnedObjects => Some(MatchCondition {
            name: OWNED_OBJECT,
            expression: format!(
                "has(request.subResource) && request.subResource != '' ?\n  ({}) :\n\
                 object != null && ({}) ||\noldObject != null && ({})",
                ownership_change(&markers),
                markers.carried("object"),
                markers.carried("oldObject"),
            ),
        }),
        Judged::OwnershipChanges => Some(MatchCondition {
            name: OWNERSHIP_CHANGE,
            expression: ownership_change(&markers),
        }),
    }
}

/// True for a CREATE that carries a marker, an UPDATE that changes one, and any other
/// operation (the module accepts those it does not judge).
fn ownership_change(markers: &Cel) -> String {
    format!(
        "request.operation == 'CREATE' ?\n  {} :\nrequest.operation != 'UPDATE' ||\n  {}",
        markers.carried("object"),
        markers.changed(),
    )
}

/// The markers of a policy, in CEL.
struct Cel {
    labels: String,
    annotations: String,
    /// The controller references that are markers, one per controlled scheme: the predicate
    /// over `r`, and where the reference is a marker only on an object that carries the
    /// scheme's keys (Crossplane's), whether the object or the stored one does.
    controllers: Vec<(String, Option<String>)>,
}

impl Cel {
    fn new(schemes: &Schemes) -> Cel {
        let list = |keys: &[(String, usize)]| {
            let mut names: Vec<&str> = Vec::new();
            for (key, _) in keys {
                if !names.contains(&key.as_str()) {
                    names.push(key.as_str());
                }
            }
            let quoted: Vec<String> = names.iter().map(|k| quote(k)).collect();
            quoted.join(", ")
        };
        Cel {
            labels: list(&schemes.label_keys),
            annotations: list(&schemes.annotation_keys),
            controllers: (schemes.controlled.iter())
                .map(|&s| controller(&schemes.list[s]))
                .collect(),
        }
    }

    fn fields(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [("labels", &self.labels), ("annotations", &self.annotations)]
            .into_iter()
            .filter(|(_, keys)| !keys.is_empty())
            .map(|(field, keys)| (field, keys.as_str()))
    }

    /// Whether `x` (`object` or `oldObject`) carries a marker.
    fn carried(&self, x: &str) -> String {
        let mut any: Vec<String> = (self.fields())
            .map(|(field, keys)| {
                format!(
                    "(has({x}.metadata.{field}) && [{keys}].exists(k, k in {x}.metadata.{field}))"
                )
            })
            .collect();
        for (controller, _) in self.controllers.iter().filter(|(_, on)| on.is_none()) {
            any.push(format!(
                "(has({x}.metadata.ownerReferences) && \
                 {x}.metadata.ownerReferences.exists(r, {controller}))"
            ));
        }
        match any.is_empty() {
            true => "false".into(),
            false => any.join(" ||\n  "),
        }
    }

    /// Whether the UPDATE changes a marker: a key present on one object only, or with two
    /// values; the controller references that are markers, compared whole. Each is looked for
    /// only where the map or list that holds it changed at all: an ordinary write changes none
    /// of them, and then costs three comparisons.
    fn changed(&self) -> String {
        let whole = |field: &str, empty: &str| {
            format!(
                "(has(object.metadata.{field}) ? object.metadata.{field} : {empty}) !=\n    \
                 (has(oldObject.metadata.{field}) ? oldObject.metadata.{field} : {empty})"
            )
        };
        let mut any: Vec<String> = (self.fields())
            .map(|(field, keys)| {
                let on =
                    |x: &str| format!("has({x}.metadata.{field}) && k in {x}.metadata.{field}");
                format!(
                    "{} &&\n    [{keys}].exists(k, {new} ?\n      !({old}) || \
                     object.metadata.{field}[k] != oldObject.metadata.{field}[k] :\n      {old})",
                    whole(field, "{}"),
                    new = on("object"),
                    old = on("oldObject"),
                )
            })
            .collect();
        // The controllers that are markers, each compared where the list changed at all
        // (once for all of them); Crossplane's only where the object carries its keys.
        let differ: Vec<String> = (self.controllers.iter())
            .map(|(controller, on)| {
                let refs = |x: &str| {
                    format!(
                        "(has({x}.metadata.ownerReferences) ? \
                         {x}.metadata.ownerReferences.filter(r, {controller}) : [])"
                    )
                };
                let guard = on
                    .as_ref()
                    .map_or(String::new(), |on| format!("{on} &&\n    "));
                format!("{guard}{} !=\n    {}", refs("object"), refs("oldObject"))
            })
            .collect();
        match differ.as_slice() {
            [] => {}
            [one] => any.push(format!("{} &&\n    {one}", whole("ownerReferences", "[]"))),
            several => any.push(format!(
                "{} &&\n    ({})",
                whole("ownerReferences", "[]"),
                several.join(" ||\n    ")
            )),
        }
        match any.is_empty() {
            true => "false".into(),
            false => any.join(" ||\n  "),
        }
    }
}

/// The controller reference that is a marker under controlled scheme `scheme`, in CEL
/// (`Cel::controllers`; `tools::controls` in Rust). Crossplane's is any controller, on an object
/// that carries its keys; the predicate leaves OLM v1's kinds in, which only makes the
/// condition send a write more.
fn controller(scheme: &Scheme) -> (String, Option<String>) {
    const IS_CONTROLLER: &str = "has(r.controller) && r.controller == true";
    match scheme.tool.as_str() {
        "crossplane" => {
            let (labels, annotations) = scheme.keys.split_at(scheme.labels);
            let carries = |x: &str| {
                let mut any = Vec::new();
                for (field, keys) in [("labels", labels), ("annotations", annotations)] {
                    if keys.is_empty() {
                        continue;
                    }
                    let quoted: Vec<String> = keys.iter().map(|k| quote(k)).collect();
                    any.push(format!(
                        "has({x}.metadata.{field}) && [{}].exists(k, k in {x}.metadata.{field})",
                        quoted.join(", ")
                    ));
                }
                any.join(" || ")
            };
            (
                IS_CONTROLLER.to_string(),
                Some(format!(
                    "({} || {})",
                    carries("object"),
                    carries("oldObject")
                )),
            )
        }
        _ => (
            format!(
                "{IS_CONTROLLER} && r.apiVersion == {} && r.kind in [{}, {}]",
                quote(olm_v1::API_VERSION),
                quote(olm_v1::KIND),
                quote(olm_v1::REVISION_KIND),
            ),
            None,
        ),
    }
}

/// A CEL string literal. Keys are qualified names (`settings`), which need no escape; the
/// escapes keep any other text a literal.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' | '\'' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Two conditions' expressions are the same where they differ only in white space outside
/// string literals (YAML folds a long expression's lines into spaces).
pub fn same_expression(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: &str) -> Settings {
        let settings = Settings::from_json(json.as_bytes()).unwrap();
        settings.validate().unwrap();
        settings
    }

    #[test]
    fn the_olm_v1_defaults_read_two_labels_the_revision_and_olms_controller() {
        let c = condition(&settings(r#"{"tool":"olm-v1"}"#)).unwrap();
        assert_eq!(c.name, OWNERSHIP_CHANGE);
        let e = &c.expression;
        assert!(e.contains(
            "['olm.operatorframework.io/owner-kind', 'olm.operatorframework.io/owner-name']"
        ));
        assert!(e.contains("['olm.operatorframework.io/revision']"));
        assert!(e.contains("r.kind in ['ClusterExtension', 'ClusterObjectSet']"));
    }

    #[test]
    fn a_tool_without_controllers_reads_no_owner_references() {
        let c = condition(&settings(
            r#"{"ownerLabels":[],"ownerAnnotations":["meta.helm.sh/release-name"],"ownerKindLabel":"","revisionAnnotation":""}"#,
        ))
        .unwrap();
        assert!(!c.expression.contains("ownerReferences"));
        assert!(!c.expression.contains("labels"));
    }

    #[test]
    fn bindings_judge_every_write_of_an_owned_object_and_stamping_every_write() {
        let bound = r#"{"ownerLabels":["team"],"ownerKindLabel":"","revisionAnnotation":"",
            "bindings":[{"writers":{"users":["alice"]},"owner":{"team":"a"}}]}"#;
        let c = condition(&settings(bound)).unwrap();
        assert_eq!(c.name, OWNED_OBJECT);
        assert!(c.expression.starts_with("has(request.subResource)"));
        let stamp = bound.replacen('{', r#"{"stamp":true,"#, 1);
        assert_eq!(condition(&settings(&stamp)), None);
    }

    #[test]
    fn expressions_compare_without_white_space() {
        assert!(same_expression("a ||\n  b", "a || b"));
        assert!(!same_expression("a || b", "a && b"));
    }

    #[test]
    fn literals_are_escaped() {
        assert_eq!(quote("a'b\\c"), r"'a\'b\\c'");
    }
}
