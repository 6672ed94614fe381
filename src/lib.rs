//! single-owner-policy: a Kubewarden policy that keeps one owner per object.
//!
//! This file holds only the waPC entry points. `admission` answers them: it reads the payload,
//! checks the settings (`settings`, the whole schema in one struct) and applies the rules. The
//! rest is four parts, a folder each, each using only those below it:
//!
//! - `rules`: the order the rule families judge a request in, each family a module of its own
//!   (the same-owner invariant with fencing and handover, one owner across tools, the scope
//!   rules, the controller ownerReference, who writes, stamping), their verdict and words;
//! - `owners`: the owner model, who owns an object under which tool, and its `markers`, what a
//!   write must change to be judged at all (and the webhook's matchCondition that says so);
//! - `tools`: each tool's own lifecycle rules, and what they look up in the cluster
//!   (`tools::cluster`, Kubewarden's `kubernetes` host capability);
//! - `reading`: the request, read without building a tree of it (`reading::json`), only what
//!   the rules need.

/// The policy's version (its crate's, the release's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod admission;
pub mod owners;
pub mod reading;
pub mod rules;
pub mod settings;
pub mod tools;

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
