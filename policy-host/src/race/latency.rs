//! `policy-host latency`: what the policy adds to a write on the real chain. Small writes of a
//! ConfigMap through the API server, timed at the client, in configurations that differ only
//! in which webhook selects them: a preset's (`--preset`), the null module's in the same backend
//! (a label the null policy's objectSelector selects, `e2e-tests/cluster/null-policy.yaml`), and
//! none. Each preset's writes are the ones its rules judge: an UPDATE of an owned object (a
//! merge patch of one annotation), and where a rule looks something up, the write that makes it
//! do so: all-tools' CREATE of a Flux HelmRelease's object named by spec.releaseName (the
//! HelmRelease looked up), the OLM v1 identity preset's UPDATE by an extension's installer (the
//! ClusterExtension looked up). Every configuration is written in turn, so that what else the
//! machine does falls on all alike.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::apiserver::{Api, Cluster};

/// The presets measured.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Preset {
    /// deploy/olm-v1.yaml: an UPDATE of an extension's object (no lookup).
    OlmV1,
    /// deploy/all-tools.yaml: an UPDATE (no lookup), and a CREATE of a HelmRelease's object
    /// named by spec.releaseName (the HelmRelease `latency` in default looked up).
    AllTools,
    /// deploy/identity/olm-v1-operator.yaml: an UPDATE by the installer of ClusterExtension
    /// `latency` (the ClusterExtension looked up).
    OlmV1Operator,
}

impl Preset {
    fn manifest(self) -> &'static str {
        match self {
            Preset::OlmV1 => "deploy/olm-v1.yaml",
            Preset::AllTools => "deploy/all-tools.yaml",
            Preset::OlmV1Operator => "deploy/identity/olm-v1-operator.yaml",
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Write {
    Update,
    Create,
}

/// One configuration: who selects it, what the write is, the object's keys.
struct Case {
    webhook: &'static str,
    write: Write,
    lookup: &'static str,
    name: &'static str,
    labels: Value,
    annotations: Value,
    installer: bool,
}

fn cases(preset: Preset) -> Vec<Case> {
    let null = json!({"single-owner.kubewarden.io/latency": "null"});
    let none = json!({"app": "latency"});
    let extension = json!({"olm.operatorframework.io/owner-kind": "ClusterExtension",
        "olm.operatorframework.io/owner-name": "latency"});
    let case = |webhook, write, lookup, name, labels: &Value, installer| Case {
        webhook,
        write,
        lookup,
        name,
        labels: labels.clone(),
        annotations: json!({}),
        installer,
    };
    let mut out = Vec::new();
    match preset {
        Preset::OlmV1 | Preset::AllTools => {
            out.push(case(
                "policy",
                Write::Update,
                "none",
                "latency-policy",
                &extension,
                false,
            ));
            out.push(case(
                "null",
                Write::Update,
                "-",
                "latency-null",
                &null,
                false,
            ));
            out.push(case(
                "none",
                Write::Update,
                "-",
                "latency-none",
                &none,
                false,
            ));
        }
        Preset::OlmV1Operator => {
            out.push(case(
                "policy",
                Write::Update,
                "ClusterExtension latency (as its installer)",
                "latency-policy",
                &extension,
                true,
            ));
            out.push(case(
                "null",
                Write::Update,
                "-",
                "latency-null",
                &null,
                true,
            ));
            out.push(case(
                "none",
                Write::Update,
                "-",
                "latency-none",
                &none,
                true,
            ));
        }
    }
    if let Preset::AllTools = preset {
        let flux = json!({"helm.toolkit.fluxcd.io/name": "latency", "helm.toolkit.fluxcd.io/namespace": "default"});
        let mut c = case(
            "policy",
            Write::Create,
            "HelmRelease default/latency (spec.releaseName)",
            "latency-policy-create",
            &flux,
            false,
        );
        c.annotations = json!({"meta.helm.sh/release-name": "latency-release",
            "meta.helm.sh/release-namespace": "default"});
        out.push(c);
        out.push(case(
            "null",
            Write::Create,
            "-",
            "latency-null-create",
            &null,
            false,
        ));
        out.push(case(
            "none",
            Write::Create,
            "-",
            "latency-none-create",
            &none,
            false,
        ));
    }
    out
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * q).round() as usize;
    sorted.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

fn configmap(name: &str, case: &Case) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": case.labels, "annotations": case.annotations},
        "data": {"k": "v"}})
}

