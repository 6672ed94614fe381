//! policy-host: runs a Kubewarden policy module the way policy-server and kwctl do.
//!
//! Neither kwctl nor policy-server can be installed here, so this host, built on the same
//! crates (`wapc` + `wasmtime-provider`), offers kwctl's command line for `run`, `bench`,
//! `annotate`, `inspect`, `push` and `pull`.

mod artifacthub;
mod bench;
mod capabilities;
mod deploy;
mod engine;
mod host_capabilities;
mod memory;
mod metadata;
#[cfg(all(test, feature = "selects"))]
mod proof;
#[cfg(feature = "race")]
mod race;
#[cfg(feature = "registry")]
mod registry;
mod review;
#[cfg(feature = "cluster")]
mod serve;
mod soak;
#[cfg(feature = "cluster")]
mod webhook;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use engine::{Policy, read_module, validation_payload};

/// policy-server's allocator, configured as policy-server 1.31 configures it (its
/// `src/lib.rs`). The host's side of a request allocates: parsing the request into a tree and
/// serializing the payload (`bench --end-to-end`), and the waPC call's copies. With glibc's
/// allocator that cost moved with where earlier allocations had landed: the same null module
/// took 19.2 to 21.2 µs a 2 KB request end to end depending on the length of its file's path,
/// and a module that spun for 0.17 µs read 0.85x-0.97x of it. With jemalloc the host's side
/// costs what it costs in policy-server (see README, Performance).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "malloc_conf")]
pub static malloc_conf: &[u8] = b"background_thread:true,tcache_max:4096,dirty_decay_ms:5000,\
muzzy_decay_ms:5000,abort_conf:true,prof:true,prof_active:false,lg_prof_sample:19\0";

