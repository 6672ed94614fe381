//! Which host capabilities a policy may call, as Kubewarden 1.36 grants them.
//!
//! From policy-evaluator 1.36 on (`crates/policy-evaluator/src/host_capabilities.rs` of
//! kubewarden/kubewarden-controller, now kubewarden/adm-controller), every host call but
//! `tracing` is checked against the policy's allow-list before its payload is read:
//! policy-server takes the list from the policy's `hostCapabilities` in policies.yml (none when
//! absent), kwctl from `--allowed-host-capabilities` (`*` by default), and a module declares
//! what it calls in its metadata's `hostCapabilities`, which `kwctl annotate` compares with the
//! capability names it finds in the module's data. A pattern is `*`, a path of the capability
//! tree (`kubernetes/get_resource`), or a node of it followed by `/*` (`oci/*`, `oci/v1/*`);
//! anything else is refused when the list is read. Kubewarden 1.31 has no allow-list: it
//! grants every capability, and ignores the field (see docs/development.md).

use std::collections::BTreeSet;

use anyhow::{Result, bail};

/// Every host capability Kubewarden 1.36 serves, as `namespace/operation` paths.
pub const KNOWN: &[&str] = &[
    "crypto/v1/is_certificate_trusted",
    "kubernetes/can_i",
    "kubernetes/get_resource",
    "kubernetes/list_resources_all",
    "kubernetes/list_resources_by_namespace",
    "net/v1/dns_lookup_host",
    "oci/v1/manifest_digest",
    "oci/v1/oci_manifest",
    "oci/v1/oci_manifest_config",
    "oci/v1/verify",
    "oci/v2/verify",
];

/// A policy's allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCapabilities {
    /// `*`: Kubewarden 1.31's behaviour, kwctl's default, and what kubewarden-controller 1.36
    /// grants every ClusterAdmissionPolicy.
    All,
    /// The listed paths, and those under the listed prefixes (`oci/` of `oci/*`); empty denies
    /// everything, as policy-server 1.36 does for a policy without `hostCapabilities`.
    Listed {
        exact: BTreeSet<String>,
        prefixes: BTreeSet<String>,
    },
}

impl HostCapabilities {
    /// Reads an allow-list, refusing a pattern policy-evaluator 1.36 refuses.
    pub fn new<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> Result<HostCapabilities> {
        let (mut exact, mut prefixes) = (BTreeSet::new(), BTreeSet::new());
        for pattern in patterns {
            let pattern = pattern.as_ref().trim();
            if pattern == "*" {
                return Ok(HostCapabilities::All);
            }
            check(pattern)?;
            match pattern.strip_suffix('*') {
                Some(prefix) => prefixes.insert(prefix.to_string()),
                None => exact.insert(pattern.to_string()),
            };
        }
        Ok(HostCapabilities::Listed { exact, prefixes })
    }

    /// Whether a call of `namespace/operation` is granted (`tracing` always is).
    pub fn allows(&self, namespace: &str, operation: &str) -> bool {
        if namespace == "tracing" {
            return true;
        }
        let path = format!("{namespace}/{operation}");
        match self {
            HostCapabilities::All => true,
            HostCapabilities::Listed { exact, prefixes } => {
                exact.contains(&path) || prefixes.iter().any(|p| path.starts_with(p.as_str()))
            }
        }
    }

    /// The refusal of an ungranted call, in policy-evaluator 1.36's words (`callback.rs`).
    pub fn denied(namespace: &str, operation: &str) -> String {
        format!(
            "Policy has not been granted access to the '{namespace}/{operation}' host \
             capability. The violation has been reported."
        )
    }
}

/// A pattern other than `*`: a known path, or a node of the tree followed by `/*`.
fn check(pattern: &str) -> Result<()> {
    if pattern.is_empty() {
        bail!("host capability pattern cannot be empty");
    }
    if let Some(node) = pattern.strip_suffix("/*") {
        if node.contains('*') {
            bail!("invalid wildcard in host capability pattern '{pattern}'");
        }
        if KNOWN.iter().any(|k| k.starts_with(&format!("{node}/"))) {
            return Ok(());
        }
        bail!("unknown host capability pattern '{pattern}': no capability is under '{node}'");
    }
    if pattern.contains('*') {
        bail!(
            "invalid wildcard in host capability pattern '{pattern}': '*' must be the whole last segment"
        );
    }
    if KNOWN.contains(&pattern) {
        return Ok(());
    }
    if KNOWN.iter().any(|k| k.starts_with(&format!("{pattern}/"))) {
        bail!("incomplete host capability path '{pattern}': did you mean '{pattern}/*'?");
    }
    bail!(
        "unknown host capability '{pattern}' (known: {})",
        KNOWN.join(", ")
    )
}

