//! `policy-host serve`: policy-server's HTTP contract, so that a real API server can call the
//! module through a webhook when policy-server itself is not installed.
//!
//! What it keeps of policy-server 1.31 and 1.36: the `policies.yml` format (a map from policy
//! id to `module`, `settings`, `allowedToMutate`, `policyMode`, `contextAwareResources`, and
//! from 1.36 `hostCapabilities`: the policy calls only the host capabilities listed, none
//! when the field is absent, and an invalid pattern stops the server), settings validated at start-up
//! (it refuses to start on invalid ones, printing the module's message), `POST
//! /validate/<policy id>` with an AdmissionReview answered by an AdmissionReview, a fresh
//! instance of the module for every request (its engine with epoch interruption, see
//! `engine::PolicyPre`), the evaluation limit (`--policy-timeout`, 2 s by default: the epoch
//! ticks once a second, and an evaluation past its deadline is interrupted), a guest trap, error
//! or interruption answered as `allowed: false` with code 500, `monitor` mode allowing
//! everything it would refuse, `POST /audit/<policy id>` (the audit scanner's: the verdict as
//! the module gave it, whatever the mode), and a readiness endpoint (`GET /readiness`, on its
//! own port) that answers once every policy is loaded. HTTPS with the given certificate, or
//! plain HTTP without one. What it leaves out: the policy-server's metrics, tracing and
//! policy groups.
//!
//! Every request is logged as one JSON line (`--log`), so that a test can see which writes the
//! API server sent and which it did not.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::capabilities::{Capabilities, Resource};
use crate::engine::{PolicyPre, read_module, validation_payload};
use crate::host_capabilities::HostCapabilities;
use crate::review::admission_response;

/// The largest AdmissionReview read: the API server sends at most about 3 MiB.
const MAX_BODY: usize = 8 << 20;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// policies.yml, as policy-server reads it: policy id -> {module, settings, policyMode}.
    #[arg(long)]
    policies: PathBuf,
    #[arg(long, default_value = "127.0.0.1")]
    addr: String,
    #[arg(long, default_value = "8443")]
    port: u16,
    /// Port of `GET /readiness` (plain HTTP, as policy-server's).
    #[arg(long = "readiness-probe-port", default_value = "8081")]
    readiness_port: u16,
    /// PEM certificate chain; with --key-file, serve HTTPS.
    #[arg(long = "cert-file")]
    cert_file: Option<PathBuf>,
    #[arg(long = "key-file")]
    key_file: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value = "2")]
    workers: usize,
    /// Append one JSON line per request to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Seconds an evaluation may run before it is interrupted and refused (policy-server's
    /// --policy-timeout); 0: no limit.
    #[arg(long = "policy-timeout", default_value_t = crate::engine::POLICY_TIMEOUT_SECONDS)]
    policy_timeout: u64,
}

/// One entry of policies.yml (policy-server's field names).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyEntry {
    module: String,
    #[serde(default)]
    settings: Option<Value>,
    #[serde(default)]
    allowed_to_mutate: Option<bool>,
    #[serde(default)]
    policy_mode: Option<String>,
    #[serde(default)]
    context_aware_resources: Vec<Resource>,
    /// What the policy may call, as policy-server 1.36 reads it: nothing when absent
    /// (kubewarden-controller 1.36 writes `["*"]` for every ClusterAdmissionPolicy).
    #[serde(default)]
    host_capabilities: Vec<String>,
}

struct LoadedPolicy {
    pre: PolicyPre,
    settings: Value,
    monitor: bool,
    allowed_to_mutate: bool,
    capabilities: Arc<Capabilities>,
}

struct State {
    policies: BTreeMap<String, LoadedPolicy>,
    log: Option<Mutex<std::fs::File>>,
}

