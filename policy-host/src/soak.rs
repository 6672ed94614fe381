//! `policy-host soak`: many evaluations on one instance, to show that nothing leaks between
//! calls. Every answer must equal the answer a fresh instance gives to the same request and
//! settings, and the guest's linear memory must stop growing after the first calls.

use anyhow::{Result, bail};
use serde_json::Value;

use crate::engine::{Policy, validation_payload};
use crate::review::AdmissionRequest;

/// Memory is checked from this call on: by then every request has been seen many times, and
/// the guest allocator has met its high-water mark (with the 45 request/settings cases of
/// e2e-tests/hostile.bats it grew by one page between calls 1,000 and 2,000, then never; a leak
/// grows on).
const SETTLED_AT: usize = 10_000;

pub fn soak(
    module: &[u8],
    requests: &[AdmissionRequest],
    settings: &[Value],
    evaluations: usize,
) -> Result<()> {
    let mut cases = Vec::new();
    for request in requests {
        for s in settings {
            let payload = validation_payload(&request.raw, s);
            // The reference answer, from an instance that has seen nothing else.
            let expected = Policy::load(module)?.call("validate", &payload)?;
            cases.push((payload, expected));
        }
    }
    if cases.is_empty() {
        bail!("soak needs at least one request");
    }
    let policy = Policy::load(module)?;
    let checkpoints = [1, 10, SETTLED_AT, evaluations];
    let mut settled = 0;
    for i in 1..=evaluations {
        let (payload, expected) = &cases[(i - 1) % cases.len()];
        let answer = policy.call("validate", payload)?;
        if &answer != expected {
            bail!(
                "call {i}: the answer differs from a fresh instance's:\n  got {}\n  expected {}",
                String::from_utf8_lossy(&answer),
                String::from_utf8_lossy(expected)
            );
        }
        if checkpoints.contains(&i) {
            println!(
                "call {i}: guest linear memory {} bytes",
                policy.memory_bytes()
            );
        }
        if i == SETTLED_AT.min(evaluations) {
            settled = policy.memory_bytes();
        }
    }
    let last = policy.memory_bytes();
    if last > settled {
        bail!("guest memory grew from {settled} bytes at call {SETTLED_AT} to {last} bytes");
    }
    println!(
        "{evaluations} evaluations of {} request/settings cases: every answer equal to a fresh \
         instance's, memory steady at {last} bytes after call {SETTLED_AT}",
        cases.len()
    );
    Ok(())
}
