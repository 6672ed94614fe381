//! OLM v0: the ClusterServiceVersion an object moves to when its operator is upgraded.
//!
//! OLM labels what a ClusterServiceVersion owns with `olm.owner` (the CSV's name),
//! `olm.owner.namespace` and `olm.owner.kind` (operator-framework/operator-lifecycle-manager
//! `pkg/lib/ownerutil/util.go`, `AddOwnerLabels`). When CSV B replaces A, OLM rewrites those
//! labels to B on what A owned: the operator's Deployments (`pkg/controller/install/
//! deployment.go`), APIServices and the auth-delegator ClusterRoleBinding (`install/
//! apiservice.go`, after `ownerutil.AdoptableLabels` with B, B's `spec.replaces` and A), and
//! ClusterRoles and ClusterRoleBindings a bundle ships under the same name, of which only
//! `olm.owner` is set (`pkg/controller/operators/catalog/step_ensurer.go`). B names A in
//! `spec.replaces`: the resolver sets it to the installed CSV whatever edge the catalog took
//! (`replaces`, `skips` or `olm.skipRange`; `pkg/controller/registry/resolver/steps.go`), and
//! OLM creates B before any of these writes (the InstallPlan's CSV steps come first). While A
//! is still replacing, C may replace B and take A's objects in turn: the chain is followed,
//! through the CSVs still present, a few steps.
//!
//! So an object may move from CSV A to CSV B, in the same namespace, when B's replacement
//! chain holds A; to no other CSV. A ClusterRole of the bundle, labelled with `olm.owner`
//! alone, names no namespace: then B is found by name across the cluster (its copies in
//! target namespaces, labelled `olm.copiedFrom`, left out).

use crate::tools::cluster::{Cluster, Failure, Get, List, described, fields, items, missed};

pub const OWNER: &str = "olm.owner";
pub const OWNER_NAMESPACE: &str = "olm.owner.namespace";
pub const OWNER_KIND: &str = "olm.owner.kind";

pub const API_VERSION: &str = "operators.coreos.com/v1alpha1";
pub const KIND: &str = "ClusterServiceVersion";

/// How many CSVs a chain is followed through: OLM lets at most a few replace one another
/// before the oldest is gone.
const MAX_STEPS: usize = 8;

/// An owner under OLM v0's keys, as an object carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Csv<'a> {
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub kind: Option<&'a str>,
}

/// What following the chain found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chain {
    /// The new owner's chain holds the old one: an upgrade.
    Holds,
    /// It does not: the CSVs followed, each with the CSV it replaces (or why the chain ends).
    Without(String),
}

/// Whether `from` to `to` may be an upgrade at all: two CSVs (the kind unset on both, as on a
/// bundle's ClusterRole), of different names, in one namespace (or none named).
pub fn is_candidate(from: Csv, to: Csv) -> bool {
    let csv = |c: &Csv| c.kind.is_none_or(|k| k == KIND);
    csv(&from)
        && csv(&to)
        && from.kind == to.kind
        && from.namespace == to.namespace
        && from.name.is_some_and(|n| !n.is_empty())
        && to.name.is_some_and(|n| !n.is_empty())
        && from.name != to.name
}

/// Whether CSV `to`'s replacement chain holds `from` (a candidate), looked up.
pub fn replaces(cluster: &dyn Cluster, from: Csv, to: Csv) -> Result<Chain, String> {
    let (Some(old), Some(new)) = (from.name, to.name) else {
        return Ok(Chain::Without("no CSV is named".into()));
    };
    let starts: Vec<(String, Option<String>)> = match to.namespace {
        Some(namespace) => {
            let get = Get {
                api_version: API_VERSION,
                kind: KIND,
                name: new,
                namespace: Some(namespace),
            };
            let found = match cluster.get(&get) {
                Ok(found) => found,
                // No such CSV: none replaces the owner (an answer, not a failure to check).
                Err(e) if Failure::of(&e) == Failure::NotFound => {
                    return Ok(Chain::Without(missed(&get, &e)));
                }
                Err(e) => return Err(missed(&get, &e)),
            };
            let read = fields(&found, &[REPLACES])
                .map_err(|e| format!("{} cannot be read: {e}", described(&get)))?;
            vec![(namespace.to_string(), replaces_of(read))]
        }
        None => {
            let field = format!("metadata.name={new}");
            let list = List {
                api_version: API_VERSION,
                kind: KIND,
                label_selector: Some("!olm.copiedFrom"),
                field_selector: Some(&field),
            };
            let found = cluster.list(&list).map_err(|e| {
                format!("the lookup of the {KIND}s named {new:?} (not copies) failed: {e}")
            })?;
            let list = items(&found, &[REPLACES, &["metadata", "namespace"]])
                .map_err(|e| format!("the list of {KIND}s named {new:?} cannot be read: {e}"))?;
            let starts: Vec<_> = (list.into_iter())
                .filter_map(|mut csv| {
                    let namespace = csv.pop().flatten()?;
                    Some((namespace, replaces_of(csv)))
                })
                .collect();
            if starts.is_empty() {
                return Ok(Chain::Without(format!(
                    "no {KIND} {new:?} exists (copies aside)"
                )));
            }
            starts
        }
    };
    let mut walked = Vec::new();
    for (namespace, mut replaced) in starts {
        let mut at = new.to_string();
        for _ in 0..MAX_STEPS {
            let Some(previous) = replaced.take() else {
                walked.push(format!("{at} replaces none"));
                break;
            };
            if previous == old {
                return Ok(Chain::Holds);
            }
            walked.push(format!("{at} replaces {previous}"));
            let get = Get {
                api_version: API_VERSION,
                kind: KIND,
                name: &previous,
                namespace: Some(&namespace),
            };
            match cluster.get(&get).map(|b| fields(&b, &[REPLACES])) {
                Ok(Ok(read)) => replaced = replaces_of(read),
                Ok(Err(e)) => {
                    walked.push(format!("{} cannot be read: {e}", described(&get)));
                    break;
                }
                Err(e) if Failure::of(&e) == Failure::NotFound => {
                    walked.push(missed(&get, &e));
                    break;
                }
                Err(e) => {
                    walked.push(format!("{previous} cannot be looked up: {e}"));
                    break;
                }
            }
            at = previous;
        }
    }
    Ok(Chain::Without(walked.join(", ")))
}

/// Where a CSV names the CSV it replaces.
const REPLACES: &[&str] = &["spec", "replaces"];

/// The CSV a CSV replaces, of its `fields` (`REPLACES` first).
fn replaces_of(read: Vec<Option<String>>) -> Option<String> {
    read.into_iter().next().flatten().filter(|r| !r.is_empty())
}
