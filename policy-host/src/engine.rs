//! Loads a Kubewarden policy module and calls it through waPC, as policy-server does:
//! `wapc` + `wasmtime-provider` with WASI, and the `kubewarden` host callback answering
//! `tracing`/`log` and, for a context-aware policy, `kubernetes` (`capabilities`). `Policy` is one instance reused across evaluations, as `kwctl run` and
//! `kwctl bench` use it; `PolicyPre` makes a fresh instance per evaluation, as policy-server
//! does.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use wapc::{WapcHost, WasiParams};
use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

use crate::capabilities::Capabilities;
use crate::host_capabilities::HostCapabilities;
use crate::memory::{GaugedMemoryCreator, MemoryGauge};

/// What the guest's `validate` returns (snake_case, as the Kubewarden SDK writes it).
#[derive(Debug, Deserialize)]
pub struct ValidationResponse {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    pub mutated_object: Option<Value>,
    pub audit_annotations: Option<serde_json::Map<String, Value>>,
    pub warnings: Option<Vec<String>>,
}

/// What the guest's `validate_settings` returns.
#[derive(Debug, Deserialize)]
pub struct SettingsValidationResponse {
    pub valid: bool,
    pub message: Option<String>,
}

/// One webhook matchCondition, as the module writes it.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
pub struct MatchCondition {
    pub name: String,
    pub expression: String,
}

/// What the guest's `match_conditions` returns.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MatchConditions {
    valid: bool,
    message: Option<String>,
    #[serde(default)]
    match_conditions: Vec<MatchCondition>,
}

pub struct Policy {
    host: WapcHost,
    memory: MemoryGauge,
}

impl Policy {
    pub fn load(module: &[u8]) -> Result<Policy> {
        Policy::load_with(module, Arc::new(Capabilities::none()))
    }

    /// Loads a module whose host calls of `kubernetes` `capabilities` answers.
    pub fn load_with(module: &[u8], capabilities: Arc<Capabilities>) -> Result<Policy> {
        let memory = MemoryGauge::default();
        let mut config = wasmtime::Config::new();
        // Copy-on-write memory images need wasmtime's own mmap memories; they only speed up
        // instantiation, not the calls measured here.
        config.memory_init_cow(false);
        config.with_host_memory(Arc::new(GaugedMemoryCreator(memory.clone())));
        let provider = (provider_builder(config, module, "reused")?.0.build())
            .context("cannot instantiate the policy module")?;
        let host = WapcHost::new(Box::new(provider), Some(host_callback(capabilities)))
            .context("cannot initialize the policy module (wapc_init)")?;
        Ok(Policy { host, memory })
    }

    /// The guest's raw answer to an operation; a trap or guest error is an `Err`.
    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>> {
        self.host
            .call(operation, payload)
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    pub fn protocol_version(&self) -> Result<String> {
        let raw = self.call("protocol_version", b"")?;
        serde_json::from_slice(&raw).context("protocol_version returned no JSON string")
    }

    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidationResponse> {
        let raw = self.call("validate_settings", &serde_json::to_vec(settings)?)?;
        serde_json::from_slice(&raw).context("validate_settings returned an unreadable answer")
    }

    /// The webhook matchConditions the module says its settings need (its own
    /// `match_conditions` call, which no Kubewarden host makes): `(name, expression)` pairs.
    pub fn match_conditions(&self, settings: &Value) -> Result<Vec<MatchCondition>> {
        let raw = self.call("match_conditions", &serde_json::to_vec(settings)?)?;
        let answer: MatchConditions = serde_json::from_slice(&raw)
            .context("match_conditions returned an unreadable answer")?;
        if !answer.valid {
            bail!(
                "the settings are not valid: {}",
                answer.message.unwrap_or_default()
            );
        }
        Ok(answer.match_conditions)
    }

    pub fn validate(&self, payload: &[u8]) -> Result<ValidationResponse> {
        let raw = self.call("validate", payload)?;
        serde_json::from_slice(&raw).context("validate returned an unreadable answer")
    }

    /// The guest's linear memory size in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.memory.bytes()
    }
}

