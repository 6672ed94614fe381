//! kapp (carvel-dev/kapp): `kapp deploy -a APP -f ...`. kapp labels every object it deploys
//! `kapp.k14s.io/app=<the app's label value>`, a decimal UnixNano time the app's record takes
//! once, when it is created (`pkg/kapp/app/recorded_app.go`, `RecordedApp.create`; the record is
//! a ConfigMap named after the app, its `data.spec` JSON holding `labelValue`), and
//! `kapp.k14s.io/association=v1.<md5 of namespace/group/kind/name>`, which names the object,
//! not its owner (`pkg/kapp/resources/labeled_resources.go`, `Prepare`;
//! `association_label.go`). Rename and namespace moves copy the record with its label value
//! (`renameConfigMap`, `mergeAppUpdates` refuses to change it): the value is the owner.
//! Cluster-scoped objects carry the same value (kapp has no scope rule). Pod templates carry
//! the labels too (`ownershipLabelRules`, `pkg/kapp/config/default.go`), so the ReplicaSets
//! and Pods controllers make are the app's as well, and they are created with its value.
//!
//! kapp's own check (`LabeledResources.checkResourceOwnership`: "Resource '...' is already
//! associated with a different app") runs on the client, from a listing made before the
//! deploy: two apps deploying at once both pass it, and
//! `--dangerous-override-ownership-of-existing-resources` skips it, relabelling another app's
//! object. kapp takes objects without its label silently (`--existing-non-labeled-resources-
//! check`, an adoption); orphaning (`kapp.k14s.io/delete-strategy: orphan`) is a JSON patch
//! that removes the app label and adds `kapp.k14s.io/orphaned` (`DeleteOrphanStrategy`, a
//! release); `kapp delete` and the replace strategies DELETE. All @ carvel-dev/kapp a89576c.
//!
//! The label value names no app by itself: messages say how to find both apps.

/// The label kapp puts on every object of an app: the app's label value.
pub const APP: &str = "kapp.k14s.io/app";

/// The label kapp puts on each change record (a ConfigMap `<app>-change-<suffix>`) of the app
/// whose label value it holds (`RecordedAppChanges.Begin`).
pub const CHANGE_APP_LABEL: &str = "kapp.k14s.io/app-change-app-label";

/// What a refusal says of two apps' label values: where their records are.
pub fn apps_hint(values: &[&str]) -> String {
    let selectors: Vec<String> = values
        .iter()
        .map(|v| format!("{CHANGE_APP_LABEL}={v}"))
        .collect();
    format!(
        " A kapp app's label value names its app: its change records, named after the app, are \
         found with `kubectl get configmaps -A -l {}`. kapp refuses this itself unless \
         --dangerous-override-ownership-of-existing-resources, or when two deploys race its \
         check: remove the object from one app's manifests, or hand it over.",
        selectors.join("` and `-l ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_both_apps_change_records() {
        let hint = apps_hint(&["1700000000000000001", "1700000000000000002"]);
        assert!(hint.contains(
            "-l kapp.k14s.io/app-change-app-label=1700000000000000001` and `-l kapp.k14s.io/app-change-app-label=1700000000000000002`"
        ));
    }
}
