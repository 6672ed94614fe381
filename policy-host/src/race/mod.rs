//! `policy-host race`: racing reconcilers against the API server's write path over a real
//! etcd, with the ownership check done by each client (as Helm does) or by this policy at
//! admission.
//!
//! What it reproduces of the API server (`k8s.io/apiserver` `registry/generic/registry/store.go`
//! and `storage/etcd3/store.go`): one etcd key per object, its JSON as the value, etcd's
//! `mod_revision` as the resourceVersion. A CREATE commits in a transaction that requires the
//! key to be absent; an UPDATE is `GuaranteedUpdate`: read the stored object, apply the writer's
//! change to it, run validating admission on (oldObject = stored, object = new), commit in a
//! transaction comparing `mod_revision`, and on a lost compare start again from a fresh read,
//! admission included (the server-side retry of PATCH and server-side apply). Admission runs
//! the built module through the same engine as `policy-host run`, one instance per writer, as
//! policy-server keeps a pool. What it leaves out: HTTP, authentication and authorization,
//! mutating admission, defaulting and validation of the object, the watch cache (reads go
//! to etcd, as a quorum read does), and several API servers in front of the one etcd (the
//! compare on `mod_revision` is what makes those safe too).
//!
//! Writers are threads, each an owner's reconciler with a seeded random choice of objects and
//! a think time between its read and its write. In `client-check` mode each writer reads the
//! object, refuses it when its check fails (another owner stamped; a higher revision of its
//! own owner; not handed to it), thinks, and then sends its change, which the server applies
//! to whatever is stored by then; admission is off. In `admission` mode writers just write
//! and the policy decides. After each run, every committed version of every object is read
//! back from etcd and each transition judged by `model`, apart from the policy.

pub mod apiserver;
mod etcd;
pub mod latency;
mod model;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::engine::Policy;
use etcd::{Client, Etcd, Stored};
use model::{HANDOVER, OWNER_KIND, OWNER_NAME, REVISION};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// K ClusterExtensions race to create and take the same CRDs, ClusterRoles and ConfigMaps.
    Owners,
    /// Two replicas of one ClusterExtension, at revisions n and n+1, update the same objects.
    StaleReplica,
    /// ext-a hands objects over to ext-b while ext-c tries to take them.
    Handover,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    ClientCheck,
    Admission,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Owners => "owners",
            Scenario::StaleReplica => "stale-replica",
            Scenario::Handover => "handover",
        }
    }

    /// The settings of the policy in admission mode.
    fn settings(self) -> Value {
        match self {
            Scenario::Handover => json!({"handoverAnnotation": HANDOVER}),
            _ => json!({}),
        }
    }
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::ClientCheck => "client-check",
            Mode::Admission => "admission",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub module: Vec<u8>,
    pub etcd: String,
    pub writers: usize,
    pub objects: usize,
    pub duration: Duration,
    pub writes: usize,
    pub think: Duration,
    pub seed: u64,
}

/// What a writer does with an object, given what it read.
#[derive(Debug, Clone)]
enum Role {
    /// Owns objects with its labels (and its revision, if it stamps one). Its client check:
    /// no other owner stamped, and no higher revision of its own owner.
    Owner { name: String, revision: Option<u64> },
    /// The current owner naming its successor (admission mode: one write that keeps the
    /// owner), or releasing the object (client-check mode: the two-write way).
    Handing { name: String, to: String },
    /// Takes objects (its labels). Its client check: the object is unowned or handed to it.
    Taking { name: String },
}

impl Role {
    fn roles(scenario: Scenario, writers: usize) -> Vec<Role> {
        (0..writers)
            .map(|i| match scenario {
                Scenario::Owners => Role::Owner {
                    name: format!("ext-{i}"),
                    revision: None,
                },
                // Half the replicas still run revision 4, half run revision 5.
                Scenario::StaleReplica => Role::Owner {
                    name: "widgets".into(),
                    revision: Some(4 + (i % 2) as u64),
                },
                Scenario::Handover => match i % 3 {
                    0 => Role::Handing {
                        name: "ext-a".into(),
                        to: "ext-b".into(),
                    },
                    1 => Role::Taking {
                        name: "ext-b".into(),
                    },
                    _ => Role::Taking {
                        name: "ext-c".into(),
                    },
                },
            })
            .collect()
    }

