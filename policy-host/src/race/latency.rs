//! `policy-host latency`: what a preset costs a write on the real chain. Small writes of
//! ConfigMaps through the API server, timed at the client over one keep-alive connection, one
//! block at a time: `scripts/cluster-latency.sh` switches what the API server runs between
//! blocks (no policy, a ValidatingAdmissionPolicy with the same-owner rule in CEL, the preset as
//! shipped, the preset without its generated matchCondition as it was before) and calls this
//! for each; every write of a block is recorded as one JSON line (`--record`), and
//! `scripts/latency-table.py` makes the table of all blocks.
//!
//! The writes of each preset: the ordinary UPDATE of an owned object (a merge patch of its data:
//! no marker changes, so the shipped preset decides it inside the API server), an UPDATE that
//! changes the owner (the owner keys removed, then written back: an orphaning and an adoption,
//! both accepted), and where a rule looks something up, an owner change that makes it do so
//! (OLM v1's controller moving between its ClusterExtension and a boxcutter revision, the
//! ClusterObjectSet looked up; all-tools' CREATE of a Flux HelmRelease's object with the Helm
//! release its spec.releaseName names, the HelmRelease looked up; the identity preset's writes
//! by an extension's installer, the ClusterExtension looked up). Each kind of write runs in a
//! sequence of its own within a block (the calls an owner change makes to the webhook backend
//! do not fall on the ordinary writes); the configurations' blocks alternate, so that what else
//! the machine does falls on all alike.

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::apiserver::{Api, Cluster};

/// The presets measured.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Preset {
    /// deploy/olm-v1.yaml.
    OlmV1,
    /// deploy/all-tools.yaml.
    AllTools,
    /// deploy/identity/olm-v1-operator.yaml: every write by the installer of ClusterExtension
    /// `latency` (looked up).
    OlmV1Operator,
}

impl Preset {
    /// As `--preset` names it.
    fn name(self) -> &'static str {
        match self {
            Preset::OlmV1 => "olm-v1",
            Preset::AllTools => "all-tools",
            Preset::OlmV1Operator => "olm-v1-operator",
        }
    }
}

/// What one write does to its object.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Write {
    /// A merge patch of the data: no marker changes.
    Ordinary,
    /// The owner keys removed, then written back, in turn.
    OwnerChange,
    /// The controller ownerReference between the ClusterExtension and its revision, in turn.
    ControllerMoves,
    /// A CREATE of a Flux HelmRelease's object with the Helm release keys its HelmRelease's
    /// spec.releaseName names (deleted after each, unjudged).
    CreateRelease,
}

/// One kind of write, with its object and what the policy looks up for it.
struct Case {
    write: Write,
    name: &'static str,
    lookup: &'static str,
    installer: bool,
}

const EXTENSION: [(&str, &str); 2] = [
    ("olm.operatorframework.io/owner-kind", "ClusterExtension"),
    ("olm.operatorframework.io/owner-name", "latency"),
];
const FLUX_HELM: [(&str, &str); 2] = [
    ("helm.toolkit.fluxcd.io/name", "latency"),
    ("helm.toolkit.fluxcd.io/namespace", "default"),
];
const RELEASE: [(&str, &str); 2] = [
    ("meta.helm.sh/release-name", "latency-release"),
    ("meta.helm.sh/release-namespace", "default"),
];

fn pairs(list: &[(&str, &str)]) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}

fn reference(kind: &str, name: &str) -> Value {
    json!([{"apiVersion": "olm.operatorframework.io/v1", "kind": kind, "name": name,
        "uid": "6c1b0a52-5b1f-4bd4-9a55-000000000001", "controller": true,
        "blockOwnerDeletion": true}])
}

fn cases(preset: Preset) -> Vec<Case> {
    let case = |write, name, lookup| Case {
        write,
        name,
        lookup,
        installer: false,
    };
    match preset {
        Preset::OlmV1 => vec![
            case(Write::Ordinary, "latency-ordinary", "none"),
            case(Write::OwnerChange, "latency-owner", "none"),
            case(
                Write::ControllerMoves,
                "latency-controller",
                "ClusterObjectSet latency-1",
            ),
        ],
        Preset::AllTools => vec![
            case(Write::Ordinary, "latency-ordinary", "none"),
            case(Write::OwnerChange, "latency-owner", "none"),
            case(
                Write::ControllerMoves,
                "latency-controller",
                "ClusterObjectSet latency-1",
            ),
            case(
                Write::CreateRelease,
                "latency-release",
                "HelmRelease default/latency (spec.releaseName)",
            ),
        ],
        Preset::OlmV1Operator => vec![
            Case {
                installer: true,
                ..case(
                    Write::Ordinary,
                    "latency-ordinary",
                    "ClusterExtension latency (its installer)",
                )
            },
            Case {
                installer: true,
                ..case(
                    Write::OwnerChange,
                    "latency-owner",
                    "ClusterExtension latency (its installer)",
                )
            },
        ],
    }
}

