//! Crossplane's composed resources: what a composite resource (an XR) writes for each object
//! its composition function pipeline returns.
//!
//! On every compose, Crossplane labels each composed object `crossplane.io/composite` with the
//! XR's own `crossplane.io/composite` label, and makes the XR its controller ownerReference
//! (`RenderComposedResourceMetadata`, `meta.AsController`: `controller` and
//! `blockOwnerDeletion` true), then server-side applies it, forced, as a field manager of its
//! own per XR (`apiextensions.crossplane.io/composed/<sha256 of the XR's name and Kind.group>`;
//! `internal/controller/apiextensions/composite/composition_render.go` and
//! `composition_functions.go` @ crossplane/crossplane 2d040d2, v2.3.4 c2670a7). An XR takes the
//! label with its own name when it has none (`api.go`, `APINamingConfigurator`), so a top-level
//! XR's objects carry its name, and a nested XR's objects carry the *root* XR's name while
//! their controller is their direct parent: the label names the tree an object belongs to,
//! the controller the XR that composes it.
//!
//! So the owner is both, as OLM v1's keys and controller are: the label under the same-owner
//! rule, and the controller, which moves from one XR to another only by a release (the garbage
//! collector's orphaning, or an XR dropping the object: its pre-delete UPDATE removes the labels
//! and keeps the reference, `composition_functions.go`, garbage collection). The policy does
//! not pair the label with the controller's name: which tree a nested XR belongs to is its own
//! label, on an object of a kind the user defines, which a policy cannot be granted lookups of
//! in advance (`contextAwareResources` names kinds). Crossplane before v1.15 applied every XR as
//! one field manager, and two XRs composing one object took it back and forth, label and
//! controller (crossplane/crossplane#5035): both moves are refused here. Since v1.15 the API
//! server refuses the second controller itself, and Crossplane's own check is client-side.
//!
//! An XR is the same owner across a version bump of its XRD (the reference's `apiVersion`
//! changes, its group does not) and across a delete and recreate under its name (a new uid,
//! the same field manager): the owner is the reference's group, kind and name.

/// The label Crossplane puts on every composed object: the (root) composite resource's name.
pub const COMPOSITE: &str = "crossplane.io/composite";

/// The group of an `apiVersion` ("" for the core group's `v1`).
fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Whether two controller references, each `(apiVersion, kind, name)`, name one composite
/// resource: its group, kind and name (the version and uid may change under it).
pub fn same_composite(a: (&str, &str, &str), b: (&str, &str, &str)) -> bool {
    group(a.0) == group(b.0) && a.1 == b.1 && a.2 == b.2
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::itself(("example.org/v1", "XApp", "a"), true)]
    #[case::an_xrd_version_bump(("example.org/v2", "XApp", "a"), true)]
    #[case::another_name(("example.org/v1", "XApp", "b"), false)]
    #[case::another_kind(("example.org/v1", "XNet", "a"), false)]
    #[case::another_group(("other.org/v1", "XApp", "a"), false)]
    #[case::the_core_group(("v1", "XApp", "a"), false)]
    fn a_composite_is_its_group_kind_and_name(
        #[case] other: (&str, &str, &str),
        #[case] same: bool,
    ) {
        assert_eq!(same_composite(("example.org/v1", "XApp", "a"), other), same);
    }

    #[test]
    fn the_core_groups_version_has_no_group() {
        assert_eq!(group("v1"), "");
        assert_eq!(group("apps/v1"), "apps");
    }
}
