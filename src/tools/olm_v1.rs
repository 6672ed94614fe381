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
//!
//! Which ClusterExtension an object's controller ownerReference names (`extension_of`). The
//! Helm applier sets a controller reference to the ClusterExtension itself on every object but
//! those kept by `helm.sh/resource-policy: keep` (helm-operator-plugins' owner post-renderer,
//! `metav1.NewControllerRef`, vendored by openshift/operator-framework-operator-controller
//! 186c9e6). The boxcutter applier sets it to the extension's active revision, a
//! cluster-scoped ClusterObjectSet (`olm.operatorframework.io/v1`, ClusterExtensionRevision
//! before v1.9.0) named `<extension>-<n>`, which names its extension in its own
//! `olm.operatorframework.io/owner-name` label (`applier/boxcutter.go`,
//! `buildClusterObjectSet`); on each new revision, and on the move from the Helm applier, it
//! makes the old controller a plain reference and the new revision the controller in one
//! write (package-operator/boxcutter v0.14.0 `machinery/objects.go`). A revision's name is not
//! trusted to name its extension: it is looked up.

use crate::tools::cluster::{Cluster, Get, described, fields, missed};

/// operator-controller's label naming the ClusterExtension that owns an object.
pub const OWNER_NAME: &str = "olm.operatorframework.io/owner-name";

pub const API_VERSION: &str = "olm.operatorframework.io/v1";
pub const KIND: &str = "ClusterExtension";

/// The kind of boxcutter's revisions.
pub const REVISION_KIND: &str = "ClusterObjectSet";

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
    let found = cluster.get(&get).map_err(|e| missed(&get, &e))?;
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

/// Whether a controller reference of `api_version` and `kind` is OLM v1's: a
/// ClusterExtension, or a boxcutter revision.
pub fn controls(api_version: &str, kind: &str) -> bool {
    api_version == API_VERSION && (kind == KIND || kind == REVISION_KIND)
}

/// The ClusterExtension a controller reference of `api_version`, `kind` and `name` names:
/// itself, or the one a revision belongs to (looked up); `None` for a controller of another
/// kind, which is not OLM v1's.
pub fn extension_of(
    cluster: &dyn Cluster,
    (api_version, kind, name): (&str, &str, &str),
) -> Result<Option<String>, String> {
    if !controls(api_version, kind) {
        return Ok(None);
    }
    match kind {
        KIND => Ok(Some(name.to_string())),
        REVISION_KIND => {
            let get = Get {
                api_version: API_VERSION,
                kind: REVISION_KIND,
                name,
                namespace: None,
            };
            let found = cluster.get(&get).map_err(|e| missed(&get, &e))?;
            let read = fields(&found, &[&["metadata", "labels", OWNER_NAME]])
                .map_err(|e| format!("{} cannot be read: {e}", described(&get)))?;
            match read.into_iter().next().flatten() {
                Some(extension) if !extension.is_empty() => Ok(Some(extension)),
                _ => Err(format!(
                    "{} names no ClusterExtension (it has no {OWNER_NAME} label)",
                    described(&get)
                )),
            }
        }
        _ => Ok(None),
    }
}