/// Reads policies.yml, loads every module and validates its settings: an invalid policy stops
/// the server before it listens, as policy-server does.
fn load(path: &PathBuf, timeout: u64) -> Result<BTreeMap<String, LoadedPolicy>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let entries: BTreeMap<String, PolicyEntry> =
        serde_yaml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?;
    if entries.is_empty() {
        bail!("{} names no policy", path.display());
    }
    let mut policies = BTreeMap::new();
    for (id, entry) in entries {
        let module = read_module(&entry.module).with_context(|| format!("policy {id}"))?;
        // No limit: a deadline no evaluation reaches (nothing ticks then).
        let ticks = if timeout == 0 { u64::MAX / 2 } else { timeout };
        let pre = PolicyPre::load_with_deadline(&module, ticks)
            .with_context(|| format!("policy {id}"))?;
        let settings = match entry.settings {
            None | Some(Value::Null) => json!({}),
            Some(s) => s,
        };
        let raw = pre
            .instantiate()?
            .call("validate_settings", &serde_json::to_vec(&settings)?)
            .map_err(|e| anyhow::anyhow!("policy {id}: validate_settings failed: {e}"))?;
        let answer: crate::engine::SettingsValidationResponse = serde_json::from_slice(&raw)?;
        if !answer.valid {
            bail!(
                "policy {id}: Provided settings are not valid: {}",
                answer.message.unwrap_or_default()
            );
        }
        let monitor = match entry.policy_mode.as_deref() {
            None | Some("protect") => false,
            Some("monitor") => true,
            Some(other) => bail!("policy {id}: policyMode must be protect or monitor, not {other}"),
        };
        let live = !entry.context_aware_resources.is_empty();
        let allowed = HostCapabilities::new(&entry.host_capabilities)
            .with_context(|| format!("invalid hostCapabilities pattern for policy {id}"))?;
        let capabilities = Capabilities::new(entry.context_aware_resources, None, None, live)
            .with_context(|| format!("policy {id}: its contextAwareResources need a cluster"))?
            .allowing(allowed);
        policies.insert(
            id,
            LoadedPolicy {
                pre,
                settings,
                monitor,
                allowed_to_mutate: entry.allowed_to_mutate == Some(true),
                capabilities: Arc::new(capabilities),
            },
        );
    }
    Ok(policies)
}

/// What the log line names of a request.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Summary {
    uid: String,
    operation: String,
    name: String,
    namespace: String,
    kind: Value,
    #[serde(rename = "subResource")]
    sub_resource: String,
}

/// The AdmissionReview's request, kept as its text: it is handed to the guest unchanged.
#[derive(Deserialize)]
struct Review<'a> {
    #[serde(borrow)]
    request: Option<&'a RawValue>,
}

/// Who asked: the API server (`/validate/`) or the audit scanner (`/audit/`), which is given
/// the module's verdict whatever the policy's mode.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Validate,
    Audit,
}

/// Answers one AdmissionReview for policy `id`: the response, and the log line.
fn evaluate(
    state: &State,
    id: &str,
    body: &[u8],
    origin: Origin,
) -> Result<(Value, Value), (StatusCode, String)> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    let policy = state
        .policies
        .get(id)
        .ok_or_else(|| (StatusCode::NOT_FOUND, format!("no policy {id:?}")))?;
    let review: Review =
        serde_json::from_slice(body).map_err(|e| bad(format!("not an AdmissionReview: {e}")))?;
    let request = review
        .request
        .ok_or_else(|| bad("the AdmissionReview has no request".into()))?;
    let summary: Summary = serde_json::from_str(request.get()).unwrap_or_default();
    let payload = validation_payload(request, &policy.settings);
    let start = Instant::now();
    let answer = policy
        .pre
        .instantiate_with(policy.capabilities.clone())
        .and_then(|host| {
            host.call("validate", &payload)
                .map_err(|e| anyhow::anyhow!("{e}"))
        })
        .and_then(|raw| {
            serde_json::from_slice(&raw).context("validate returned an unreadable answer")
        });
    let micros = start.elapsed().as_micros();
    let mutation = crate::review::Mutation {
        allowed: policy.allowed_to_mutate,
        policy_id: id,
    };
    let mut response = admission_response(&summary.uid, answer, request.get(), mutation);
    let verdict = json!({"allowed": response.allowed,
        "code": response.status.as_ref().and_then(|s| s.code),
        "patched": response.patch.is_some()});
    if policy.monitor && !response.allowed && origin == Origin::Validate {
        // policy-server in monitor mode: logged, not enforced.
        response.allowed = true;
        response.status = None;
    }
    let mut line = json!({"policy": id, "uid": summary.uid, "operation": summary.operation,
        "kind": summary.kind["kind"], "name": summary.name, "namespace": summary.namespace,
        "subResource": summary.sub_resource, "verdict": verdict, "monitor": policy.monitor,
        "micros": micros});
    if origin == Origin::Audit {
        line["origin"] = json!("audit");
    }
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": response});
    Ok((review, line))
}

