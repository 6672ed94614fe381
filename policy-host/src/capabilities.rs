//! The `kubernetes` host capability, as policy-server and kwctl serve it to a context-aware
//! policy: `get_resource` and `list_resources_all`, for the kinds the policy was granted.
//!
//! What it keeps of policy-evaluator 0.30 (kwctl and policy-server 1.31): the payloads the
//! Kubewarden SDK sends, the allow-list refusal (`Policy has not been granted access to
//! Kubernetes <apiVersion>/<kind> resources. The violation has been reported.`), the
//! not-found message (`Cannot find <apiVersion>/<kind> named '<name>' inside of namespace
//! '<Some("ns") or None>'`), found objects cached for 5 seconds (errors are not), and kwctl's
//! recorded sessions (`--record-host-capabilities-interactions`,
//! `--replay-host-capabilities-interactions`): a YAML list of exchanges, each a request (a YAML
//! document, as a string, tagged with the request's kind) and its response, replayed strictly
//! in order, each request matched exactly.
//!
//! Live reads go through the API server the kubeconfig names (`$KUBECONFIG`), with its CA and
//! its bearer token or client certificate, as kube-rs reads one.

#[cfg(feature = "cluster")]
use std::collections::HashMap;
use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
#[cfg(feature = "cluster")]
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::host_capabilities::HostCapabilities;

/// A kind a policy may look up (`contextAwareResources`). Ordered by API version, then kind,
/// as policy-evaluator orders them (a `BTreeSet`) where it lists them, in artifacthub-pkg.yml.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub api_version: String,
    pub kind: String,
}

/// A host call the capability answers, as policy-evaluator names it in recorded sessions
/// (`CallbackRequestType`; the kinds of request this host serves).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallbackRequestType {
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        #[serde(default)]
        namespace: Option<String>,
        disable_cache: bool,
        /// kwctl 1.33 and later record it (`null` without masks); 1.31 does not know it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        #[serde(default)]
        label_selector: Option<String>,
        #[serde(default)]
        field_selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
}

impl CallbackRequestType {
    fn resource(&self) -> (&str, &str) {
        match self {
            CallbackRequestType::KubernetesGetResource {
                api_version, kind, ..
            }
            | CallbackRequestType::KubernetesListResourceAll {
                api_version, kind, ..
            } => (api_version, kind),
        }
    }
}

/// The SDK's `GetResourceRequest`.
#[derive(Deserialize)]
struct GetResourceRequest {
    api_version: String,
    kind: String,
    name: String,
    namespace: Option<String>,
    disable_cache: bool,
    #[serde(default)]
    field_masks: Option<BTreeSet<String>>,
}

/// The SDK's `ListAllResourcesRequest`.
#[derive(Deserialize)]
struct ListAllResourcesRequest {
    api_version: String,
    kind: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    #[serde(default)]
    field_masks: Option<BTreeSet<String>>,
}

/// One recorded exchange, as kwctl writes it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
struct Exchange {
    request: String,
    response: Response,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Response {
    Success { payload: String },
    Error { message: String },
}

/// Where answers come from.
enum Mode {
    /// No cluster: every lookup fails.
    Off,
    /// A recorded session, in order.
    Replay {
        source: PathBuf,
        exchanges: Mutex<VecDeque<Exchange>>,
    },
    /// The API server, and each exchange written to `destination` at the end.
    Record {
        live: Box<Live>,
        destination: PathBuf,
        exchanges: Mutex<Vec<Exchange>>,
    },
    /// The API server.
    Live(Box<Live>),
}

/// The host capabilities of one policy: which it may call at all (Kubewarden 1.36's
/// allow-list), and the `kubernetes` one's kinds and answers.
pub struct Capabilities {
    allowed: HostCapabilities,
    granted: Vec<Resource>,
    mode: Mode,
}

impl Capabilities {
    /// A policy that may look nothing up.
    pub fn none() -> Capabilities {
        Capabilities {
            allowed: HostCapabilities::All,
            granted: Vec::new(),
            mode: Mode::Off,
        }
    }

    /// The same, calling only the host capabilities `allowed` grants.
    pub fn allowing(self, allowed: HostCapabilities) -> Capabilities {
        Capabilities { allowed, ..self }
    }

    /// Whether the policy may call `namespace/operation` at all; checked before the call's
    /// payload is read, as policy-evaluator 1.36 checks it.
    pub fn allows(&self, namespace: &str, operation: &str) -> bool {
        self.allowed.allows(namespace, operation)
    }

