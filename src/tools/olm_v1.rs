//! OLM v1's operator-controller: the identity it installs a ClusterExtension's objects as.
//!
//! Before v1.11.0 upstream, and in OpenShift's downstream (openshift/operator-framework-
//! operator-controller), operator-controller writes an extension's objects with a TokenRequest
//! token of the service account the extension names, `spec.serviceAccount.name` in
//! `spec.namespace` (`internal/operator-controller/authentication/tokengetter.go`,
//! `ServiceAccountRestConfigMapper`); with the alpha `SyntheticPermissions` gate and
//! `spec.serviceAccount.name: olm.synthetic-user`, it impersonates the user
//! `olm:clusterextension:<name>` (`internal/operator-controller/authentication/synthetic.go`).
//! From v1.11.0 (operator-framework/operator-controller PR 2770) `spec.serviceAccount` is
//! ignored and every write is operator-controller's own service account. Both kinds of
//! operator-controller are in use, so a binding names operator-controller's account and,
//! with `writers.installer`, the account the extension names: looked up here.

use crate::cluster::{Cluster, Get, described, fields};

/// operator-controller's label naming the ClusterExtension that owns an object.
pub const OWNER_NAME: &str = "olm.operatorframework.io/owner-name";

pub const API_VERSION: &str = "olm.operatorframework.io/v1";
pub const KIND: &str = "ClusterExtension";

/// `spec.serviceAccount.name` that asks for the synthetic user (SyntheticPermissions).
const SYNTHETIC_SERVICE_ACCOUNT: &str = "olm.synthetic-user";
const SYNTHETIC_USER_PREFIX: &str = "olm:clusterextension:";

/// Whom a ClusterExtension has operator-controller install as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installer {
    /// Its `spec.serviceAccount`, in `spec.namespace`: the user
    /// `system:serviceaccount:<namespace>:<name>`.
    ServiceAccount { namespace: String, name: String },
    /// The synthetic user `olm:clusterextension:<name>`.
    User(String),
    /// None: no service account named (v1.11.0 on, where the field is optional and ignored).
    None,
}

impl Installer {
    /// The username requests made as the installer carry.
    pub fn username(&self) -> Option<String> {
        match self {
            Installer::ServiceAccount { namespace, name } => {
                Some(format!("system:serviceaccount:{namespace}:{name}"))
            }
            Installer::User(user) => Some(user.clone()),
            Installer::None => None,
        }
    }
}

/// The installer of ClusterExtension `extension`, from its spec (looked up).
pub fn installer(cluster: &dyn Cluster, extension: &str) -> Result<Installer, String> {
    let get = Get {
        api_version: API_VERSION,
        kind: KIND,
        name: extension,
        namespace: None,
    };
    let found = cluster
        .get(&get)
        .map_err(|e| format!("the lookup of {} failed: {e}", described(&get)))?;
    let read = fields(
        &found,
        &[&["spec", "serviceAccount", "name"], &["spec", "namespace"]],
    )
    .map_err(|e| format!("{} cannot be read: {e}", described(&get)))?;
    let mut read = read.into_iter().map(|v| v.filter(|v| !v.is_empty()));
    let (account, namespace) = (read.next().flatten(), read.next().flatten());
    Ok(match (account, namespace) {
        (Some(name), _) if name == SYNTHETIC_SERVICE_ACCOUNT => {
            Installer::User(format!("{SYNTHETIC_USER_PREFIX}{extension}"))
        }
        (Some(name), Some(namespace)) => Installer::ServiceAccount { namespace, name },
        _ => Installer::None,
    })
}