#[derive(Parser)]
#[command(name = "policy-host", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate an admission request, like `kwctl run`.
    Run(RunArgs),
    /// Benchmark `validate` on one instance, like `kwctl bench` (or a fresh instance per
    /// evaluation, as policy-server serves requests).
    Bench {
        #[command(flatten)]
        run: RunArgs,
        /// Seconds of warm-up before measuring.
        #[arg(long, default_value = "1")]
        warm_up_time: f64,
        /// Seconds spent measuring.
        #[arg(long, default_value = "3")]
        measurement_time: f64,
        #[arg(long, default_value = "50")]
        num_samples: usize,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Also do the host's per-request work, as policy-server does: parse the request JSON
        /// and serialize the guest payload on every evaluation.
        #[arg(long)]
        end_to_end: bool,
        /// Evaluate on a fresh instance every time, as policy-server 1.31 serves each request
        /// (its engine configuration too: epoch interruption on). Without it, one instance
        /// is reused, as `kwctl bench` does.
        #[arg(long)]
        fresh_instance: bool,
    },
    /// Store metadata in the module, like `kwctl annotate`.
    Annotate {
        #[arg(short = 'm', long = "metadata-path")]
        metadata: PathBuf,
        #[arg(short = 'u', long = "usage-path")]
        usage: Option<PathBuf>,
        #[arg(short = 'o', long = "output-path")]
        output: PathBuf,
        module: String,
    },
    /// Print the metadata stored in a module, like `kwctl inspect`.
    Inspect { module: String },
    /// Generate files, like `kwctl scaffold`.
    Scaffold {
        #[command(subcommand)]
        what: Scaffold,
    },
    /// Check a ClusterAdmissionPolicy manifest and validate its settings with the module;
    /// prints the spec as JSON.
    VerifyManifest { manifest: PathBuf, module: String },
    #[cfg(feature = "selects")]
    /// Say, for each request, whether the API server would send it to the policy of a
    /// ClusterAdmissionPolicy manifest (rules, objectSelector, matchConditions): one line each,
    /// `sent FILE` or `not sent FILE: why`.
    Selects {
        manifest: PathBuf,
        /// Request files (AdmissionRequest or AdmissionReview).
        #[arg(short = 'r', long = "request-path", required = true)]
        requests: Vec<PathBuf>,
        /// Also judge each request with this module and the manifest's settings, every lookup
        /// failing (so that it refuses all it could refuse): a request it refuses that is not
        /// sent is a false skip, printed as `false skip FILE: message`, and the command fails.
        /// A request the break-glass condition (`not-break-glass`) keeps out is no skip.
        #[arg(long)]
        judge: Option<String>,
        /// The API server's minor version (1.x): matchConditions select from 1.28 on (before
        /// 1.27 kubewarden-controller drops them; 1.27's API server drops them unless its
        /// alpha gate is on).
        #[arg(long = "kubernetes-minor", default_value = "30")]
        kubernetes_minor: u32,
    },
    /// Print the webhook matchConditions that a policy's settings need, as the module
    /// generates them (the writes it judges: a CREATE that carries an owner marker, an UPDATE
    /// that changes one; with bindings, every write of an owned object), for
    /// spec.matchConditions; with --write, put them into the manifest.
    MatchConditions {
        /// The settings of this ClusterAdmissionPolicy manifest.
        #[arg(long, conflicts_with_all = ["settings_json", "settings_path"])]
        manifest: Option<PathBuf>,
        /// Settings as a JSON string.
        #[arg(long = "settings-json")]
        settings_json: Option<String>,
        /// Settings file, YAML or JSON.
        #[arg(short = 's', long = "settings-path")]
        settings_path: Option<PathBuf>,
        /// Write the conditions into --manifest in place of the ones it carries.
        #[arg(long, requires = "manifest")]
        write: bool,
        module: String,
    },
    #[cfg(feature = "race")]
    /// Race reconcilers over a real etcd through the API server's write path: ownership
    /// checked by each client, or by the policy at admission (see src/race/mod.rs).
    Race {
        /// Scenarios to run (all by default).
        #[arg(long = "scenario", value_enum)]
        scenarios: Vec<race::Scenario>,
        /// Modes to run (both by default).
        #[arg(long = "mode", value_enum)]
        modes: Vec<race::Mode>,
        #[arg(long, default_value = "6")]
        writers: usize,
        #[arg(long, default_value = "12")]
        objects: usize,
        /// Seconds each run lasts at most.
        #[arg(long, default_value = "10")]
        duration: f64,
        /// Writes each writer makes at most.
        #[arg(long, default_value = "1000")]
        writes: usize,
        /// Mean think time between a writer's read and its write, in milliseconds.
        #[arg(long = "think-ms", default_value = "2")]
        think_ms: f64,
        #[arg(long, default_value = "1")]
        seed: u64,
        /// The etcd binary (Debian package etcd-server).
        #[arg(long, default_value = "etcd")]
        etcd: String,
        /// Fail on any admission-mode violation, or a client-check run with none.
        #[arg(long)]
        require: bool,
        /// Race through these kube-apiservers (comma-separated URLs; writers are split
        /// between them) instead of the local write path: the policy is the one behind their
        /// webhook (control-plane/cluster.sh), and MODULE is not used.
        #[arg(long, value_delimiter = ',')]
        apiserver: Vec<String>,
        /// The bearer token for --apiserver.
        #[arg(long, env = "APISERVER_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// The PEM CA of --apiserver.
        #[arg(long = "ca-file")]
        ca_file: Option<PathBuf>,
        /// The etcd that --apiserver stores in (for the checker's history).
        #[arg(long = "etcd-url")]
        etcd_url: Option<String>,
        /// The webhook backend's request log (`policy-host serve --log`), to count how often
        /// the API servers ran admission.
        #[arg(long = "webhook-log")]
        webhook_log: Option<PathBuf>,
        /// Write styles through --apiserver (all by default).
        #[arg(long = "style", value_enum)]
        styles: Vec<race::apiserver::Style>,
        /// With --apiserver: also fail when a scenario's client-check runs find no race in
        /// any style.
        #[arg(long = "require-race")]
        require_race: bool,
        /// The policy module (local write path only).
        module: Option<String>,
    },
    #[cfg(feature = "registry")]
    /// Push an annotated module to an OCI registry, like `kwctl push`.
    Push {
        module: String,
        /// registry://HOST/REPO:TAG
        destination: String,
    },
    #[cfg(feature = "registry")]
    /// Pull a module from an OCI registry, like `kwctl pull`.
    Pull {
        /// registry://HOST/REPO:TAG or registry://HOST/REPO@sha256:...
        source: String,
        #[arg(short = 'o', long = "output-path")]
        output: PathBuf,
    },
    /// Evaluate requests over and over on one instance: answers must match a fresh
    /// instance's, and guest memory must stop growing (the leak check).
    Soak {
        /// Request files (AdmissionRequest or AdmissionReview), evaluated in turn.
        #[arg(short = 'r', long = "request-path", required = true)]
        requests: Vec<PathBuf>,
        /// Settings (JSON), each tried with every request in turn.
        #[arg(long = "settings-json", default_value = "{}")]
        settings: Vec<String>,
        #[arg(short = 'n', long, default_value = "100000")]
        evaluations: usize,
        module: String,
    },
    #[cfg(feature = "cluster")]
    /// Serve policies over HTTPS with policy-server's contract (`POST /validate/<id>` with an
    /// AdmissionReview, a fresh instance per request), for a real API server's webhooks.
    Serve(serve::ServeArgs),
    #[cfg(feature = "cluster")]
    /// Print the ValidatingWebhookConfiguration that kubewarden-controller makes of each
    /// ClusterAdmissionPolicy or AdmissionPolicy manifest (a JSON List), and write the
    /// policies.yml that serves them.
    Webhook {
        /// ClusterAdmissionPolicy and AdmissionPolicy manifests.
        #[arg(required = true)]
        manifests: Vec<PathBuf>,
        /// The backend's base URL; each webhook calls `<url>/validate/<policy id>`.
        #[arg(long)]
        url: String,
        /// The PEM CA that signed the backend's certificate (the webhooks' caBundle).
        #[arg(long = "ca-file")]
        ca_file: PathBuf,
        /// The API server's minor version (1.x): matchConditions from 1.27 on (the controller
        /// copies them where the server's OpenAPI lists the field).
        #[arg(long = "kubernetes-minor")]
        kubernetes_minor: u32,
        /// The namespace the controller runs in (its --deployments-namespace), which a
        /// ClusterAdmissionPolicy's webhook leaves out: `kubewarden` as its chart installs it,
        /// `cattle-kubewarden-system` under Rancher.
        #[arg(long, default_value = webhook::KUBEWARDEN_NAMESPACE)]
        namespace: String,
        /// The module every policy is served with (default: each manifest's spec.module).
        #[arg(long)]
        module: Option<String>,
        /// The module one policy is served with: NAME=LOCATION (NAME as in metadata.name).
        #[arg(long = "module-for")]
        module_for: Vec<String>,
        /// Write policy-server's policies.yml here.
        #[arg(long = "policies-out")]
        policies_out: Option<PathBuf>,
        /// The PolicyServer manifest the policies run on: its
        /// `spec.namespacedPoliciesCapabilities` is what an AdmissionPolicy may call.
        #[arg(long = "policy-server")]
        policy_server: Option<PathBuf>,
        /// The Kubewarden version whose controller is imitated: from 1.37.2 a policy's webhook
        /// and id are `kw.cap.<name>` (`kw.ap.<namespace>.<name>`), before `clusterwide-<name>`
        /// (`namespaced-<namespace>-<name>`).
        #[arg(long, default_value = "1.38")]
        kubewarden: String,
    },
    #[cfg(feature = "race")]
    /// Time one block of a preset's writes through a kube-apiserver, in the configuration it
    /// runs now, each write appended to a record (see src/race/latency.rs,
    /// scripts/cluster-latency.sh).
    Latency {
        /// The kube-apiserver's URL.
        #[arg(long)]
        apiserver: String,
        #[arg(long, env = "APISERVER_TOKEN", hide_env_values = true)]
        token: String,
        #[arg(long = "ca-file")]
        ca_file: PathBuf,
        /// Writes of each kind in the block, after the warm-up.
        #[arg(long, default_value = "200")]
        writes: usize,
        #[arg(long = "warm-up", default_value = "20")]
        warm_up: usize,
        /// The configuration the API server runs, for the table.
        #[arg(long)]
        mode: String,
        /// The backend's name, for the table.
        #[arg(long, default_value = "policy-host serve")]
        backend: String,
        /// The preset whose writes are measured.
        #[arg(long, value_enum, default_value = "olm-v1")]
        preset: race::latency::Preset,
        /// The bearer token of ClusterExtension latency's installer (--preset olm-v1-operator).
        #[arg(
            long = "installer-token",
            env = "INSTALLER_TOKEN",
            hide_env_values = true
        )]
        installer_token: Option<String>,
        /// Append each write here, one JSON line.
        #[arg(long)]
        record: PathBuf,
    },
    /// Send raw bytes to a guest function and print its raw answer (for hostile inputs the
    /// API server would never send). Exits non-zero when the guest traps or errs.
    Call {
        /// The guest function: validate, validate_settings or protocol_version.
        operation: String,
        /// File whose bytes are the payload, unchanged.
        #[arg(short = 'p', long = "payload-path")]
        payload: PathBuf,
        module: String,
    },
}

