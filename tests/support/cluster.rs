//! A cluster for the tests: the objects the policy may look up, and every lookup it made.
// Each test crate that includes it uses a part.
#![allow(dead_code)]

use std::cell::RefCell;

use single_owner_policy::tools::cluster::{Cluster, Get, List};

/// Objects by (kind, name, namespace), lists by their field selector; `Err` answers for the
/// lookups named in `failing`.
#[derive(Default)]
pub struct Fake {
    objects: Vec<(String, String, Option<String>, String)>,
    lists: Vec<(String, String)>,
    failing: Vec<String>,
    /// Each lookup made: `kind name` or `list kind selector`.
    pub asked: RefCell<Vec<String>>,
}

impl Fake {
    pub fn with(
        mut self,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
        json: serde_json::Value,
    ) -> Self {
        let ns = namespace.map(str::to_string);
        self.objects
            .push((kind.into(), name.into(), ns, json.to_string()));
        self
    }

    pub fn listing(mut self, field_selector: &str, json: serde_json::Value) -> Self {
        self.lists.push((field_selector.into(), json.to_string()));
        self
    }

    /// Lookups of `name` fail with a host error.
    pub fn failing(mut self, name: &str) -> Self {
        self.failing.push(name.into());
        self
    }

    pub fn asked(&self) -> Vec<String> {
        self.asked.borrow().clone()
    }
}

impl Cluster for Fake {
    fn get(&self, what: &Get) -> Result<Vec<u8>, String> {
        self.asked
            .borrow_mut()
            .push(format!("{} {}", what.kind, what.name));
        if self.failing.iter().any(|f| f == what.name) {
            return Err("Callback evaluation failure: connection refused".into());
        }
        (self.objects.iter())
            .find(|(k, n, ns, _)| {
                k == what.kind && n == what.name && ns.as_deref() == what.namespace
            })
            .map(|(.., json)| json.clone().into_bytes())
            .ok_or_else(|| {
                format!(
                    "Cannot find {}/{} named '{}' inside of namespace '{:?}'",
                    what.api_version, what.kind, what.name, what.namespace
                )
            })
    }

    fn list(&self, what: &List) -> Result<Vec<u8>, String> {
        let selector = what.field_selector.unwrap_or("");
        self.asked
            .borrow_mut()
            .push(format!("list {} {selector}", what.kind));
        (self.lists.iter())
            .find(|(s, _)| s == selector)
            .map(|(_, json)| json.clone().into_bytes())
            .ok_or_else(|| "no such list".into())
    }
}
