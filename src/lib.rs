//! single-owner-policy: a Kubewarden policy that keeps one owner per object.
//!
//! This file holds only the waPC entry points; see `admission` for what they answer,
//! `owner` for the rules and `settings` for the configuration.

pub mod admission;
pub mod identity;
pub mod json;
mod message;
pub mod owner;
pub mod request;
pub mod settings;
mod stamp;

use kubewarden_policy_sdk::protocol_version_guest;
use wapc_guest::{CallResult, register_function};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(admission::answer(payload))
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&admission::validate_settings(payload))?)
}