    /// The client's own check on the object it read (client-check mode).
    fn client_allows(&self, stored: Option<&Value>) -> bool {
        let Some(stored) = stored else {
            return !matches!(self, Role::Handing { .. });
        };
        let owner = model::owner(stored);
        let name = |o: &Option<model::Owner>| o.as_ref().and_then(|[_, n]| n.clone());
        match self {
            Role::Owner { name: me, revision } => {
                let mine = owner.is_none() || name(&owner).as_deref() == Some(me.as_str());
                // boxcutter: an object stamped by a later revision is left alone.
                let later =
                    matches!((model::revision(stored), revision), (Some(s), Some(r)) if s > *r);
                mine && !later
            }
            Role::Handing { name: me, .. } => name(&owner).as_deref() == Some(me.as_str()),
            Role::Taking { name: me } => {
                let handed_to_me = name(&model::successor(stored)).as_deref() == Some(me.as_str());
                owner.is_none() || handed_to_me
            }
        }
    }

    /// The writer's change, applied to what is stored (or to a new object): the server-side
    /// patch. None when there is nothing to write.
    fn apply(
        &self,
        template: &Value,
        stored: Option<&Value>,
        mode: Mode,
        seq: u64,
        id: usize,
    ) -> Option<Value> {
        let mut object = stored.cloned().unwrap_or_else(|| template.clone());
        let metadata = &mut object["metadata"];
        for map in ["labels", "annotations"] {
            if !metadata[map].is_object() {
                metadata[map] = json!({});
            }
        }
        let set_owner = |m: &mut Value, name: &str| {
            m["labels"][OWNER_KIND] = json!("ClusterExtension");
            m["labels"][OWNER_NAME] = json!(name);
        };
        match self {
            Role::Owner { name, revision } => {
                set_owner(metadata, name);
                if let Some(r) = revision {
                    metadata["annotations"][REVISION] = json!(r.to_string());
                }
            }
            Role::Handing { to, .. } => {
                stored?;
                match mode {
                    Mode::Admission => {
                        metadata["annotations"][HANDOVER] =
                            json!(format!("{OWNER_KIND}=ClusterExtension,{OWNER_NAME}={to}"));
                    }
                    Mode::ClientCheck => {
                        let labels = metadata["labels"].as_object_mut()?;
                        labels.remove(OWNER_KIND);
                        labels.remove(OWNER_NAME);
                    }
                }
            }
            Role::Taking { name } => set_owner(metadata, name),
        }
        // Every write changes the object, as a reconciler's would.
        metadata["annotations"]["race.example.com/written-by"] =
            json!(format!("writer-{id}-{seq}"));
        Some(object)
    }
}

/// The objects of a run: CRDs, ClusterRoles and ConfigMaps in turn.
fn templates(count: usize) -> Vec<(String, Value)> {
    (0..count)
        .map(|i| match i % 3 {
            0 => (
                format!("/registry/apiextensions.k8s.io/customresourcedefinitions/widgets-{i}.example.com"),
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": format!("widgets-{i}.example.com")},
                    "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": format!("widgets-{i}"), "kind": format!("Widget{i}")},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
            ),
            1 => (
                format!("/registry/clusterroles/widget-editor-{i}"),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": format!("widget-editor-{i}")},
                    "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]}),
            ),
            _ => (
                format!("/registry/configmaps/widgets/widget-config-{i}"),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("widget-config-{i}"), "namespace": "widgets"},
                    "data": {"config.yaml": "replicas: 2\n"}}),
            ),
        })
        .collect()
}

/// The AdmissionRequest the API server would send for this write.
fn admission_payload(new: &Value, old: Option<&Value>, settings: &Value, uid: u64) -> Vec<u8> {
    let api_version = new["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = new["kind"].clone();
    let mut request = json!({
        "uid": format!("race-{uid}"),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.as_str().unwrap_or("").to_lowercase() + "s"},
        "name": new["metadata"]["name"],
        "operation": if old.is_some() { "UPDATE" } else { "CREATE" },
        "userInfo": {"username": "system:serviceaccount:olmv1-system:operator-controller-controller-manager"},
        "object": new,
        "oldObject": old,
    });
    if let Some(ns) = new["metadata"]["namespace"].as_str() {
        request["namespace"] = json!(ns);
    }
    serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap_or_default()
}