/// The module ready to be instantiated, as policy-server 1.31 keeps it. policy-server gives
/// every request a fresh instance: `EvaluationEnvironment::validate_policy` rehydrates a
/// `PolicyEvaluatorPre` (`wasmtime::InstancePre`) and runs the guest's init functions, so
/// nothing a policy keeps in its memory outlives one request. Its engine is wasmtime's default
/// configuration with epoch interruption on (the default 2-second evaluation limit), which
/// adds an epoch check to every loop and function of the guest.
pub struct PolicyPre {
    pre: WasmtimeEngineProviderPre,
    /// The engine `serve` ticks (only a server has a clock for the deadlines).
    #[cfg(feature = "cluster")]
    engine: wasmtime::Engine,
    deadlines: EpochDeadlines,
}

/// policy-server's default evaluation limit, in seconds (`--policy-timeout`), which is also
/// its deadline in epoch ticks: it ticks its engine's epoch once a second.
pub const POLICY_TIMEOUT_SECONDS: u64 = 2;

impl PolicyPre {
    /// The module with policy-server's default deadlines (2 ticks). Nothing ticks the epoch
    /// unless the caller does ([`PolicyPre::engine`]): without a ticker the deadlines only make
    /// wasmtime check them as it does there.
    pub fn load(module: &[u8]) -> Result<PolicyPre> {
        PolicyPre::load_with_deadline(module, POLICY_TIMEOUT_SECONDS)
    }

    /// The module, its init and every call interrupted after `ticks` epoch ticks.
    pub fn load_with_deadline(module: &[u8], ticks: u64) -> Result<PolicyPre> {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        #[cfg_attr(not(feature = "cluster"), allow(unused_variables))]
        let (builder, engine) = provider_builder(config, module, "epoch")?;
        let pre = builder
            .build_pre()
            .context("cannot prepare the policy module")?;
        let deadlines = EpochDeadlines {
            wapc_init: ticks,
            wapc_func: ticks,
        };
        Ok(PolicyPre {
            pre,
            #[cfg(feature = "cluster")]
            engine,
            deadlines,
        })
    }

    /// The engine whose epoch the deadlines count: a server ticks it (`increment_epoch`).
    #[cfg(feature = "cluster")]
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.engine
    }

    /// A fresh instance, its init functions run: what policy-server makes for each request.
    pub fn instantiate(&self) -> Result<WapcHost> {
        self.instantiate_with(Arc::new(Capabilities::none()))
    }

    /// A fresh instance whose host calls of `kubernetes` `capabilities` answers.
    pub fn instantiate_with(&self, capabilities: Arc<Capabilities>) -> Result<WapcHost> {
        let provider = (self.pre.rehydrate(Some(self.deadlines)))
            .context("cannot instantiate the policy module")?;
        WapcHost::new(Box::new(provider), Some(host_callback(capabilities)))
            .context("cannot initialize the policy module (wapc_init)")
    }
}

/// A waPC provider for `module` with WASI, in an engine of `config` (`name` tells the cache
/// which configuration it is). `perf record` can name the guest's functions when wasmtime
/// writes a perf map, and show their instructions (`perf annotate`, after `perf inject --jit`)
/// with a jitdump (build the module with its name section: see README, Performance).
fn provider_builder(
    mut config: wasmtime::Config,
    module: &[u8],
    name: &str,
) -> Result<(WasmtimeEngineProviderBuilder<'static>, wasmtime::Engine)> {
    if std::env::var_os("POLICY_HOST_PERF_MAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    if std::env::var_os("POLICY_HOST_JITDUMP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::JitDump);
    }
    let engine = wasmtime::Engine::new(&config).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let module = compiled(&engine, module, name)?;
    let builder = WasmtimeEngineProviderBuilder::new()
        .engine(engine.clone())
        .module(module)
        .wasi_params(WasiParams::default());
    Ok((builder, engine))
}