#[derive(Subcommand)]
enum Scaffold {
    /// artifacthub-pkg.yml from metadata.yml, as `kwctl scaffold artifacthub` writes it.
    Artifacthub {
        #[arg(short = 'm', long = "metadata-path")]
        metadata: PathBuf,
        #[arg(short = 'q', long = "questions-path")]
        questions: Option<PathBuf>,
        /// The current artifacthub-pkg.yml: its createdAt is kept while the version is the same.
        #[arg(long = "previous")]
        previous: Option<PathBuf>,
        /// Write the package here instead of to standard output.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
}

#[derive(Args)]
struct RunArgs {
    /// File holding an AdmissionRequest or an AdmissionReview.
    #[arg(short = 'r', long = "request-path")]
    request: PathBuf,
    /// Settings as a JSON string.
    #[arg(long = "settings-json")]
    settings_json: Option<String>,
    /// Settings file, YAML or JSON.
    #[arg(short = 's', long = "settings-path")]
    settings_path: Option<PathBuf>,
    /// Let the policy look up the Kubernetes kinds its metadata lists
    /// (`contextAwareResources` of an annotated module), through the kubeconfig's cluster or a
    /// recorded session.
    #[arg(long = "allow-context-aware")]
    allow_context_aware: bool,
    /// Answer the policy's host calls from this session (kwctl's format), in order.
    #[arg(long = "replay-host-capabilities-interactions")]
    replay: Option<PathBuf>,
    /// Answer them through the cluster, and write the exchanges to this file.
    #[arg(long = "record-host-capabilities-interactions")]
    record: Option<PathBuf>,
    /// Host capabilities the policy may call, as kwctl 1.36 takes them: `*` (the default),
    /// a path (`kubernetes/get_resource`) or a prefix (`kubernetes/*`); repeatable. A call
    /// outside them is refused in policy-evaluator 1.36's words.
    #[arg(long = "allowed-host-capabilities", num_args = 0.., default_values = ["*"])]
    allowed_host_capabilities: Vec<String>,
    /// The policy module: a path or a file:// URL.
    module: String,
}

impl RunArgs {
    /// What the policy may look up: with --allow-context-aware, the kinds its metadata lists.
    fn capabilities(&self, module: &[u8]) -> Result<std::sync::Arc<capabilities::Capabilities>> {
        let granted = match self.allow_context_aware {
            true => metadata::read(module)?
                .map(|m| m.context_aware_resources)
                .unwrap_or_default(),
            false => Vec::new(),
        };
        let caps = capabilities::Capabilities::new(
            granted,
            self.replay.as_deref(),
            self.record.as_deref(),
            self.allow_context_aware,
        )?
        .allowing(
            host_capabilities::HostCapabilities::new(&self.allowed_host_capabilities)
                .context("Invalid host capabilities pattern")?,
        );
        Ok(std::sync::Arc::new(caps))
    }

