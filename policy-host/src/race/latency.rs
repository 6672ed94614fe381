//! `policy-host latency`: what the policy adds to a write on the real chain. A small UPDATE (a
//! merge patch of one annotation of a ConfigMap) through the API server, timed at the client,
//! for three ConfigMaps that differ only in which webhook selects them: the policy's (an OLM v1
//! owner label, `deploy/olm-v1.yaml`), the null module's in the same backend (a label the null
//! policy's objectSelector selects, `e2e-tests/cluster/null-policy.yaml`), and none. The three
//! are written in turn, so that what else the machine does falls on all three alike.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::json;

use super::apiserver::{Api, Cluster};

/// The three configurations: name, labels.
const CASES: [(&str, &str, &str); 3] = [
    (
        "latency-policy",
        "olm.operatorframework.io/owner-name",
        "latency",
    ),
    ("latency-null", "single-owner.kubewarden.io/latency", "null"),
    ("latency-none", "app", "latency"),
];

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * q).round() as usize;
    sorted.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

/// Measures `updates` UPDATEs of each configuration after `warm_up` each; prints the table.
pub fn latency(cluster: &Cluster, updates: usize, warm_up: usize, backend: &str) -> Result<()> {
    let api = Api::for_resources(
        &cluster.urls[0],
        cluster,
        "/api/v1/namespaces/default/configmaps",
    )?;
    for (name, key, value) in CASES {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {key: value}}, "data": {"k": "v"}});
        let answer = api.apply(name, "latency", &object)?;
        if !matches!(answer.status, 200 | 201) {
            bail!("creating {name}: {} {}", answer.status, answer.body);
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(updates); CASES.len()];
    for round in 0..warm_up + updates {
        for (i, (name, ..)) in CASES.iter().enumerate() {
            let patch = json!({"metadata": {"annotations": {"single-owner.kubewarden.io/seq": round.to_string()}}});
            let start = Instant::now();
            let answer = api.merge_patch(name, &patch)?;
            let took = start.elapsed();
            if answer.status != 200 {
                bail!("updating {name}: {} {}", answer.status, answer.body);
            }
            if round >= warm_up {
                times[i].push(took);
            }
        }
    }
    println!(
        "| webhook | backend | updates | p50 ms | p99 ms | p50 over no webhook ms |\n|---|---|---|---|---|---|"
    );
    let mut sorted: Vec<Vec<Duration>> = times;
    for t in &mut sorted {
        t.sort();
    }
    let base = quantile(&sorted[2], 0.5);
    for ((name, ..), t) in CASES.iter().zip(&sorted) {
        let (what, by) = match *name {
            "latency-policy" => ("this policy (deploy/olm-v1.yaml)", backend),
            "latency-null" => ("the null module, same backend", backend),
            _ => ("none", "-"),
        };
        println!(
            "| {what} | {by} | {} | {:.2} | {:.2} | {:+.2} |",
            t.len(),
            quantile(t, 0.5),
            quantile(t, 0.99),
            quantile(t, 0.5) - base
        );
    }
    Ok(())
}