fn reply(status: StatusCode, body: Vec<u8>, json: bool) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if json {
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
    }
    response
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let path = request.uri().path().to_string();
    let (id, origin) = match (
        path.strip_prefix("/validate/"),
        path.strip_prefix("/audit/"),
    ) {
        (Some(id), _) => (id.to_string(), Origin::Validate),
        (_, Some(id)) => (id.to_string(), Origin::Audit),
        _ => return Ok(reply(StatusCode::NOT_FOUND, b"not found".to_vec(), false)),
    };
    if request.method() != Method::POST {
        return Ok(reply(
            StatusCode::METHOD_NOT_ALLOWED,
            b"POST only".to_vec(),
            false,
        ));
    }
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return Ok(reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                e.to_string().into_bytes(),
                false,
            ));
        }
    };
    // The module runs on this worker thread: a request is CPU work of tens of microseconds.
    Ok(match evaluate(&state, &id, &body, origin) {
        Ok((review, line)) => {
            if let Some(log) = &state.log
                && let Ok(mut file) = log.lock()
            {
                let _ = writeln!(file, "{line}");
            }
            reply(
                StatusCode::OK,
                serde_json::to_vec(&review).unwrap_or_default(),
                true,
            )
        }
        Err((status, message)) => reply(status, message.into_bytes(), false),
    })
}

fn tls_acceptor(cert: &PathBuf, key: &PathBuf) -> Result<tokio_rustls::TlsAcceptor> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} holds no PEM certificate", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("{} holds no PEM private key", key.display()))?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the certificate and key do not make a TLS configuration")?;
    // HTTP/1.1 only, which the API server's webhook client speaks too.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves until killed.
pub fn serve(args: &ServeArgs) -> Result<()> {
    let policies = load(&args.policies, args.policy_timeout)?;
    if args.policy_timeout > 0 {
        // policy-server's ticker: each engine's epoch once a second, so an evaluation is
        // interrupted between timeout - 1 and timeout seconds after it starts.
        let engines: Vec<wasmtime::Engine> =
            policies.values().map(|p| p.pre.engine().clone()).collect();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
                engines.iter().for_each(wasmtime::Engine::increment_epoch);
            }
        });
    }
    let log = (args.log.as_ref())
        .map(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open {}", path.display()))
        })
        .transpose()?
        .map(Mutex::new);
    let tls = match (&args.cert_file, &args.key_file) {
        (Some(cert), Some(key)) => Some(tls_acceptor(cert, key)?),
        (None, None) => None,
        _ => bail!("--cert-file and --key-file go together"),
    };
    let state = Arc::new(State { policies, log });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers.max(1))
        .enable_all()
        .build()?;
    let addr: SocketAddr = format!("{}:{}", args.addr, args.port)
        .parse()
        .context("--addr and --port do not make an address")?;
    let readiness: SocketAddr = format!("{}:{}", args.addr, args.readiness_port).parse()?;
    runtime.block_on(async move {
        // SO_REUSEPORT: several backends on one address share its connections, as replicas
        // behind one Service do.
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_reuseport(true)?;
        socket.set_reuseaddr(true)?;
        socket
            .bind(addr)
            .with_context(|| format!("cannot listen on {addr}"))?;
        let listener = socket.listen(1024)?;
        let ready = tokio::net::TcpListener::bind(readiness)
            .await
            .with_context(|| format!("cannot listen on {readiness}"))?;
        tokio::spawn(async move {
            while let Ok((stream, _)) = ready.accept().await {
                let service = hyper::service::service_fn(|request: Request<Incoming>| async move {
                    let ok = request.uri().path() == "/readiness";
                    Ok::<_, std::convert::Infallible>(if ok {
                        reply(StatusCode::OK, b"ready".to_vec(), false)
                    } else {
                        reply(StatusCode::NOT_FOUND, b"not found".to_vec(), false)
                    })
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        eprintln!(
            "policy-host serve: {} on {addr}, ready on {readiness}",
            if tls.is_some() { "https" } else { "http" }
        );
        loop {
            let (stream, _) = listener.accept().await?;
            let state = state.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request| handle(state.clone(), request));
                let builder = hyper::server::conn::http1::Builder::new();
                let result = match tls {
                    Some(tls) => match tls.accept(stream).await {
                        Ok(stream) => {
                            builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await
                        }
                        Err(_) => return,
                    },
                    None => {
                        builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                    }
                };
                let _ = result;
            });
        }
    })
}
