//! Evaluates one request many times with the native build, for profilers:
//!
//! ```sh
//! cargo build --release --example evaluate
//! valgrind --tool=callgrind target/release/examples/evaluate bench/requests/crd-2kb-accept.json 10000
//! ```
//!
//! The request file holds a bare AdmissionRequest (as `make bench` writes them); the payload
//! is built as policy-server builds it, `{"request":...,"settings":{}}`, and evaluated through
//! the same function as the waPC `validate` entry point.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), count) = (args.next(), args.next()) else {
        eprintln!("usage: evaluate REQUEST.json [COUNT] [SETTINGS-JSON]");
        return ExitCode::FAILURE;
    };
    let count: usize = count.and_then(|c| c.parse().ok()).unwrap_or(1);
    let settings = args.next().unwrap_or_else(|| "{}".into());
    let request = match std::fs::read_to_string(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let payload = format!(r#"{{"request":{},"settings":{settings}}}"#, request.trim());
    let mut answer = Vec::new();
    for _ in 0..count {
        answer = single_owner_policy::admission::answer(payload.as_bytes());
    }
    println!("{}", String::from_utf8_lossy(&answer));
    ExitCode::SUCCESS
}
