//! Flux's helm-controller: the Helm release a HelmRelease installs.
//!
//! helm-controller installs a HelmRelease's chart through the Helm SDK, so every object of it
//! carries helm-controller's labels, naming the HelmRelease, and Helm's annotations, naming the
//! release (fluxcd/helm-controller `internal/postrender/origin_labels.go`; helm/helm
//! `pkg/action/validate.go`). The release is named by `api/v2/helmrelease_types.go`
//! `GetReleaseName`: `spec.releaseName`, else `<spec.targetNamespace>-<name>` when a target
//! namespace is set (even one equal to its own), else the HelmRelease's name; a name longer than
//! 53 characters is shortened (`internal/release/name.go` `ShortenName`). It lives in
//! `GetReleaseNamespace`: `spec.targetNamespace`, else the HelmRelease's namespace.
//! `spec.storageNamespace` only places Helm's storage Secrets, which carry neither key.
//!
//! The object carries the HelmRelease's name and namespace and the release's: whether the
//! release is the one the HelmRelease names without `spec.releaseName` is decided from them
//! (`by_name`); only a release named otherwise needs the HelmRelease's spec (`release_of`).

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use crate::tools::cluster::{Cluster, Get, described, fields, missed};

/// helm-controller's labels, naming the HelmRelease.
pub const NAME: &str = "helm.toolkit.fluxcd.io/name";
pub const NAMESPACE: &str = "helm.toolkit.fluxcd.io/namespace";
/// Helm's annotations, naming the release.
pub const RELEASE_NAME: &str = "meta.helm.sh/release-name";
pub const RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";

/// The HelmRelease API helm-controller serves since Flux 2.3 (the GA API).
pub const API_VERSION: &str = "helm.toolkit.fluxcd.io/v2";
pub const KIND: &str = "HelmRelease";

/// Helm's limit on a release name, past which helm-controller shortens it.
const MAX_RELEASE_NAME: usize = 53;
/// A shortened name keeps this many characters of the name, then `-` and this many hex
/// digits of the name's SHA-256.
const KEPT: usize = 40;
const HASH_DIGITS: usize = 12;

/// A name (or namespace) pair: a HelmRelease's, or a release's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
}

/// A release name as helm-controller gives it to Helm: unchanged up to 53 characters, else its
/// first 40, `-`, and the first 12 hex digits of its SHA-256 (`ShortenName`).
pub fn shorten(name: &str) -> Cow<'_, str> {
    if name.len() <= MAX_RELEASE_NAME {
        return Cow::Borrowed(name);
    }
    let digest = Sha256::digest(name.as_bytes());
    let mut out = String::with_capacity(MAX_RELEASE_NAME);
    // A release name is a DNS label (ASCII); anything else is cut at a character boundary.
    let kept = (0..=KEPT)
        .rev()
        .find(|&i| name.is_char_boundary(i))
        .unwrap_or(0);
    out.push_str(name.get(..kept).unwrap_or_default());
    out.push('-');
    for byte in digest.iter().take(HASH_DIGITS / 2) {
        for nibble in [byte >> 4, byte & 0xf] {
            out.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    Cow::Owned(out)
}

/// Whether `release` is what `helm_release` installs when it has no `spec.releaseName`: in
/// its own namespace, its name; in a target namespace, `<target>-<name>` (shortened).
pub fn by_name(helm_release: Named, release: Named) -> bool {
    let composed = || format!("{}-{}", release.namespace, helm_release.name);
    (release.namespace == helm_release.namespace && release.name == shorten(helm_release.name))
        || release.name == shorten(&composed())
}

/// The release a HelmRelease installs, by its spec (looked up).
pub fn release_of(cluster: &dyn Cluster, helm_release: Named) -> Result<(String, String), String> {
    let get = Get {
        api_version: API_VERSION,
        kind: KIND,
        name: helm_release.name,
        namespace: Some(helm_release.namespace),
    };
    let found = cluster.get(&get).map_err(|e| missed(&get, &e))?;
    let read = fields(
        &found,
        &[&["spec", "releaseName"], &["spec", "targetNamespace"]],
    )
    .map_err(|e| format!("{} cannot be read: {e}", described(&get)))?;
    let mut read = read.into_iter().map(|v| v.filter(|v| !v.is_empty()));
    let (release_name, target) = (read.next().flatten(), read.next().flatten());
    let name = match (release_name, &target) {
        (Some(name), _) => name,
        (None, Some(target)) => format!("{target}-{}", helm_release.name),
        (None, None) => helm_release.name.to_string(),
    };
    let namespace = target.unwrap_or_else(|| helm_release.namespace.to_string());
    Ok((shorten(&name).into_owned(), namespace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    // helm-controller's own test vectors (internal/release/name_test.go) and two more,
    // computed with Python's hashlib.
    #[rstest]
    #[case("some-release", "some-release")]
    #[case(
        "release-name-with-very-long-name-which-is-longer-than-53-characters",
        "release-name-with-very-long-name-which-i-788ca0d0d7b0"
    )]
    #[case(
        "another-release-name-with-very-long-name-which-is-longer-than-53-characters",
        "another-release-name-with-very-long-name-7e72150d5a36"
    )]
    #[case(
        "observability-production-eu-west-1-kube-prometheus-stack",
        "observability-production-eu-west-1-kube--3bcade80b604"
    )]
    #[case(
        "team-payments-staging-ingress-nginx-internal-controller-release",
        "team-payments-staging-ingress-nginx-inte-baa5ff30f1a5"
    )]
    fn long_names_are_shortened_as_helm_controller_does(#[case] name: &str, #[case] short: &str) {
        assert_eq!(shorten(name), short);
        assert!(shorten(name).len() <= MAX_RELEASE_NAME);
    }

    fn named<'a>(name: &'a str, namespace: &'a str) -> Named<'a> {
        Named { name, namespace }
    }

    #[rstest]
    #[case(named("podinfo", "apps"), named("podinfo", "apps"), true)]
    #[case(named("podinfo", "flux-system"), named("apps-podinfo", "apps"), true)]
    #[case(named("podinfo", "apps"), named("apps-podinfo", "apps"), true)]
    #[case(named("podinfo", "flux-system"), named("podinfo", "apps"), false)]
    #[case(named("podinfo", "apps"), named("other", "apps"), false)]
    #[case(
        named("kube-prometheus-stack", "observability-production-eu-west-1"),
        named(
            "observability-production-eu-west-1-kube--3bcade80b604",
            "observability-production-eu-west-1"
        ),
        true
    )]
    fn a_release_named_by_the_helm_release_is_decided_from_the_keys(
        #[case] helm_release: Named,
        #[case] release: Named,
        #[case] expected: bool,
    ) {
        assert_eq!(by_name(helm_release, release), expected);
    }
}