    /// `granted` kinds, answered from the session at `replay`, through the API server while
    /// recording to `record`, or through the API server (`live`).
    pub fn new(
        granted: Vec<Resource>,
        replay: Option<&Path>,
        record: Option<&Path>,
        live: bool,
    ) -> Result<Capabilities> {
        let mode = match (replay, record) {
            (Some(_), Some(_)) => bail!(
                "--replay-host-capabilities-interactions and \
                 --record-host-capabilities-interactions go one at a time"
            ),
            (Some(source), None) => {
                let text = std::fs::read_to_string(source)
                    .with_context(|| format!("cannot read {}", source.display()))?;
                let exchanges: VecDeque<Exchange> =
                    serde_yaml::from_str(&text).with_context(|| {
                        format!("cannot deserialize contents of {}", source.display())
                    })?;
                for exchange in &exchanges {
                    serde_yaml::from_str::<CallbackRequestType>(&exchange.request).with_context(
                        || format!("{}: a recorded request cannot be read", source.display()),
                    )?;
                }
                Mode::Replay {
                    source: source.to_path_buf(),
                    exchanges: Mutex::new(exchanges),
                }
            }
            (None, Some(destination)) => Mode::Record {
                live: Box::new(Live::from_kubeconfig()?),
                destination: destination.to_path_buf(),
                exchanges: Mutex::new(Vec::new()),
            },
            (None, None) if live && !granted.is_empty() => {
                Mode::Live(Box::new(Live::from_kubeconfig()?))
            }
            (None, None) => Mode::Off,
        };
        Ok(Capabilities {
            allowed: HostCapabilities::All,
            granted,
            mode,
        })
    }

    /// Answers a host call of the `kubernetes` namespace. As in policy-evaluator, a call the
    /// allow-list does not grant, a request that cannot be read, or a kind not granted is
    /// refused in its own words, in that order, and the failure of an answer (not found, a
    /// session out of step, the API server's error) is prefixed with `Callback evaluation
    /// failure: `, as the callback handler's errors are.
    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        if !self.allows("kubernetes", operation) {
            return Err(HostCapabilities::denied("kubernetes", operation));
        }
        let request = parse(operation, payload)?;
        let (api_version, kind) = request.resource();
        if !(self.granted.iter()).any(|r| r.api_version == api_version && r.kind == kind) {
            return Err(format!(
                "Policy has not been granted access to Kubernetes {api_version}/{kind} \
                 resources. The violation has been reported."
            ));
        }
        self.answer(request)
            .map_err(|e| format!("Callback evaluation failure: {e}"))
    }

    /// The answer to a granted request: from the session, or the cluster.
    fn answer(&self, request: CallbackRequestType) -> Result<Vec<u8>, String> {
        let (api_version, kind) = request.resource();
        match &self.mode {
            Mode::Off => Err(format!(
                "no Kubernetes cluster to look up {api_version}/{kind} in (policy-host was \
                 given neither a cluster nor a recorded session)"
            )),
            Mode::Replay { exchanges, .. } => {
                let mut exchanges = exchanges.lock().map_err(|e| e.to_string())?;
                let Some(exchange) = exchanges.pop_front() else {
                    return Err("the list of recorded responses is empty".into());
                };
                let expected: CallbackRequestType = serde_yaml::from_str(&exchange.request)
                    .map_err(|e| format!("a recorded request cannot be read: {e}"))?;
                if expected != request {
                    return Err(format!(
                        "Replay error: unexpected request. Was expecting {expected:?}, got \
                         {request:?} instead"
                    ));
                }
                match exchange.response {
                    Response::Success { payload } => Ok(payload.into_bytes()),
                    Response::Error { message } => Err(message),
                }
            }
            Mode::Record {
                live, exchanges, ..
            } => {
                let answer = live.answer(&request);
                let response = match &answer {
                    Ok(body) => Response::Success {
                        payload: String::from_utf8_lossy(body).into_owned(),
                    },
                    Err(message) => Response::Error {
                        message: message.clone(),
                    },
                };
                let request = serde_yaml::to_string(&request).map_err(|e| e.to_string())?;
                if let Ok(mut exchanges) = exchanges.lock() {
                    exchanges.push(Exchange { request, response });
                }
                answer
            }
            Mode::Live(live) => live.answer(&request),
        }
    }