#[derive(Debug, Default)]
struct Stats {
    attempts: u64,
    commits: u64,
    conflicts: u64,
    refusals: u64,
    rejections: u64,
    latencies: Vec<Duration>,
}

impl Stats {
    /// The counts, as the tables' cells: attempts, commits, conflicts, refusals, rejections.
    fn cells(&self) -> String {
        format!(
            "{} | {} | {} | {} | {}",
            self.attempts, self.commits, self.conflicts, self.refusals, self.rejections
        )
    }

    fn add(&mut self, other: Stats) {
        self.attempts += other.attempts;
        self.commits += other.commits;
        self.conflicts += other.conflicts;
        self.refusals += other.refusals;
        self.rejections += other.rejections;
        self.latencies.extend(other.latencies);
    }
}

/// One write of one writer, through the API server's write path.
#[allow(clippy::too_many_arguments)]
fn write(
    client: &Client,
    policy: Option<&Policy>,
    settings: &Value,
    role: &Role,
    mode: Mode,
    (key, template): &(String, Value),
    think: Duration,
    (seq, id): (u64, usize),
    stats: &mut Stats,
) -> Result<()> {
    let parse = |s: &Option<Stored>| -> Result<Option<Value>> {
        s.as_ref()
            .map(|s| serde_json::from_slice(&s.value))
            .transpose()
            .context("stored JSON")
    };
    // In client-check mode the client reads the object and checks it before sending its
    // change (in admission mode it just sends it, as server-side apply does).
    if mode == Mode::ClientCheck && !role.client_allows(parse(&client.get(key, 0)?)?.as_ref()) {
        stats.refusals += 1;
        return Ok(());
    }
    std::thread::sleep(think);
    // The server: GuaranteedUpdate, retried from a fresh read on a lost compare.
    let mut stored = client.get(key, 0)?;
    for _ in 0..50 {
        let old = parse(&stored)?;
        let Some(new) = role.apply(template, old.as_ref(), mode, seq, id) else {
            return Ok(());
        };
        if let Some(policy) = policy {
            let payload = admission_payload(&new, old.as_ref(), settings, seq);
            let start = Instant::now();
            let answer = policy.validate(&payload)?;
            stats.latencies.push(start.elapsed());
            if !answer.accepted {
                stats.rejections += 1;
                return Ok(());
            }
        }
        stats.attempts += 1;
        let expected = stored.as_ref().map_or(0, |s| s.mod_revision);
        if client.put_if(key, &serde_json::to_vec(&new)?, expected)? {
            stats.commits += 1;
            return Ok(());
        }
        stats.conflicts += 1;
        stored = client.get(key, 0)?;
    }
    Ok(())
}

