//! single-owner-policy: a Kubewarden policy that keeps one owner per object.
//!
//! This file holds only the waPC entry points. `admission` answers them: it reads the request
//! (`request`, with the reader in `json`), checks the settings (`settings`, the whole schema)
//! and applies `rules`. Who owns an object under which tool is `owners`; each rule family has
//! a module of its own: `same_owner` (the invariant within a tool, with revision fencing and
//! handover), `cross_tool` (one owner across tools), `scope`, `writers` (who may write an
//! owner's objects, with `identity`, `writer` and `pattern`) and `stamping` (with `splice`);
//! `verdict` is their answer and `describe` how their messages name things. `tools` holds each
//! tool's own lifecycle rules, and `cluster` what they look up (Kubewarden's `kubernetes` host
//! capability).

pub mod admission;
pub mod cluster;
mod controller;
mod cross_tool;
mod describe;
pub mod identity;
pub mod json;
pub mod markers;
mod message;
pub mod owners;
mod pattern;
pub mod request;
pub mod rules;
mod same_owner;
mod scope;
pub mod settings;
mod splice;
mod stamping;
pub mod tools;
pub mod verdict;
mod writer;
mod writers;

use kubewarden_policy_sdk::protocol_version_guest;
use wapc_guest::{CallResult, register_function};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
    register_function("match_conditions", match_conditions);
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(admission::answer(payload))
}

/// Not a Kubewarden entry point: the matchConditions the settings need (`markers`), for
/// `policy-host verify-manifest` and `match-conditions`.
fn match_conditions(payload: &[u8]) -> CallResult {
    Ok(admission::match_conditions(payload))
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&admission::validate_settings(payload))?)
}
