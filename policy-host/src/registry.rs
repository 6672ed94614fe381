//! `push` and `pull`: the module as an OCI artifact, exactly as kwctl publishes it.
//!
//! The manifest has a config blob `{}` of media type `application/vnd.wasm.config.v1+json`,
//! one layer `application/vnd.wasm.content.layer.v1+wasm` holding the annotated module, and
//! the module's single-line metadata annotations. Plain HTTP is used only for loopback
//! registries (a test registry on 127.0.0.1); everything else is HTTPS.

use std::collections::BTreeMap;
use std::net::IpAddr;

use anyhow::{Context, Result, bail, ensure};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{
    OCI_IMAGE_MEDIA_TYPE, OciImageManifest, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::metadata;

/// Parses `registry://HOST/REPO:TAG` (or `HOST/REPO@sha256:...`).
pub fn parse_reference(location: &str) -> Result<Reference> {
    let bare = location.strip_prefix("registry://").unwrap_or(location);
    bare.parse::<Reference>()
        .with_context(|| format!("{location} is not an OCI reference (registry://HOST/REPO:TAG)"))
}

fn is_loopback(registry: &str) -> bool {
    let host = registry
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(registry, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn client(reference: &Reference) -> Client {
    let registry = reference.resolve_registry().to_string();
    let protocol = if is_loopback(&registry) {
        ClientProtocol::HttpsExcept(vec![registry])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        ..Default::default()
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Pushes an annotated module; returns the immutable reference `REPO@sha256:...`.
pub fn push(module: &[u8], location: &str) -> Result<String> {
    let Some(metadata) = metadata::read(module)? else {
        bail!("the module has no Kubewarden metadata: annotate it first (kwctl refuses it too)");
    };
    let annotations: BTreeMap<String, String> = metadata
        .annotations
        .into_iter()
        .filter(|(_, value)| !value.contains('\n'))
        .collect();
    let reference = parse_reference(location)?;
    let layers = [ImageLayer::new(
        module.to_vec(),
        WASM_LAYER_MEDIA_TYPE.to_string(),
        None,
    )];
    let config = Config::new(b"{}".to_vec(), WASM_CONFIG_MEDIA_TYPE.to_string(), None);
    let mut manifest = OciImageManifest::build(&layers, &config, Some(annotations));
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
    let client = client(&reference);
    runtime()?.block_on(async {
        client
            .push(
                &reference,
                &layers,
                config,
                &RegistryAuth::Anonymous,
                Some(manifest),
            )
            .await
            .with_context(|| format!("cannot push to {reference}"))?;
        let (_, digest) = client
            .pull_manifest_raw(
                &reference,
                &RegistryAuth::Anonymous,
                &[OCI_IMAGE_MEDIA_TYPE],
            )
            .await
            .context("cannot read back the pushed manifest")?;
        Ok(format!(
            "{}/{}@{digest}",
            reference.registry(),
            reference.repository()
        ))
    })
}

/// Pulls a module: exactly one wasm layer.
pub fn pull(location: &str) -> Result<Vec<u8>> {
    let reference = parse_reference(location)?;
    let client = client(&reference);
    let image = runtime()?.block_on(client.pull(
        &reference,
        &RegistryAuth::Anonymous,
        vec![WASM_LAYER_MEDIA_TYPE],
    ));
    let mut image = image.with_context(|| format!("cannot pull {reference}"))?;
    ensure!(
        image.config.media_type == WASM_CONFIG_MEDIA_TYPE,
        "{reference} is not a wasm artifact (config media type {})",
        image.config.media_type
    );
    ensure!(
        image.layers.len() == 1,
        "{reference} has {} layers, a policy has one",
        image.layers.len()
    );
    Ok(image.layers.remove(0).data.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_registries_are_plain_http() {
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("[::1]:5000"));
        assert!(is_loopback("127.1.2.3"));
        assert!(!is_loopback("ghcr.io"));
        assert!(!is_loopback("10.0.0.1:5000"));
        assert!(!is_loopback("localhost.example.com:5000"));
    }

    #[test]
    fn references_take_the_registry_scheme() {
        let r = parse_reference("registry://127.0.0.1:5000/policies/single-owner:v0.1.0").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "policies/single-owner");
        assert_eq!(r.tag(), Some("v0.1.0"));
    }
}
