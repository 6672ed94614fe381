//! `policy-host bench`: the cost of the guest `validate` call on one instantiated module, as
//! policy-server reuses instances. Like `kwctl bench`: warm-up, then samples; each sample times
//! a batch of evaluations and yields the mean time of one.

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use serde::Serialize;
use serde_json::{Value, json};

use crate::engine::Policy;

#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub samples: usize,
    pub evaluations: u64,
    pub min_ns: f64,
    pub median_ns: f64,
    pub p99_ns: f64,
    pub accepted: bool,
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

fn evaluate(policy: &Policy, payload: &[u8], scope: &Scope) -> Result<()> {
    match scope {
        Scope::Guest => policy.call("validate", payload)?,
        Scope::EndToEnd { request, settings } => {
            let request: Value = serde_json::from_str(request)?;
            let payload = serde_json::to_vec(&json!({"request": request, "settings": settings}))?;
            policy.call("validate", &payload)?
        }
    };
    Ok(())
}

pub fn bench(
    policy: &Policy,
    payload: &[u8],
    scope: &Scope,
    warm_up: Duration,
    measurement: Duration,
    num_samples: usize,
) -> Result<BenchReport> {
    ensure!(num_samples > 0, "--num-samples must be at least 1");
    let accepted = policy.validate(payload)?.accepted;
    // Warm up, and learn how long one evaluation takes.
    let start = Instant::now();
    let mut warm_iterations = 0u64;
    while start.elapsed() < warm_up || warm_iterations == 0 {
        evaluate(policy, payload, scope)?;
        warm_iterations += 1;
    }
    let per_eval = start.elapsed().as_secs_f64() / warm_iterations as f64;
    let per_sample = measurement.as_secs_f64() / num_samples as f64;
    let batch = ((per_sample / per_eval) as u64).max(1);

    let mut samples = Vec::with_capacity(num_samples);
    for _ in 0..num_samples {
        let t = Instant::now();
        for _ in 0..batch {
            evaluate(policy, payload, scope)?;
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
        payload_bytes: payload.len(),
        memory_bytes: policy.memory_bytes(),
    })
}