/// Measures `updates` writes of each configuration after `warm_up` each; prints the table.
/// `installer` is the bearer token of the extension's installer (OLM v1 identity preset).
pub fn latency(
    cluster: &Cluster,
    preset: Preset,
    installer: Option<&str>,
    (updates, warm_up): (usize, usize),
    backend: &str,
) -> Result<()> {
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
    let cases = cases(preset);
    let api = |case: &Case| -> Result<&Api> {
        match (case.installer, &as_installer) {
            (false, _) => Ok(&admin),
            (true, Some(api)) => Ok(api),
            (true, None) => bail!("--preset olm-v1-operator needs --installer-token"),
        }
    };
    for case in cases.iter().filter(|c| c.write == Write::Update) {
        let answer = api(case)?.apply(case.name, "latency", &configmap(case.name, case))?;
        if !matches!(answer.status, 200 | 201) {
            bail!("creating {}: {} {}", case.name, answer.status, answer.body);
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(updates); cases.len()];
    for round in 0..warm_up + updates {
        for (i, case) in cases.iter().enumerate() {
            let api = api(case)?;
            let (start, answer) = match case.write {
                Write::Update => {
                    let patch = json!({"metadata": {"annotations": {"single-owner.kubewarden.io/seq": round.to_string()}}});
                    let start = Instant::now();
                    (start, api.merge_patch(case.name, &patch)?)
                }
                Write::Create => {
                    let name = format!("{}-{round}", case.name);
                    let object = configmap(&name, case);
                    let start = Instant::now();
                    (
                        start,
                        api.send(reqwest::Method::POST, "", "application/json", Some(&object))?,
                    )
                }
            };
            let took = start.elapsed();
            if !matches!(answer.status, 200 | 201) {
                bail!("writing {}: {} {}", case.name, answer.status, answer.body);
            }
            if case.write == Write::Create {
                let name = format!("/{}-{round}", case.name);
                api.send(reqwest::Method::DELETE, &name, "", None)?;
            }
            if round >= warm_up {
                times[i].push(took);
            }
        }
    }
    println!(
        "| webhook | backend | write | looked up | writes | p50 ms | p99 ms | p50 over no webhook ms | p50 over the null module |\n|---|---|---|---|---|---|---|---|---|"
    );
    let mut sorted = times;
    for t in &mut sorted {
        t.sort();
    }
    for (case, t) in cases.iter().zip(&sorted) {
        let same = |webhook: &str| {
            (cases.iter().zip(&sorted))
                .find(|(c, _)| c.webhook == webhook && c.write == case.write)
                .map_or(f64::NAN, |(_, t)| quantile(t, 0.5))
        };
        let (base, null) = (same("none"), same("null"));
        let (what, by) = match case.webhook {
            "policy" => (format!("this policy ({})", preset.manifest()), backend),
            "null" => ("the null module, same backend".to_string(), backend),
            _ => ("none".to_string(), "-"),
        };
        let write = match case.write {
            Write::Update if case.installer => "UPDATE, as the installer",
            Write::Update => "UPDATE",
            Write::Create => "CREATE",
        };
        let over_null = match case.webhook {
            "policy" => format!("{:+.1}%", (quantile(t, 0.5) / null - 1.0) * 100.0),
            _ => "-".into(),
        };
        println!(
            "| {what} | {by} | {write} | {} | {} | {:.2} | {:.2} | {:+.2} | {over_null} |",
            case.lookup,
            t.len(),
            quantile(t, 0.5),
            quantile(t, 0.99),
            quantile(t, 0.5) - base
        );
    }
    Ok(())
}