/// Runs one writer thread per role, each with its own connection (`connect(writer)`), until
/// the deadline or `opts.writes` writes each; a writer picks an object (an index below
/// `objects`) and a think time with its own seeded generator for every write. Returns the
/// writers' stats, added up, and the wall time.
fn run_writers<C>(
    roles: &[Role],
    opts: &Options,
    objects: usize,
    connect: impl Fn(usize) -> Result<C> + Sync,
    write: impl Fn(&C, usize, &Role, Duration, (u64, usize), &mut Stats) -> Result<()> + Sync,
) -> Result<(Stats, Duration)> {
    let start = Instant::now();
    let deadline = start + opts.duration;
    let results: Vec<Result<Stats>> = std::thread::scope(|s| {
        let handles: Vec<_> = roles
            .iter()
            .enumerate()
            .map(|(id, role)| {
                let (connect, write) = (&connect, &write);
                s.spawn(move || -> Result<Stats> {
                    let connection = connect(id)?;
                    let mut rng = fastrand::Rng::with_seed(
                        opts.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    let mut stats = Stats::default();
                    for seq in 0..opts.writes as u64 {
                        if Instant::now() > deadline {
                            break;
                        }
                        let object = rng.usize(..objects);
                        let think = opts.think.mul_f64(rng.f64() * 2.0);
                        write(&connection, object, role, think, (seq, id), &mut stats)?;
                    }
                    Ok(stats)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a writer panicked")))
            })
            .collect()
    });
    let wall = start.elapsed();
    let mut stats = Stats::default();
    for r in results {
        stats.add(r?);
    }
    Ok((stats, wall))
}

/// Every committed transition of every key, from etcd's history, judged by the model: the
/// violations, the first three of them, and how many versions were read.
fn judge(
    client: &Client,
    keys: impl Iterator<Item = String>,
) -> Result<(usize, Vec<String>, usize)> {
    let (mut violations, mut examples, mut versions_read) = (0, Vec::new(), 0);
    for key in keys {
        let history = client.history(&key)?;
        versions_read += history.len();
        let versions: Vec<Value> = history
            .iter()
            .map(|v| serde_json::from_slice(&v.value))
            .collect::<Result<_, _>>()?;
        for (before, after) in versions.iter().zip(versions.iter().skip(1)) {
            if let Some(what) = model::violation(before, after) {
                violations += 1;
                if examples.len() < 3 {
                    examples.push(format!("{key}: {what}"));
                }
            }
        }
    }
    Ok((violations, examples, versions_read))
}

/// A run that did nothing proves nothing: it must not pass as "0 violations".
fn did_something(stats: &Stats, versions_read: usize) -> Result<()> {
    if stats.attempts == 0 || stats.commits == 0 {
        bail!(
            "the writers made {} attempts and {} commits: nothing was tested (is --duration too \
             short for the start-up, or --writes 0?)",
            stats.attempts,
            stats.commits
        );
    }
    if versions_read < 2 {
        bail!("the checker read {versions_read} committed versions from etcd: nothing was judged");
    }
    Ok(())
}

/// The q-quantile of `durations`, in units of 1/`scale` s, with `decimals` decimals.
fn percentile(durations: &[Duration], q: f64, scale: f64, decimals: usize) -> String {
    let mut sorted = durations.to_vec();
    sorted.sort();
    sorted
        .get(((sorted.len().saturating_sub(1)) as f64 * q).round() as usize)
        .map_or("-".to_string(), |d| {
            format!("{:.*}", decimals, d.as_secs_f64() * scale)
        })
}

fn percentile_ms(durations: &[Duration], q: f64) -> String {
    percentile(durations, q, 1e3, 1)
}

/// The result of one run.
pub struct Run {
    pub scenario: Scenario,
    pub mode: Mode,
    pub violations: usize,
    pub row: String,
    pub examples: Vec<String>,
}

/// Runs one scenario in one mode against a fresh etcd.
pub fn run(scenario: Scenario, mode: Mode, opts: &Options) -> Result<Run> {
    let etcd = Etcd::start(&opts.etcd)?;
    let objects = templates(opts.objects);
    let settings = scenario.settings();
    // The handover scenario starts with every object owned by ext-a.
    if scenario == Scenario::Handover {
        let setup = Client::new(&etcd.url)?;
        let owner = Role::Owner {
            name: "ext-a".into(),
            revision: None,
        };
        for (key, template) in &objects {
            let object = owner
                .apply(template, None, mode, 0, usize::MAX)
                .context("setup object")?;
            if !setup.put_if(key, &serde_json::to_vec(&object)?, 0)? {
                bail!("setup: {key} exists already");
            }
        }
    }
    let roles = Role::roles(scenario, opts.writers);
    let connect = |_id: usize| -> Result<(Client, Option<Policy>)> {
        let policy = match mode {
            Mode::Admission => Some(Policy::load(&opts.module)?),
            Mode::ClientCheck => None,
        };
        Ok((Client::new(&etcd.url)?, policy))
    };
    let (stats, wall) = run_writers(
        &roles,
        opts,
        objects.len(),
        connect,
        |(client, policy), object, role, think, seq, stats| {
            let object = &objects[object];
            write(
                client,
                policy.as_ref(),
                &settings,
                role,
                mode,
                object,
                think,
                seq,
                stats,
            )
        },
    )?;
    // Judge every committed transition of every object, from etcd's history.
    let client = Client::new(&etcd.url)?;
    let (violations, examples, versions) =
        judge(&client, objects.iter().map(|(key, _)| key.clone()))?;
    did_something(&stats, versions)?;
    let pct = |q: f64| percentile(&stats.latencies, q, 1e6, 0);
    let row = format!(
        "| {} | {} | {} | {} | {} | **{}** | {:.1} | {} | {} |",
        scenario.name(),
        mode.name(),
        opts.writers,
        opts.objects,
        stats.cells(),
        violations,
        wall.as_secs_f64(),
        pct(0.5),
        pct(0.99),
    );
    Ok(Run {
        scenario,
        mode,
        violations,
        row,
        examples,
    })
}

pub const HEADER: &str = "| scenario | mode | writers | objects | attempts | commits | conflicts retried \
| client refusals | admission rejections | invariant violations | wall s | admission p50 µs | admission p99 µs |\n\
|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// Runs the scenarios in both modes; prints a table and the summary line. With `require`,
/// fails on any admission-mode violation, or a client-check run that shows no race.
pub fn race(scenarios: &[Scenario], modes: &[Mode], opts: &Options, require: bool) -> Result<()> {
    println!("{HEADER}");
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut examples = Vec::new();
    for &scenario in scenarios {
        for &mode in modes {
            let run = run(scenario, mode, opts)
                .with_context(|| format!("{} in {} mode", scenario.name(), mode.name()))?;
            println!("{}", run.row);
            for e in &run.examples {
                examples.push(format!("- {} {}: {e}", scenario.name(), mode.name()));
            }
            *totals.entry(mode.name()).or_default() += run.violations;
            match (run.mode, run.violations) {
                (Mode::Admission, n) if n > 0 => problems.push(format!(
                    "{} in admission mode: {n} invariant violations",
                    run.scenario.name()
                )),
                (Mode::ClientCheck, 0) => problems.push(format!(
                    "{} in client-check mode found no race: widen the window (--think-ms)",
                    run.scenario.name()
                )),
                _ => {}
            }
        }
    }
    if !examples.is_empty() {
        println!(
            "\nViolations (the first of each run):\n{}\n",
            examples.join("\n")
        );
    }
    println!(
        "race: client-check violations {}, admission violations {}",
        totals.get("client-check").copied().unwrap_or(0),
        totals.get("admission").copied().unwrap_or(0)
    );
    if require && !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}

/// Runs the scenarios through real API servers, in each write style and mode; prints a table
/// and the summary line. With `require`, fails on any admission-mode violation (every run
/// fails anyway when it wrote nothing); with `require_race` too, on a scenario whose
/// client-check runs show no race in any style. Which styles race is itself a finding: a `put`
/// with the resourceVersion read makes the client's own check atomic (the API server refuses
/// it with 409 when the object changed since), and so does a create (409 AlreadyExists); the
/// race is in writes that carry no resourceVersion onto an object that exists: server-side
/// apply (an upsert) always, Helm's merge patch when the object changes hands.
pub fn race_apiserver(
    cluster: &apiserver::Cluster,
    scenarios: &[Scenario],
    modes: &[Mode],
    styles: &[apiserver::Style],
    opts: &Options,
    (require, require_race): (bool, bool),
) -> Result<()> {
    println!("{}", apiserver::HEADER);
    let nonce = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
            % 0xff_ffff
    );
    let (mut client_check, mut admission) = (0, 0);
    let mut problems = Vec::new();
    let mut examples = Vec::new();
    for &scenario in scenarios {
        let mut raced = 0;
        for &style in styles {
            for &mode in modes {
                let id = format!(
                    "{}-{}-{}-{nonce}",
                    scenario.name(),
                    style.name(),
                    mode.name()
                );
                let run = apiserver::run(cluster, scenario, mode, style, opts, &id)
                    .with_context(|| format!("{id} through the API server"))?;
                println!("{}", run.row);
                for e in &run.examples {
                    examples.push(format!("- {id}: {e}"));
                }
                match mode {
                    Mode::Admission => {
                        admission += run.violations;
                        if run.violations > 0 {
                            problems.push(format!("{id}: {} invariant violations", run.violations));
                        }
                    }
                    Mode::ClientCheck => {
                        client_check += run.violations;
                        raced += run.violations;
                    }
                }
            }
        }
        if require_race && modes.contains(&Mode::ClientCheck) && raced == 0 {
            problems.push(format!(
                "{}: no client-check run found a race: widen the window (--think-ms, --duration)",
                scenario.name()
            ));
        }
    }
    if !examples.is_empty() {
        println!(
            "\nViolations (the first of each run):\n{}\n",
            examples.join("\n")
        );
    }
    println!(
        "race (apiserver): client-check violations {client_check}, admission violations {admission}"
    );
    if require && !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}
