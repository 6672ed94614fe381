//! Argo CD's resource tracking: which Application an object belongs to.
//!
//! Annotation tracking (Argo CD 3.x's default) writes `argocd.argoproj.io/tracking-id:
//! <app>:<group>/<kind>:<namespace>/<name>`, the app with an `<app-namespace>_` prefix when the
//! Application is not in Argo CD's own namespace (argoproj/argo-cd `util/argo/
//! resource_tracking.go`, `AppInstanceValue`, `ParseAppInstanceValue`). Only the app names the
//! owner: the rest names the object, as Argo CD last rendered it, and changes without a change
//! of owner: a cluster-scoped object carries the Application's destination namespace
//! (`controller/state.go`, which ignores that part when it matches), so a new destination
//! namespace rewrites it, and so does a manifest's new API group (an Ingress moved from
//! `extensions` to `networking.k8s.io`).

/// The annotation of Argo CD's annotation tracking.
pub const TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";

/// The annotation naming the Argo CD installation that manages an object, written on every
/// object it applies once `installationID` is set in `argocd-cm` (`resource_tracking.go`,
/// `SetAppInstance`): two installations with an Application of the same name write the same
/// tracking id, and only this tells them apart. An owner key that only qualifies the
/// Application (`owners::Owner`): it may be added to an object the Application owns, or
/// dropped, but not changed.
pub const INSTALLATION_ID: &str = "argocd.argoproj.io/installation-id";

/// The Application a tracking id names: its value up to the first `:`, as Argo CD parses it
/// (a value without `:` is all application).
pub fn application(tracking_id: &str) -> &str {
    match tracking_id.bytes().position(|b| b == b':') {
        // ':' is ASCII: a character boundary.
        Some(at) => tracking_id.get(..at).unwrap_or(tracking_id),
        None => tracking_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("guestbook:apps/Deployment:prod/web", "guestbook")]
    #[case("team-a_guestbook:/ConfigMap:prod/cfg", "team-a_guestbook")]
    #[case(
        "guestbook:rbac.authorization.k8s.io/ClusterRole:prod/viewer",
        "guestbook"
    )]
    #[case("guestbook", "guestbook")]
    #[case("", "")]
    fn the_application_is_the_value_up_to_the_first_colon(#[case] value: &str, #[case] app: &str) {
        assert_eq!(application(value), app);
    }
}