/// The object a case writes, as first created.
fn object(case: &Case) -> Value {
    let mut metadata = json!({"name": case.name});
    if case.write == Write::CreateRelease {
        metadata["labels"] = pairs(&FLUX_HELM);
        metadata["annotations"] = pairs(&RELEASE);
    } else {
        metadata["labels"] = pairs(&EXTENSION);
        metadata["ownerReferences"] = reference("ClusterExtension", "latency");
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}})
}

/// The merge patch of a case's `n`th write.
fn patch(case: &Case, n: usize) -> Value {
    let even = n.is_multiple_of(2);
    let null_all = |list: &[(&str, &str)]| {
        Value::Object(
            list.iter()
                .map(|(k, _)| (k.to_string(), Value::Null))
                .collect(),
        )
    };
    match case.write {
        Write::Ordinary => json!({"data": {"k": n.to_string()}}),
        Write::OwnerChange if even => json!({"metadata": {"labels": null_all(&EXTENSION)}}),
        Write::OwnerChange => json!({"metadata": {"labels": pairs(&EXTENSION)}}),
        Write::ControllerMoves if even => {
            json!({"metadata": {"ownerReferences": reference("ClusterObjectSet", "latency-1")}})
        }
        Write::ControllerMoves => {
            json!({"metadata": {"ownerReferences": reference("ClusterExtension", "latency")}})
        }
        Write::CreateRelease => Value::Null,
    }
}

fn name(write: Write) -> &'static str {
    match write {
        Write::Ordinary => "ordinary UPDATE of an owned object",
        Write::OwnerChange => "owner change (keys removed, written back)",
        Write::ControllerMoves => "owner change (controller: extension <-> revision)",
        Write::CreateRelease => "CREATE of a HelmRelease's object",
    }
}

/// What one block measures and where it goes.
pub struct Block<'b> {
    pub preset: Preset,
    /// The configuration the API server runs (a label for the table).
    pub mode: &'b str,
    pub backend: &'b str,
    pub writes: usize,
    pub warm_up: usize,
    pub record: &'b Path,
}

/// Measures one block: `writes` of each case after `warm_up`, each appended to the record as
/// `{"preset", "mode", "backend", "write", "lookup", "ms"}`. `installer` is the bearer token of
/// the extension's installer (the identity preset). The objects are created (or put back) first.
pub fn latency(cluster: &Cluster, block: &Block, installer: Option<&str>) -> Result<()> {
    let path = "/api/v1/namespaces/default/configmaps";
    let admin = Api::for_resources(&cluster.urls[0], cluster, path)?;
    let as_installer = match installer {
        Some(token) => {
            let c = Cluster {
                token: token.to_string(),
                urls: cluster.urls.clone(),
                ca_pem: cluster.ca_pem.clone(),
                etcd: String::new(),
                webhook_log: None,
            };
            Some(Api::for_resources(&cluster.urls[0], &c, path)?)
        }
        None => None,
    };
    let cases = cases(block.preset);
    let api = |case: &Case| -> Result<&Api> {
        match (case.installer, &as_installer) {
            (false, _) => Ok(&admin),
            (true, Some(api)) => Ok(api),
            (true, None) => bail!("--preset olm-v1-operator needs --installer-token"),
        }
    };
    for case in cases.iter().filter(|c| c.write != Write::CreateRelease) {
        // Created whole, or put back whole with a server-side apply, by the case's writer.
        let answer = api(case)?.apply(case.name, "latency", &object(case))?;
        if !matches!(answer.status, 200 | 201) {
            bail!("creating {}: {} {}", case.name, answer.status, answer.body);
        }
    }
    let mut record = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(block.record)
        .with_context(|| format!("cannot open {}", block.record.display()))?;
    // Each kind of write in a run of its own: the calls an owner change makes to the webhook
    // backend (and what the backend does after answering) do not fall on the ordinary writes.
    for case in &cases {
        for n in 0..block.warm_up + block.writes {
            let api = api(case)?;
            let (took, answer): (Duration, _) = if case.write == Write::CreateRelease {
                let created = object(case);
                let start = Instant::now();
                let answer = api.send(
                    reqwest::Method::POST,
                    "",
                    "application/json",
                    Some(&created),
                )?;
                let took = start.elapsed();
                api.send(
                    reqwest::Method::DELETE,
                    &format!("/{}", case.name),
                    "",
                    None,
                )?;
                (took, answer)
            } else {
                let patch = patch(case, n);
                let start = Instant::now();
                let answer = api.merge_patch(case.name, &patch)?;
                (start.elapsed(), answer)
            };
            if !matches!(answer.status, 200 | 201) {
                bail!("writing {}: {} {}", case.name, answer.status, answer.body);
            }
            if n >= block.warm_up {
                let line = json!({"preset": block.preset.name(), "mode": block.mode,
                    "backend": block.backend, "write": name(case.write), "lookup": case.lookup,
                    "ms": took.as_secs_f64() * 1e3});
                writeln!(record, "{line}")?;
            }
        }
    }
    Ok(())
}