    /// Loads the module and the request, and validates the settings first, as kwctl does.
    fn prepare(
        &self,
    ) -> Result<(
        Policy,
        review::AdmissionRequest,
        Vec<u8>,
        std::sync::Arc<capabilities::Capabilities>,
    )> {
        let module = read_module(&self.module)?;
        let capabilities = self.capabilities(&module)?;
        let policy = Policy::load_with(&module, capabilities.clone())?;
        let settings =
            review::read_settings(self.settings_json.as_deref(), self.settings_path.as_deref())?;
        let answer = policy
            .validate_settings(&settings)
            .context("Provided settings are not valid: validate_settings failed")?;
        if !answer.valid {
            bail!(
                "Provided settings are not valid: {}",
                answer.message.unwrap_or_default()
            );
        }
        let request = review::read_request(&self.request)?;
        let payload = validation_payload(&request.raw, &settings);
        Ok((policy, request, payload, capabilities))
    }
}

fn main() -> ExitCode {
    // The TLS crypto provider of the HTTP clients (registry, race) and of `serve`: ring (see
    // Cargo.toml).
    #[cfg(any(feature = "registry", feature = "race", feature = "cluster"))]
    let _ = rustls::crypto::ring::default_provider().install_default();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        #[cfg(feature = "cluster")]
        Command::Serve(args) => serve::serve(&args)?,
        #[cfg(feature = "cluster")]
        Command::Webhook {
            manifests,
            url,
            ca_file,
            kubernetes_minor,
            module,
            module_for,
            policies_out,
            policy_server,
            kubewarden,
            namespace,
        } => {
            let naming = webhook::Naming::of(&kubewarden)?;
            let ca = std::fs::read(&ca_file)
                .with_context(|| format!("cannot read {}", ca_file.display()))?;
            let namespaced = match &policy_server {
                Some(path) => webhook::namespaced_capabilities(
                    &std::fs::read_to_string(path)
                        .with_context(|| format!("cannot read {}", path.display()))?,
                )
                .with_context(|| path.display().to_string())?,
                None => None,
            };
            let mut items = Vec::new();
            let mut policies = serde_json::Map::new();
            for path in &manifests {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let policy = webhook::ClusterAdmissionPolicy::read(&text)
                    .with_context(|| path.display().to_string())?;
                items.push(policy.webhook_configuration(
                    &url,
                    &ca,
                    kubernetes_minor,
                    naming,
                    &namespace,
                )?);
                let own = module_for.iter().find_map(|m| {
                    m.split_once('=')
                        .filter(|(name, _)| *name == policy.name)
                        .map(|(_, location)| location.to_string())
                });
                let location = match (own, &module) {
                    (Some(own), _) => own,
                    (None, Some(m)) => m.clone(),
                    (None, None) => policy.spec["module"].as_str().unwrap_or("").to_string(),
                };
                policies.insert(
                    policy.unique_name(naming),
                    policy.policies_entry(&location, namespaced.as_deref()),
                );
            }
            if let Some(out) = policies_out {
                std::fs::write(&out, serde_yaml::to_string(&policies)?)
                    .with_context(|| format!("cannot write {}", out.display()))?;
            }
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        Command::Run(args) => {
            let (policy, request, payload, capabilities) = args.prepare()?;
            // One line, as `kwctl run` prints it.
            // kwctl run lets a policy mutate (its policy id is "policy-from-cli").
            let mutation = review::Mutation {
                allowed: true,
                policy_id: "policy-from-cli",
            };
            let response = review::admission_response(
                &request.uid,
                policy.validate(&payload),
                request.raw.get(),
                mutation,
            );
            println!("{}", serde_json::to_string(&response)?);
            capabilities.finish()?;
        }
        Command::Bench {
            run,
            warm_up_time,
            measurement_time,
            num_samples,
            json,
            end_to_end,
            fresh_instance,
        } => {
            let (policy, request, payload, _) = run.prepare()?;
            let pre = match fresh_instance {
                true => Some(engine::PolicyPre::load(&read_module(&run.module)?)?),
                false => None,
            };
            let instance = match &pre {
                Some(pre) => bench::Instance::Fresh(pre),
                None => bench::Instance::Reused,
            };
            let settings =
                review::read_settings(run.settings_json.as_deref(), run.settings_path.as_deref())?;
            let scope = if end_to_end {
                bench::Scope::EndToEnd {
                    request: request.raw.get(),
                    settings: &settings,
                }
            } else {
                bench::Scope::Guest
            };
            let report = bench::bench(
                &policy,
                &instance,
                &payload,
                &scope,
                Duration::from_secs_f64(warm_up_time),
                Duration::from_secs_f64(measurement_time),
                num_samples,
            )?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                println!(
                    "validate: min {:.2} µs, median {:.2} µs, p99 {:.2} µs over {} samples \
                     ({} evaluations); payload {} bytes, accepted {}, guest memory {} bytes",
                    report.min_ns / 1e3,
                    report.median_ns / 1e3,
                    report.p99_ns / 1e3,
                    report.samples,
                    report.evaluations,
                    report.payload_bytes,
                    report.accepted,
                    report.memory_bytes
                );
            }
        }
        Command::Annotate {
            metadata,
            usage,
            output,
            module,
        } => {
            let wasm = read_module(&module)?;
            let protocol = Policy::load(&wasm)?.protocol_version()?;
            let yaml = read_text(&metadata)?;
            let usage = usage.as_deref().map(read_text).transpose()?;
            let metadata = metadata::prepare(&yaml, usage, protocol)?;
            let used = host_capabilities::used_by(&wasm)?;
            for warning in metadata::capability_warnings(&metadata, &used) {
                eprintln!("WARN {warning}");
            }
            let annotated = metadata::annotate(&wasm, &metadata)?;
            std::fs::write(&output, annotated)
                .with_context(|| format!("cannot write {}", output.display()))?;
        }
        Command::Scaffold {
            what:
                Scaffold::Artifacthub {
                    metadata,
                    questions,
                    previous,
                    output,
                },
        } => {
            let metadata = metadata::Metadata::from_yaml(&read_text(&metadata)?)?;
            let questions = questions.as_deref().map(read_text).transpose()?;
            let previous = previous.filter(|p| p.exists());
            let previous = previous.as_deref().map(read_text).transpose()?;
            let now = std::process::Command::new("date")
                .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .context("cannot read the date")?;
            let package =
                artifacthub::scaffold(&metadata, questions.as_deref(), previous.as_deref(), &now)?;
            match output {
                Some(path) => std::fs::write(&path, package)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                // As kwctl: the document, then a line feed of its own (an empty last line).
                None => println!("{package}"),
            }
        }
        Command::VerifyManifest { manifest, module } => {
            let policy = Policy::load(&read_module(&module)?)?;
            let spec = deploy::verify(&read_text(&manifest)?, &policy).with_context(|| {
                format!("{} is not a valid policy manifest", manifest.display())
            })?;
            println!("{}", serde_json::to_string(&spec)?);
        }
        #[cfg(feature = "race")]
        Command::Race {
            scenarios,
            modes,
            writers,
            objects,
            duration,
            writes,
            think_ms,
            seed,
            etcd,
            require,
            apiserver,
            token,
            ca_file,
            etcd_url,
            webhook_log,
            styles,
            require_race,
            module,
        } => {
            use clap::ValueEnum;
            let scenarios = if scenarios.is_empty() {
                race::Scenario::value_variants().to_vec()
            } else {
                scenarios
            };
            let modes = if modes.is_empty() {
                race::Mode::value_variants().to_vec()
            } else {
                modes
            };
            let mut opts = race::Options {
                module: Vec::new(),
                etcd,
                writers,
                objects,
                duration: Duration::from_secs_f64(duration),
                writes,
                think: Duration::from_secs_f64(think_ms / 1000.0),
                seed,
            };
            if apiserver.is_empty() {
                let module = module.context("the policy module is missing")?;
                opts.module = read_module(&module)?;
                race::race(&scenarios, &modes, &opts, require)?;
            } else {
                let ca_file = ca_file.context("--apiserver needs --ca-file")?;
                let cluster = race::apiserver::Cluster {
                    urls: apiserver,
                    token: token.context("--apiserver needs --token (or APISERVER_TOKEN)")?,
                    ca_pem: std::fs::read(&ca_file)
                        .with_context(|| format!("cannot read {}", ca_file.display()))?,
                    etcd: etcd_url.context("--apiserver needs --etcd-url")?,
                    webhook_log,
                };
                let styles = if styles.is_empty() {
                    race::apiserver::Style::value_variants().to_vec()
                } else {
                    styles
                };
                race::race_apiserver(
                    &cluster,
                    &scenarios,
                    &modes,
                    &styles,
                    &opts,
                    (require, require_race),
                )?;
            }
        }
        #[cfg(feature = "race")]
        Command::Latency {
            apiserver,
            token,
            ca_file,
            writes,
            warm_up,
            mode,
            backend,
            preset,
            installer_token,
            record,
        } => {
            let cluster = race::apiserver::Cluster {
                urls: vec![apiserver],
                token,
                ca_pem: std::fs::read(&ca_file)
                    .with_context(|| format!("cannot read {}", ca_file.display()))?,
                etcd: String::new(),
                webhook_log: None,
            };
            let block = race::latency::Block {
                preset,
                mode: &mode,
                backend: &backend,
                writes,
                warm_up,
                record: &record,
            };
            race::latency::latency(&cluster, &block, installer_token.as_deref())?;
        }
        #[cfg(feature = "selects")]
        Command::Selects {
            manifest,
            requests,
            judge,
            kubernetes_minor,
        } => {
            let manifest_text = read_text(&manifest)?;
            let manifest_text = match kubernetes_minor {
                deploy::MATCH_CONDITIONS_ON.. => manifest_text,
                _ => deploy::without_match_conditions(&manifest_text)?,
            };
            let judge = match judge {
                Some(module) => {
                    let doc: serde_yaml::Value = serde_yaml::from_str(&manifest_text)
                        .with_context(|| format!("{} is not YAML", manifest.display()))?;
                    let settings: serde_json::Value =
                        serde_json::to_value(&doc["spec"]["settings"])?;
                    let settings = match settings {
                        serde_json::Value::Null => serde_json::json!({}),
                        s => s,
                    };
                    Some((Policy::load(&read_module(&module)?)?, settings))
                }
                None => None,
            };
            let mut false_skips = 0;
            for path in requests {
                let read = review::read_request(&path)?;
                let request: serde_json::Value = serde_json::from_str(read.raw.get())
                    .with_context(|| format!("{} is not JSON", path.display()))?;
                let why = match deploy::selects(&manifest_text, &request)
                    .with_context(|| format!("{} on {}", manifest.display(), path.display()))?
                {
                    Ok(()) => {
                        println!("sent {}", path.display());
                        continue;
                    }
                    Err(why) => why,
                };
                println!("not sent {}: {why}", path.display());
                // Break glass bypasses the policy by design: no skip of the selection's.
                if why.contains(deploy::BREAK_GLASS) {
                    continue;
                }
                if let Some((policy, settings)) = &judge {
                    let answer = policy.validate(&validation_payload(&read.raw, settings))?;
                    if !answer.accepted {
                        false_skips += 1;
                        println!(
                            "false skip {}: {}",
                            path.display(),
                            answer.message.unwrap_or_default()
                        );
                    }
                }
            }
            if false_skips > 0 {
                bail!(
                    "{false_skips} requests that the module refuses are not sent to it by {}",
                    manifest.display()
                );
            }
        }
        Command::MatchConditions {
            manifest,
            settings_json,
            settings_path,
            write,
            module,
        } => {
            let policy = Policy::load(&read_module(&module)?)?;
            let text = manifest.as_deref().map(read_text).transpose()?;
            let settings = match &text {
                Some(text) => {
                    let doc: serde_yaml::Value =
                        serde_yaml::from_str(text).context("the manifest is not YAML")?;
                    match serde_json::to_value(&doc["spec"]["settings"])? {
                        serde_json::Value::Null => serde_json::json!({}),
                        s => s,
                    }
                }
                None => review::read_settings(settings_json.as_deref(), settings_path.as_deref())?,
            };
            let conditions = policy.match_conditions(&settings)?;
            match (write, manifest, text) {
                (true, Some(path), Some(text)) => {
                    let updated = deploy::with_conditions(&text, &conditions)?;
                    std::fs::write(&path, updated)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
                _ if conditions.is_empty() => {
                    println!("# none: these settings are judged on every write (stamp: true)")
                }
                _ => {
                    println!("matchConditions:");
                    for c in &conditions {
                        println!("  - name: {}\n    expression: |-", c.name);
                        for line in c.expression.lines() {
                            println!("      {line}");
                        }
                    }
                }
            }
        }
        #[cfg(feature = "registry")]
        Command::Push {
            module,
            destination,
        } => {
            println!("{}", registry::push(&read_module(&module)?, &destination)?);
        }
        #[cfg(feature = "registry")]
        Command::Pull { source, output } => {
            let module = registry::pull(&source)?;
            std::fs::write(&output, module)
                .with_context(|| format!("cannot write {}", output.display()))?;
        }
        Command::Soak {
            requests,
            settings,
            evaluations,
            module,
        } => {
            let requests = requests
                .iter()
                .map(|r| review::read_request(r))
                .collect::<Result<Vec<_>>>()?;
            let settings = settings
                .iter()
                .map(|s| serde_json::from_str(s).context("--settings-json is not JSON"))
                .collect::<Result<Vec<_>>>()?;
            soak::soak(&read_module(&module)?, &requests, &settings, evaluations)?;
        }
        Command::Call {
            operation,
            payload,
            module,
        } => {
            let policy = Policy::load(&read_module(&module)?)?;
            let payload = std::fs::read(&payload)
                .with_context(|| format!("cannot read {}", payload.display()))?;
            let answer = policy
                .call(&operation, &payload)
                .context("the guest trapped or returned an error")?;
            println!("{}", String::from_utf8_lossy(&answer));
            eprintln!("guest linear memory: {} bytes", policy.memory_bytes());
        }
        Command::Inspect { module } => {
            let wasm = read_module(&module)?;
            match metadata::read(&wasm)? {
                Some(metadata) => println!("{}", serde_yaml::to_string(&metadata)?),
                None => bail!("{module} has no Kubewarden metadata: annotate it first"),
            }
        }
    }
    Ok(())
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}
