//! `policy-host bench`: the cost of the guest `validate` call on one instantiated module, as
//! `kwctl bench` measures it, or on a fresh instance per evaluation, as policy-server 1.31
//! serves requests (`--fresh-instance`). Like `kwctl bench`: warm-up, then samples; each
//! sample times a batch of evaluations and yields the mean time of one.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde::Serialize;
use serde_json::{Value, json};

use crate::engine::{Policy, PolicyPre, ValidationResponse};

#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub samples: usize,
    pub evaluations: u64,
    pub min_ns: f64,
    pub median_ns: f64,
    pub p99_ns: f64,
    pub accepted: bool,
    /// Whether the answer carries a mutated object (the stamping policy).
    pub mutated: bool,
    pub payload_bytes: usize,
    pub memory_bytes: usize,
}

/// What one evaluation does: the guest call alone, or, end to end, what policy-server does per
/// request too (parse the request JSON into a tree, serialize the guest payload, call).
pub enum Scope<'a> {
    Guest,
    EndToEnd {
        request: &'a str,
        settings: &'a Value,
    },
}

/// Which instance evaluates: the one loaded (its memory, and what the guest keeps there,
/// carries over from one evaluation to the next), or a fresh one each time.
pub enum Instance<'a> {
    Reused,
    Fresh(&'a PolicyPre),
}

/// One evaluation; the guest's answer.
fn evaluate(
    policy: &Policy,
    instance: &Instance,
    payload: &[u8],
    scope: &Scope,
) -> Result<Vec<u8>> {
    let serialized;
    let payload = match scope {
        Scope::Guest => payload,
        Scope::EndToEnd { request, settings } => {
            let request: Value = serde_json::from_str(request)?;
            serialized = serde_json::to_vec(&json!({"request": request, "settings": settings}))?;
            &serialized
        }
    };
    match instance {
        Instance::Reused => policy.call("validate", payload),
        Instance::Fresh(pre) => {
            (pre.instantiate()?.call("validate", payload)).map_err(|e| anyhow::anyhow!("{e}"))
        }
    }
}

/// Benchmarks `validate`; `policy` is the reused instance, which also tells how much memory
/// the guest uses. The decision reported is the one of the instances measured.
pub fn bench(
    policy: &Policy,
    instance: &Instance,
    payload: &[u8],
    scope: &Scope,
    warm_up: Duration,
    measurement: Duration,
    num_samples: usize,
) -> Result<BenchReport> {
    ensure!(num_samples > 0, "--num-samples must be at least 1");
    let answer = evaluate(policy, instance, payload, scope)?;
    let first = serde_json::from_slice::<ValidationResponse>(&answer)
        .context("validate returned an unreadable answer")?;
    let (accepted, mutated) = (first.accepted, first.mutated_object.is_some());
    // Warm up, and learn how long one evaluation takes.
    let start = Instant::now();
    let mut warm_iterations = 0u64;
    while start.elapsed() < warm_up || warm_iterations == 0 {
        evaluate(policy, instance, payload, scope)?;
        warm_iterations += 1;
    }
    let per_eval = start.elapsed().as_secs_f64() / warm_iterations as f64;
    let per_sample = measurement.as_secs_f64() / num_samples as f64;
    let batch = ((per_sample / per_eval) as u64).max(1);

    let mut samples = Vec::with_capacity(num_samples);
    for _ in 0..num_samples {
        let t = Instant::now();
        for _ in 0..batch {
            evaluate(policy, instance, payload, scope)?;
        }
        samples.push(t.elapsed().as_nanos() as f64 / batch as f64);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Ok(BenchReport {
        samples: samples.len(),
        evaluations: batch * num_samples as u64,
        min_ns: samples[0],
        median_ns: at(0.5),
        p99_ns: at(0.99),
        accepted,
        mutated,
        payload_bytes: payload.len(),
        memory_bytes: policy.memory_bytes(),
    })
}