/// The module compiled for `engine`, from the cache when it was compiled before: the e2e
/// suite loads the same module a few hundred times, and policy-host's cranelift is built
/// unoptimized (Cargo.toml, profile `host`). The cache is `target/host/module-cache` beside the
/// binary (or `$POLICY_HOST_CACHE`), one file per module and engine configuration (`config`
/// names it), named by the module's SHA-256; a file that does not load (another wasmtime) is
/// compiled again and replaced.
fn compiled(engine: &wasmtime::Engine, bytes: &[u8], config: &str) -> Result<wasmtime::Module> {
    use sha2::{Digest, Sha256};
    let dir = match std::env::var_os("POLICY_HOST_CACHE") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::env::current_exe()?
            .parent()
            .context("policy-host has no directory")?
            .join("module-cache"),
    };
    let digest: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = dir.join(format!("{digest}-{config}.cwasm"));
    if path.exists() {
        // SAFETY: the file is one this function wrote with `Module::serialize` for this
        // module's bytes (its name is their digest); wasmtime checks that it was produced by
        // the same wasmtime version and a compatible configuration, and refuses it otherwise.
        if let Ok(module) = unsafe { wasmtime::Module::deserialize_file(engine, &path) } {
            return Ok(module);
        }
    }
    let module = wasmtime::Module::new(engine, bytes).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    // The cache is an optimization: failing to write it is not an error.
    let _ = (|| -> Result<()> {
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!("{digest}.{}.tmp", std::process::id()));
        std::fs::write(
            &tmp,
            module.serialize().map_err(|e| anyhow::anyhow!("{e:#}"))?,
        )?;
        std::fs::rename(&tmp, &path)?;
        Ok(())
    })();
    Ok(module)
}

/// The validation payload policy-server sends: the bare AdmissionRequest and the settings.
pub fn validation_payload(request: &serde_json::value::RawValue, settings: &Value) -> Vec<u8> {
    format!(r#"{{"request":{},"settings":{settings}}}"#, request.get()).into_bytes()
}

/// The waPC host callback of one policy.
type Callback = Box<
    dyn Fn(
            u64,
            &str,
            &str,
            &str,
            &[u8],
        ) -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>
        + Send
        + Sync,
>;

/// The `kubewarden` host callback: logging is always allowed, `kubernetes` as `capabilities`
/// grants it, other capabilities refused.
fn host_callback(capabilities: Arc<Capabilities>) -> Callback {
    Box::new(move |_id, binding, namespace, operation, payload| {
        match (binding, namespace, operation) {
            ("kubewarden", "tracing", "log") => {
                log_guest_event(payload);
                Ok(Vec::new())
            }
            ("kubewarden", "kubernetes", _) => {
                capabilities.call(operation, payload).map_err(Into::into)
            }
            ("kubewarden", _, _) if !capabilities.allows(namespace, operation) => {
                Err(HostCapabilities::denied(namespace, operation).into())
            }
            _ => Err(format!(
                "host capability {binding}/{namespace}/{operation} is not available in \
                 policy-host"
            )
            .into()),
        }
    })
}

fn log_guest_event(payload: &[u8]) {
    match serde_json::from_slice::<Value>(payload) {
        Ok(event) => {
            let level = event["level"].as_str().unwrap_or("info");
            let message = event["message"].as_str().unwrap_or("");
            eprintln!("[policy {level}] {message} {event}");
        }
        Err(_) => eprintln!("[policy] {}", String::from_utf8_lossy(payload)),
    }
}

/// Reads a module from a path, a `file://` URL or a `registry://` reference.
pub fn read_module(location: &str) -> Result<Vec<u8>> {
    if location.starts_with("registry://") {
        #[cfg(feature = "registry")]
        return crate::registry::pull(location);
        #[cfg(not(feature = "registry"))]
        bail!("{location}: this policy-host was built without the registry feature");
    }
    if location.starts_with("https://") {
        bail!("{location}: https:// modules are not supported by policy-host");
    }
    let path = location.strip_prefix("file://").unwrap_or(location);
    std::fs::read(path).with_context(|| format!("cannot read the policy module {path}"))
}
