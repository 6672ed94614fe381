//! What the rules look up in the cluster: Kubewarden's `kubernetes` host capability.
//!
//! Some of the tools' own rules need what the object written does not carry: the replacement
//! chain of an OLM v0 ClusterServiceVersion, the release a Flux HelmRelease names, the
//! installer a ClusterExtension names. A context-aware policy asks the host for those objects
//! (`get_resource`, `list_resources_all`); policy-server reads them through the API server
//! (caching what it found for 5 seconds), `kwctl run --replay-host-capabilities-interactions`
//! from a recorded session. The host answers only for the kinds the policy was granted
//! (`contextAwareResources` in `metadata.yml` and in the ClusterAdmissionPolicy).
//!
//! Lookups are off the hot path: a rule makes one only where the object alone cannot decide,
//! and a lookup that fails is the rule's refusal, with the host's words (never a 500, never a
//! silent accept). Of the objects found only the strings a rule reads are decoded (`fields`),
//! with the policy's own reader, which skips everything else by its structure.

use std::cell::RefCell;

use crate::reading::json::{Reader, write_string};

/// One object to look up: an `apiVersion` and `kind` the policy was granted, a name, and a
/// namespace unless the kind is cluster-scoped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Get<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
}

/// Objects of one kind across the cluster, chosen by selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub label_selector: Option<&'a str>,
    pub field_selector: Option<&'a str>,
}

/// The cluster, as the rules see it. `Err` carries the host's message (an object not found
/// is an error too: the host has no other way to say it).
pub trait Cluster {
    /// The object's JSON.
    fn get(&self, what: &Get) -> Result<Vec<u8>, String>;
    /// A list's JSON (`{"items": [...]}`).
    fn list(&self, what: &List) -> Result<Vec<u8>, String>;
}

/// The host's `kubernetes` capability, through waPC.
pub struct Host;

impl Host {
    fn call(operation: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        wapc_guest::host_call("kubewarden", "kubernetes", operation, payload)
            .map_err(|e| host_error(operation, &e.to_string()))
    }
}

/// The host's error as a message for users: policy-server and kwctl format the callback
/// handler's error with `{:?}`, which under `RUST_BACKTRACE=1` carries the host's stack
/// backtrace (twenty lines of its frames), cut off here.
fn host_error(operation: &str, message: &str) -> String {
    let message = match message.find("\n\nStack backtrace:") {
        Some(at) => message.get(..at).unwrap_or(message),
        None => message,
    };
    match message.trim_end() {
        "" => format!("the host answered {operation} with an error"),
        m => m.to_string(),
    }
}

/// What a failed lookup means, read from the host's words (policy-evaluator in kwctl and
/// policy-server 1.31 to 1.36, and policy-host, which answers in them), so that a refusal
/// says what to do: each cause has another fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The policy server does not let the policy call the capability at all (Kubewarden
    /// 1.36's `hostCapabilities`).
    Capability,
    /// The kind is not among the policy's `contextAwareResources`.
    Kind,
    /// The object does not exist (`Cannot find <apiVersion>/<kind> named '<name>' ...`).
    NotFound,
    /// Anything else: the API server's refusal (the policy server's RBAC), no cluster, ...
    Other,
}

impl Failure {
    pub fn of(message: &str) -> Failure {
        if message.contains("has not been granted access to the '") {
            Failure::Capability
        } else if message.contains("has not been granted access to Kubernetes ") {
            Failure::Kind
        } else if (message.contains("Cannot find ") && message.contains(" named '"))
            || message.ends_with(ABSENT)
        {
            Failure::NotFound
        } else {
            Failure::Other
        }
    }

    /// What to grant so that the lookup can be made (for a missing object: nothing to grant).
    pub fn remedy(self) -> &'static str {
        match self {
            Failure::Capability => {
                "Grant the policy the host capabilities kubernetes/get_resource and \
                 kubernetes/list_resources_all: policy-server 1.36 lets a policy call only \
                 those its policies.yml entry lists in hostCapabilities; kubewarden-controller \
                 1.36 grants a ClusterAdmissionPolicy all of them, and an AdmissionPolicy those \
                 its PolicyServer's spec.namespacedPoliciesCapabilities lists."
            }
            Failure::Kind => {
                "List the kind in the policy's contextAwareResources (the \
                 ClusterAdmissionPolicy's spec, as in deploy/)."
            }
            Failure::NotFound => {
                "Nothing is to grant: the object does not exist. If it is being created, \
                 retry once it exists."
            }
            Failure::Other => {
                "Let the policy server read the kind (get and list for its service account: \
                 deploy/rbac/lookups.yaml), or retry once the API server answers."
            }
        }
    }
}