    /// Writes a recording out; warns of exchanges a replay left unused, as kwctl does.
    pub fn finish(&self) -> Result<()> {
        match &self.mode {
            Mode::Record {
                destination,
                exchanges,
                ..
            } => {
                let exchanges = exchanges.lock().map_err(|e| anyhow::anyhow!("{e}"))?;
                let text = serde_yaml::to_string(&*exchanges)?;
                std::fs::write(destination, text)
                    .with_context(|| format!("cannot write {}", destination.display()))
            }
            Mode::Replay { source, exchanges } => {
                let left = exchanges.lock().map(|e| e.len()).unwrap_or(0);
                if left > 0 {
                    eprintln!(
                        "Some of the recorded exchanges have not been replayed ({left} left in {})",
                        source.display()
                    );
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// The request a host call makes.
fn parse(operation: &str, payload: &[u8]) -> Result<CallbackRequestType, String> {
    match operation {
        "get_resource" => {
            let r: GetResourceRequest = serde_json::from_slice(payload)
                .map_err(|e| format!("Cannot decode get_resource request: {e}"))?;
            Ok(CallbackRequestType::KubernetesGetResource {
                api_version: r.api_version,
                kind: r.kind,
                name: r.name,
                namespace: r.namespace,
                disable_cache: r.disable_cache,
                field_masks: r.field_masks,
            })
        }
        "list_resources_all" => {
            let r: ListAllResourcesRequest = serde_json::from_slice(payload)
                .map_err(|e| format!("Cannot decode list_resources_all request: {e}"))?;
            Ok(CallbackRequestType::KubernetesListResourceAll {
                api_version: r.api_version,
                kind: r.kind,
                label_selector: r.label_selector,
                field_selector: r.field_selector,
                field_masks: r.field_masks,
            })
        }
        other => Err(format!(
            "host capability kubernetes/{other} is not available in policy-host"
        )),
    }
}

/// How long a found object is kept, as policy-evaluator keeps it.
#[cfg(feature = "cluster")]
const CACHED: Duration = Duration::from_secs(5);

/// Without the `cluster` feature there is no API server to read through.
#[cfg(not(feature = "cluster"))]
pub struct Live;

#[cfg(not(feature = "cluster"))]
impl Live {
    pub fn from_kubeconfig() -> Result<Live> {
        bail!("this policy-host was built without the cluster feature: it reads no API server")
    }

    fn answer(&self, _: &CallbackRequestType) -> Result<Vec<u8>, String> {
        Err("this policy-host reads no API server".into())
    }
}

#[cfg(feature = "cluster")]
/// Reads through an API server, as policy-evaluator does with kube-rs: each kind found once
/// through discovery, then `GET` of the object (or the list); found objects cached.
pub struct Live {
    api: Api,
    /// `apiVersion/kind` to (plural, namespaced).
    discovered: Mutex<HashMap<String, (String, bool)>>,
    cache: Mutex<HashMap<String, (Instant, Vec<u8>)>>,
}

#[cfg(feature = "cluster")]
impl Live {
    pub fn from_kubeconfig() -> Result<Live> {
        Ok(Live {
            api: Api::from_kubeconfig()?,
            discovered: Mutex::new(HashMap::new()),
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn answer(&self, request: &CallbackRequestType) -> Result<Vec<u8>, String> {
        let (api_version, kind) = request.resource();
        let (plural, namespaced) = self.discover(api_version, kind)?;
        let base = match api_version.split_once('/') {
            Some((group, version)) => format!("/apis/{group}/{version}"),
            None => format!("/api/{api_version}"),
        };
        let (path, cached, not_found) = match request {
            CallbackRequestType::KubernetesGetResource {
                name,
                namespace,
                disable_cache,
                ..
            } => {
                let path = match (namespaced, namespace) {
                    (true, Some(ns)) => format!("{base}/namespaces/{ns}/{plural}/{name}"),
                    _ => format!("{base}/{plural}/{name}"),
                };
                let not_found = format!(
                    "Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'"
                );
                (path, !disable_cache, Some(not_found))
            }
            CallbackRequestType::KubernetesListResourceAll {
                label_selector,
                field_selector,
                ..
            } => {
                let mut query = Vec::new();
                for (key, value) in [
                    ("labelSelector", label_selector),
                    ("fieldSelector", field_selector),
                ] {
                    if let Some(value) = value {
                        query.push(format!("{key}={}", encode(value)));
                    }
                }
                let path = match query.is_empty() {
                    true => format!("{base}/{plural}"),
                    false => format!("{base}/{plural}?{}", query.join("&")),
                };
                (path, false, None)
            }
        };
        if cached
            && let Ok(cache) = self.cache.lock()
            && let Some((at, body)) = cache.get(&path)
            && at.elapsed() < CACHED
        {
            return Ok(body.clone());
        }
        match self.api.get(&path)? {
            (200, body) => {
                if cached && let Ok(mut cache) = self.cache.lock() {
                    cache.insert(path, (Instant::now(), body.clone()));
                }
                Ok(body)
            }
            (404, _) if not_found.is_some() => Err(not_found.unwrap_or_default()),
            (status, body) => Err(format!(
                "the API server answered {status} to GET {path}: {}",
                String::from_utf8_lossy(&body)
            )),
        }
    }

    /// The resource's plural name and whether it is namespaced, from API discovery.
    fn discover(&self, api_version: &str, kind: &str) -> Result<(String, bool), String> {
        let key = format!("{api_version}/{kind}");
        if let Ok(found) = self.discovered.lock()
            && let Some(found) = found.get(&key)
        {
            return Ok(found.clone());
        }
        let path = match api_version.split_once('/') {
            Some((group, version)) => format!("/apis/{group}/{version}"),
            None => format!("/api/{api_version}"),
        };
        let (status, body) = self.api.get(&path)?;
        if status != 200 {
            return Err(format!(
                "Cannot find resource {kind} of {api_version}: the API server answered {status} \
                 to GET {path}"
            ));
        }
        #[derive(Deserialize)]
        struct List {
            resources: Vec<Discovered>,
        }
        #[derive(Deserialize)]
        struct Discovered {
            name: String,
            kind: String,
            namespaced: bool,
        }
        let list: List = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let found = (list.resources.into_iter())
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .map(|r| (r.name, r.namespaced))
            .ok_or_else(|| format!("Cannot find resource {kind} of {api_version}"))?;
        if let Ok(mut discovered) = self.discovered.lock() {
            discovered.insert(key, found.clone());
        }
        Ok(found)
    }
}

#[cfg(feature = "cluster")]
/// Percent-encodes a selector for a query string.
fn encode(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(feature = "cluster")]
/// The API server a kubeconfig names, reached with blocking HTTPS requests.
struct Api {
    server: String,
    client: reqwest::Client,
    token: Option<String>,
    runtime: tokio::runtime::Runtime,
}

#[cfg(feature = "cluster")]
impl Api {
    /// `$KUBECONFIG` (its first file), else `~/.kube/config`: the current context's cluster
    /// and user.
    fn from_kubeconfig() -> Result<Api> {
        let path = match std::env::var_os("KUBECONFIG") {
            Some(paths) => std::env::split_paths(&paths)
                .next()
                .context("KUBECONFIG is empty")?,
            None => {
                PathBuf::from(std::env::var_os("HOME").context("no HOME")?).join(".kube/config")
            }
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
        let config: Kubeconfig = serde_yaml::from_str(&text)
            .with_context(|| format!("{} is not a kubeconfig", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let context = (config.contexts.iter())
            .find(|c| c.name == config.current_context)
            .with_context(|| format!("no context {:?}", config.current_context))?;
        let cluster = (config.clusters.iter())
            .find(|c| c.name == context.context.cluster)
            .with_context(|| format!("no cluster {:?}", context.context.cluster))?;
        let user = (config.users.iter()).find(|u| u.name == context.context.user);
        let read = |data: &Option<String>, file: &Option<String>| -> Result<Option<Vec<u8>>> {
            use base64::Engine as _;
            if let Some(data) = data {
                return Ok(Some(
                    base64::engine::general_purpose::STANDARD.decode(data)?,
                ));
            }
            match file {
                Some(file) => Ok(Some(
                    std::fs::read(dir.join(file)).with_context(|| format!("cannot read {file}"))?,
                )),
                None => Ok(None),
            }
        };
        let mut builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5));
        if let Some(ca) = read(
            &cluster.cluster.certificate_authority_data,
            &cluster.cluster.certificate_authority,
        )? {
            for cert in reqwest::Certificate::from_pem_bundle(&ca)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        let mut token = None;
        if let Some(user) = user {
            let u = &user.user;
            token = match (&u.token, &u.token_file) {
                (Some(t), _) => Some(t.clone()),
                (None, Some(file)) => Some(
                    std::fs::read_to_string(dir.join(file))
                        .with_context(|| format!("cannot read {file}"))?
                        .trim()
                        .to_string(),
                ),
                _ => None,
            };
            let cert = read(&u.client_certificate_data, &u.client_certificate)?;
            let key = read(&u.client_key_data, &u.client_key)?;
            if let (Some(mut cert), Some(key)) = (cert, key) {
                cert.extend_from_slice(&key);
                builder = builder.identity(reqwest::Identity::from_pem(&cert)?);
            }
        }
        Ok(Api {
            server: cluster.cluster.server.trim_end_matches('/').to_string(),
            client: builder.build()?,
            token,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
        })
    }

    /// `GET path`: the status and the body.
    fn get(&self, path: &str) -> Result<(u16, Vec<u8>), String> {
        let url = format!("{}{path}", self.server);
        let mut request = self.client.get(&url).header("Accept", "application/json");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let send = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            Ok::<_, reqwest::Error>((status, response.bytes().await?.to_vec()))
        };
        // A host call is synchronous; inside `serve`'s runtime it blocks its worker thread.
        let result = match tokio::runtime::Handle::try_current() {
            Ok(handle) => tokio::task::block_in_place(|| handle.block_on(send)),
            Err(_) => self.runtime.block_on(send),
        };
        result.map_err(|e| format!("GET {url}: {e}"))
    }
}

#[cfg(feature = "cluster")]
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<NamedCluster>,
    #[serde(default)]
    contexts: Vec<NamedContext>,
    #[serde(default)]
    users: Vec<NamedUser>,
    #[serde(default)]
    current_context: String,
}

#[cfg(feature = "cluster")]
#[derive(Deserialize)]
struct NamedCluster {
    name: String,
    cluster: ClusterEntry,
}

#[cfg(feature = "cluster")]
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterEntry {
    server: String,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
}

#[cfg(feature = "cluster")]
#[derive(Deserialize)]
struct NamedContext {
    name: String,
    context: ContextEntry,
}

#[cfg(feature = "cluster")]
#[derive(Deserialize)]
struct ContextEntry {
    cluster: String,
    user: String,
}

#[cfg(feature = "cluster")]
#[derive(Deserialize)]
struct NamedUser {
    name: String,
    user: UserEntry,
}

#[cfg(feature = "cluster")]
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct UserEntry {
    token: Option<String>,
    token_file: Option<String>,
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = r#"- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: operators.coreos.com/v1alpha1
    kind: ClusterServiceVersion
    name: etcdoperator.v0.9.4
    namespace: operators
    disable_cache: false
  response:
    type: Success
    payload: '{"spec":{"replaces":"etcdoperator.v0.9.2"}}'
- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: operators.coreos.com/v1alpha1
    kind: ClusterServiceVersion
    name: etcdoperator.v0.9.2
    namespace: operators
    disable_cache: false
    field_masks: null
  response:
    type: Error
    message: Cannot find operators.coreos.com/v1alpha1/ClusterServiceVersion named 'etcdoperator.v0.9.2' inside of namespace 'Some("operators")'
"#;

    fn granted() -> Vec<Resource> {
        vec![Resource {
            api_version: "operators.coreos.com/v1alpha1".into(),
            kind: "ClusterServiceVersion".into(),
        }]
    }

    fn get(name: &str) -> Vec<u8> {
        format!(
            r#"{{"api_version":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","name":"{name}","namespace":"operators","disable_cache":false}}"#
        )
        .into_bytes()
    }

    #[test]
    fn a_session_replays_in_order_and_matches_each_request() {
        let dir = std::env::temp_dir().join(format!("caps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("session.yml");
        std::fs::write(&file, SESSION).unwrap();
        let caps = Capabilities::new(granted(), Some(&file), None, false).unwrap();
        let found = caps
            .call("get_resource", &get("etcdoperator.v0.9.4"))
            .unwrap();
        assert_eq!(found, br#"{"spec":{"replaces":"etcdoperator.v0.9.2"}}"#);
        let e = caps
            .call("get_resource", &get("etcdoperator.v0.9.2"))
            .unwrap_err();
        assert!(
            e.starts_with("Callback evaluation failure: Cannot find"),
            "{e}"
        );
        let e = caps.call("get_resource", &get("x")).unwrap_err();
        assert_eq!(
            e,
            "Callback evaluation failure: the list of recorded responses is empty"
        );

        let caps = Capabilities::new(granted(), Some(&file), None, false).unwrap();
        let e = caps.call("get_resource", &get("other")).unwrap_err();
        assert!(
            e.starts_with("Callback evaluation failure: Replay error: unexpected request"),
            "{e}"
        );
        let caps = Capabilities::new(Vec::new(), Some(&file), None, false).unwrap();
        let e = caps
            .call("get_resource", &get("etcdoperator.v0.9.4"))
            .unwrap_err();
        assert!(e.starts_with("Policy has not been granted access to Kubernetes operators.coreos.com/v1alpha1/ClusterServiceVersion resources"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn recorded_requests_are_written_as_kwctl_writes_them() {
        let request = CallbackRequestType::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: "x".into(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        };
        assert_eq!(
            serde_yaml::to_string(&request).unwrap(),
            "!KubernetesGetResource\napi_version: v1\nkind: Namespace\nname: x\nnamespace: null\ndisable_cache: false\n"
        );
    }
}
