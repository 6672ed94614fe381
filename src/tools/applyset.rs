//! kubectl's ApplySets (KEP-3659): `KUBECTL_APPLYSET=true kubectl apply --prune
//! --applyset=[KIND.GROUP/]NAME`. kubectl labels every object it applies
//! `applyset.kubernetes.io/part-of=<id>` (`staging/src/k8s.io/kubectl/pkg/cmd/apply/
//! applyset.go`, `AddLabels`, in the applied object before it is sent, for a client-side and a
//! server-side apply alike), and the set's parent (a Secret by default, a ConfigMap, or a custom
//! resource whose CRD is labelled `applyset.kubernetes.io/is-parent-type`) carries the label
//! `applyset.kubernetes.io/id=<id>` and the `applyset.kubernetes.io/tooling` annotation, written
//! first, by server-side apply as `kubectl-applyset` (`updateParent`). The id is the parent's
//! name, namespace, kind and group, hashed (`ID`, below). A member carries no ownerReference.
//!
//! kubectl checks the parent (its tooling and id), never a member's `part-of`: a second set that
//! applies an object the first holds relabels it without a word, and from then on the two take
//! it back and forth, and the prune of whichever holds it last deletes it under the other
//! (`applyset.go`, `applyset_pruner.go` @ openshift/kubernetes 98b3519, kubectl 1.36.2; seen
//! the same with kubectl 1.32.4). So the owner is the set, named by its id: an object moves from one set
//! to another only by a release (kubectl apply without `--applyset` drops the label) and an
//! adoption, or a handover. Prune deletes what the set no longer ships, found by its label: a
//! DELETE, which the label rules leave alone. kubectl applies cluster-scoped members of a
//! namespaced parent (a ClusterRole in a Secret's set), so ApplySets have no scope rule.
//!
//! The id names no parent by itself: messages give it, and how to find the parent.

/// The label kubectl puts on every member of a set.
pub const PART_OF: &str = "applyset.kubernetes.io/part-of";
/// The label on the set's parent, whose value members carry in `PART_OF`.
pub const ID: &str = "applyset.kubernetes.io/id";

/// The id kubectl gives the set of parent `name` in `namespace` ("" for a cluster-scoped
/// parent) of `kind` in API `group` ("" for a core Secret or ConfigMap): `applyset-` and the
/// unpadded base64url of the SHA-256 of `<name>.<namespace>.<kind>.<group>`, then `-v1`
/// (`applyset.go`, `ID`, `V1ApplySetIdFormat`).
pub fn id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    use sha2::{Digest, Sha256};
    let hashed = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!("applyset-{}-v1", base64url(&hashed))
}

/// Unpadded base64url, as Go's `base64.RawURLEncoding`.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            let six = (n >> (18 - 6 * i)) & 63;
            out.push(char::from(ALPHABET[six as usize]));
        }
    }
    out
}

/// What a refusal says of two sets' ids: where their parents are.
pub fn parents_hint(ids: &[&str]) -> String {
    let selectors: Vec<String> = ids.iter().map(|id| format!("{ID}={id}")).collect();
    format!(
        " An ApplySet id names its parent, found with `kubectl get secrets,configmaps -A -l {}`; \
         the policy refuses what kubectl lets one set do to another's member: remove the object \
         from one set's manifests.",
        selectors.join("` and `-l ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_kubectls() {
        // Recorded from kubectl 1.36.2 and 1.32.4 (`--applyset=set-a -n demo`, a Secret parent).
        assert_eq!(
            id("set-a", "demo", "Secret", ""),
            "applyset-4JUZnrEKypBHZCgcYN7G9mtlRdDYlc-dXiTfa3jVKjA-v1"
        );
        assert_eq!(
            id("set-b", "demo", "Secret", ""),
            "applyset-47ywCOAVJVeRh66ceyMZO7tOQ4vukv5gGTHZX4v7BHc-v1"
        );
    }

    #[test]
    fn base64url_is_unpadded() {
        assert_eq!(base64url(b""), "");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }
}