/// `"key":` then a JSON string or `null`.
fn field(out: &mut Vec<u8>, key: &str, value: Option<&str>) {
    out.push(if out.is_empty() { b'{' } else { b',' });
    write_string(out, key);
    out.push(b':');
    match value {
        Some(v) => write_string(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

impl Cluster for Host {
    /// The SDK's `GetResourceRequest`, without `field_masks`: kwctl and policy-server 1.31 do
    /// not know them, and a session recorded without masks replays only requests without
    /// them. The host's cache (5 seconds in policy-server) is wanted: a tool writes many
    /// objects of one owner in a burst, and each of them asks the same question.
    fn get(&self, what: &Get) -> Result<Vec<u8>, String> {
        let mut payload = Vec::with_capacity(160);
        field(&mut payload, "api_version", Some(what.api_version));
        field(&mut payload, "kind", Some(what.kind));
        field(&mut payload, "name", Some(what.name));
        field(&mut payload, "namespace", what.namespace);
        payload.extend_from_slice(br#","disable_cache":false}"#);
        Host::call("get_resource", &payload)
    }

    /// The SDK's `ListAllResourcesRequest`, without masks.
    fn list(&self, what: &List) -> Result<Vec<u8>, String> {
        let mut payload = Vec::with_capacity(160);
        field(&mut payload, "api_version", Some(what.api_version));
        field(&mut payload, "kind", Some(what.kind));
        field(&mut payload, "label_selector", what.label_selector);
        field(&mut payload, "field_selector", what.field_selector);
        payload.push(b'}');
        Host::call("list_resources_all", &payload)
    }
}

/// A cluster that holds nothing: every lookup fails, saying why. What `admission::judge`
/// uses natively, where there is no host.
pub struct Nowhere;

impl Cluster for Nowhere {
    fn get(&self, what: &Get) -> Result<Vec<u8>, String> {
        Err(format!(
            "no cluster to look up {} {:?} in",
            what.kind, what.name
        ))
    }

    fn list(&self, what: &List) -> Result<Vec<u8>, String> {
        Err(format!("no cluster to list {} in", what.kind))
    }
}

/// A lookup remembered: kind, name, namespace, and the answer.
type Answered = (String, String, Option<String>, Result<Vec<u8>, String>);

/// Remembers the answers of one request's lookups, so that a rule that asks twice (the old
/// and the new object name the same owner) costs the host one call.
pub struct Remembered<'c> {
    cluster: &'c dyn Cluster,
    gets: RefCell<Vec<Answered>>,
}

impl<'c> Remembered<'c> {
    pub fn new(cluster: &'c dyn Cluster) -> Self {
        Remembered {
            cluster,
            gets: RefCell::new(Vec::new()),
        }
    }
}

impl Cluster for Remembered<'_> {
    fn get(&self, what: &Get) -> Result<Vec<u8>, String> {
        let same = |(kind, name, namespace, _): &&Answered| {
            kind == what.kind && name == what.name && namespace.as_deref() == what.namespace
        };
        if let Some((.., answer)) = self.gets.borrow().iter().find(same) {
            return answer.clone();
        }
        let answer = self.cluster.get(what);
        self.gets.borrow_mut().push((
            what.kind.to_string(),
            what.name.to_string(),
            what.namespace.map(str::to_string),
            answer.clone(),
        ));
        answer
    }

    fn list(&self, what: &List) -> Result<Vec<u8>, String> {
        self.cluster.list(what)
    }
}

/// Where a lookup is described in messages: `ClusterServiceVersion "x" in namespace "y"`.
/// What a rule says of a lookup that did not find what it asked for: an object that does not
/// exist is an answer (`<Kind> "name" ... does not exist`, which `Failure::of` reads as
/// `NotFound`, and each rule words what it means for the write); anything else is a failure
/// to check, in the host's words.
pub fn missed(what: &Get, host: &str) -> String {
    if Failure::of(host) == Failure::NotFound {
        format!("{}{ABSENT}", described(what))
    } else {
        format!("the lookup of {} failed: {host}", described(what))
    }
}

/// How `missed` ends the words of an object that does not exist.
const ABSENT: &str = " does not exist";

pub fn described(what: &Get) -> String {
    match what.namespace {
        Some(ns) => format!(
            "{} {:?} in namespace {:?} ({})",
            what.kind, what.name, ns, what.api_version
        ),
        None => format!("{} {:?} ({})", what.kind, what.name, what.api_version),
    }
}

/// The strings at `paths` (each a list of keys from the top) of the JSON object `json`,
/// `None` where absent or `null`; everything else is skipped. An object found is read only
/// for what a rule needs, and a field of the wrong type is an error.
pub fn fields(json: &[u8], paths: &[&[&str]]) -> Result<Vec<Option<String>>, String> {
    let mut out = vec![None; paths.len()];
    let mut r = Reader::new(json);
    let all: Vec<usize> = (0..paths.len()).collect();
    read_fields(&mut r, paths, 0, &all, &mut out)
        .and_then(|()| r.end())
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// `fields` of each object of a list's `items`.
pub fn items(json: &[u8], paths: &[&[&str]]) -> Result<Vec<Vec<Option<String>>>, String> {
    let mut out = Vec::new();
    let mut r = Reader::new(json);
    let all: Vec<usize> = (0..paths.len()).collect();
    let read = r.object("the list", |r, key| {
        if key != b"items" || r.null()? {
            return r.skip_value();
        }
        r.elements("items", |r| {
            let mut one = vec![None; paths.len()];
            read_fields(r, paths, 0, &all, &mut one)?;
            out.push(one);
            Ok(())
        })
    });
    read.and_then(|()| r.end()).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Reads the object at the reader, for the `active` paths, whose first `depth` keys led here.
fn read_fields(
    r: &mut Reader,
    paths: &[&[&str]],
    depth: usize,
    active: &[usize],
    out: &mut [Option<String>],
) -> crate::reading::json::Result<()> {
    if r.null()? {
        return Ok(());
    }
    r.object("the object", |r, key| {
        let next: Vec<usize> = (active.iter().copied())
            .filter(|&i| paths[i].get(depth).is_some_and(|k| k.as_bytes() == key))
            .collect();
        let Some(&first) = next.first() else {
            return r.skip_value();
        };
        if paths[first].len() == depth + 1 {
            if !r.null()? {
                let value = r.string_value(|| paths[first].join("."))?;
                out[first] = Some(value.to_string());
            }
            return Ok(());
        }
        read_fields(r, paths, depth + 1, &next, out)
    })
}

#[cfg(test)]
mod tests {
    use super::{Failure, host_error};

    #[test]
    fn a_failed_lookup_is_told_by_the_hosts_words() {
        for (message, failure) in [
            (
                "Host error: Policy has not been granted access to the \
                 'kubernetes/get_resource' host capability. The violation has been reported.",
                Failure::Capability,
            ),
            (
                "Host error: Policy has not been granted access to Kubernetes \
                 operators.coreos.com/v1alpha1/ClusterServiceVersion resources. The violation \
                 has been reported.",
                Failure::Kind,
            ),
            (
                "Host error: Callback evaluation failure: Cannot find \
                 operators.coreos.com/v1alpha1/ClusterServiceVersion named 'x.v1' inside of \
                 namespace 'Some(\"demo\")'",
                Failure::NotFound,
            ),
            (
                "Host error: Callback evaluation failure: clusterserviceversions is forbidden",
                Failure::Other,
            ),
        ] {
            assert_eq!(Failure::of(message), failure, "{message}");
        }
    }

    #[test]
    fn the_hosts_backtrace_is_cut_from_its_error() {
        let kwctl = "Host error: Callback evaluation failure: the list of recorded responses \
                     is empty\n\nStack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n   \
                     1: kwctl::callback_handler::proxy::CallbackHandlerProxy::produce_recorded_response";
        assert_eq!(
            host_error("get_resource", kwctl),
            "Host error: Callback evaluation failure: the list of recorded responses is empty"
        );
        assert_eq!(host_error("get_resource", "Host error: x"), "Host error: x");
        assert_eq!(
            host_error("get_resource", ""),
            "the host answered get_resource with an error"
        );
    }
}