/// The capabilities a module calls, found as `kwctl annotate` 1.36 finds them
/// (`crates/kwctl/src/wasm_scanner.rs`): a capability is used when the module's data holds its
/// namespace and its operation, the operation also where it is not only the start of a longer
/// one (`list_resources_all` is not `list_resources_by_namespace`).
pub fn used_by(module: &[u8]) -> Result<BTreeSet<String>> {
    let mut data = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::DataSection(reader) = payload? {
            for segment in reader {
                data.extend_from_slice(segment?.data);
                data.push(0xff);
            }
        }
    }
    let operation = |path: &'static str| path.split_once('/').map_or(path, |(_, op)| op);
    let mut used = BTreeSet::new();
    for path in KNOWN {
        let (namespace, op) = (path.split('/').next().unwrap_or(path), operation(path));
        let longer: Vec<&str> = (KNOWN.iter().map(|k| operation(k)))
            .filter(|other| *other != op && other.starts_with(op))
            .collect();
        let present = find(&data, namespace.as_bytes(), |_| true)
            && find(&data, op.as_bytes(), |at| {
                !longer.iter().any(|l| data[at..].starts_with(l.as_bytes()))
            });
        if present {
            used.insert(path.to_string());
        }
    }
    Ok(used)
}

/// Whether `needle` occurs in `data` at a position `keep` accepts.
fn find(data: &[u8], needle: &[u8], keep: impl Fn(usize) -> bool) -> bool {
    !needle.is_empty()
        && data
            .windows(needle.len())
            .enumerate()
            .any(|(at, w)| w == needle && keep(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_grant_as_policy_evaluator_grants() {
        let none = HostCapabilities::new(Vec::<String>::new()).unwrap();
        assert!(!none.allows("kubernetes", "get_resource"));
        assert!(none.allows("tracing", "log"));
        let all = HostCapabilities::new(["*"]).unwrap();
        assert!(all.allows("oci", "v1/verify"));
        let k8s = HostCapabilities::new(["kubernetes/*"]).unwrap();
        assert!(k8s.allows("kubernetes", "list_resources_all"));
        assert!(!k8s.allows("oci", "v1/verify"));
        let exact = HostCapabilities::new(["kubernetes/get_resource", "oci/v1/*"]).unwrap();
        assert!(exact.allows("kubernetes", "get_resource"));
        assert!(!exact.allows("kubernetes", "list_resources_all"));
        assert!(exact.allows("oci", "v1/manifest_digest"));
        assert!(!exact.allows("oci", "v2/verify"));
    }

    #[test]
    fn bad_patterns_are_refused_with_what_to_write() {
        for bad in [
            "",
            "oci*",
            "oci/v1/oci_*",
            "*/oci",
            "unknown/v1/op",
            "oci/v99/*",
        ] {
            assert!(HostCapabilities::new([bad]).is_err(), "{bad:?}");
        }
        let e = HostCapabilities::new(["kubernetes"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'kubernetes/*'"), "{e}");
    }

    #[test]
    fn a_longer_operation_does_not_count_for_its_prefix() {
        let mut module = wasm_encoder::Module::new();
        let mut memory = wasm_encoder::MemorySection::new();
        memory.memory(wasm_encoder::MemoryType {
            minimum: 1,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        module.section(&memory);
        let mut data = wasm_encoder::DataSection::new();
        let text = b"kubewardenkubernetesget_resourcelist_resources_by_namespace".to_vec();
        data.active(0, &wasm_encoder::ConstExpr::i32_const(0), text);
        module.section(&data);
        let used = used_by(&module.finish()).unwrap();
        let want: BTreeSet<String> = [
            "kubernetes/get_resource",
            "kubernetes/list_resources_by_namespace",
        ]
        .map(String::from)
        .into();
        assert_eq!(used, want);
    }
}
