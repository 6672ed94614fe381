//! `policy-host race --apiserver`: the same scenarios through real kube-apiservers, with the
//! policy behind the webhook that kubewarden-controller would make (control-plane/cluster.sh), and
//! writers that write as real reconcilers do:
//!
//! - `put`: GET, change, PUT with the resourceVersion read, and on a 409 Conflict start again
//!   from a fresh GET (controller-runtime's reconcile and `retry.RetryOnConflict`);
//! - `helm`: GET, check, then a merge PATCH of the labels and annotations without a
//!   resourceVersion (Helm's three-way merge patch after its ownership check);
//! - `apply`: server-side apply (PATCH `application/apply-patch+yaml`, `force=true`, one field
//!   manager per owner), without a resourceVersion (operator-controller, Flux).
//!
//! A PATCH without a resourceVersion is applied by the API server to whatever is stored when it
//! commits, and on a lost compare it reads again and re-runs admission: the claim this policy
//! rests on. In `client-check` mode writers check ownership themselves on what they read and the
//! objects carry no label the webhook selects; in `admission` mode they carry it and just
//! write. Objects are custom resources (`racewidgets.race.single-owner.io`, stored as JSON in
//! etcd), and after each run every committed version of every object is read back from etcd's
//! history and judged by `model`, apart from the policy.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use super::etcd::Client as Etcd;
use super::{Mode, Role, Scenario, Stats, model};

pub const GROUP: &str = "race.single-owner.io";
/// The label the race policy's objectSelector selects: set in admission mode only.
pub const ADMISSION_LABEL: &str = "race.single-owner.io/admission";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Style {
    Put,
    Helm,
    Apply,
}

impl Style {
    pub fn name(self) -> &'static str {
        match self {
            Style::Put => "put",
            Style::Helm => "helm",
            Style::Apply => "apply",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Cluster {
    /// The API servers; writer i writes through `urls[i % len]`.
    pub urls: Vec<String>,
    pub token: String,
    pub ca_pem: Vec<u8>,
    /// The etcd the API servers store in, for the checker.
    pub etcd: String,
    /// The webhook backend's request log (`policy-host serve --log`), where each admission
    /// call is a line: how often the API servers ran admission.
    pub webhook_log: Option<std::path::PathBuf>,
}

/// How many admission calls the backend logged for objects whose name starts with `prefix`.
fn webhook_calls(log: &std::path::Path, prefix: &str) -> Result<usize> {
    let text =
        std::fs::read_to_string(log).with_context(|| format!("cannot read {}", log.display()))?;
    let needle = format!("\"name\":\"{prefix}-");
    Ok(text.lines().filter(|line| line.contains(&needle)).count())
}

/// One writer's HTTPS client to one API server (blocking calls on a current-thread runtime),
/// for the resources under `base`.
pub struct Api {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    base: String,
    token: String,
}

/// An answer: the status and the body.
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Api {
    /// A client for the race's custom resources.
    fn new(url: &str, cluster: &Cluster) -> Result<Api> {
        Api::for_resources(url, cluster, &format!("/apis/{GROUP}/v1/racewidgets"))
    }

    /// A client for the resources under `path` (e.g. `/api/v1/namespaces/default/configmaps`).
    pub fn for_resources(url: &str, cluster: &Cluster, path: &str) -> Result<Api> {
        let ca = reqwest::Certificate::from_pem(&cluster.ca_pem).context("the CA is not PEM")?;
        let http = reqwest::Client::builder()
            .tls_certs_only([ca])
            .timeout(Duration::from_secs(30))
            .build()
            .context("cannot build the HTTPS client")?;
        Ok(Api {
            http,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            base: format!("{}{path}", url.trim_end_matches('/')),
            token: cluster.token.clone(),
        })
    }

    pub fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> Result<Answer> {
        let url = format!("{}{path}", self.base);
        self.runtime.block_on(async {
            let mut request = self
                .http
                .request(method, &url)
                .bearer_auth(&self.token)
                .header("Accept", "application/json");
            if let Some(body) = body {
                request = request
                    .header("Content-Type", content_type)
                    .body(serde_json::to_vec(body)?);
            }
            let response = request.send().await.context("the API server")?;
            let status = response.status().as_u16();
            let bytes = response.bytes().await?;
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            Ok(Answer { status, body })
        })
    }

    /// Server-side apply of `config` to `name` by field manager `manager`, forcing conflicts.
    pub fn apply(&self, name: &str, manager: &str, config: &Value) -> Result<Answer> {
        self.send(
            reqwest::Method::PATCH,
            &format!("/{name}?fieldManager={manager}&force=true"),
            "application/apply-patch+yaml",
            Some(config),
        )
    }

    /// A JSON merge patch of `name`, without a resourceVersion.
    pub fn merge_patch(&self, name: &str, patch: &Value) -> Result<Answer> {
        self.send(
            reqwest::Method::PATCH,
            &format!("/{name}"),
            "application/merge-patch+json",
            Some(patch),
        )
    }

    fn get(&self, name: &str) -> Result<Option<Value>> {
        let answer = self.send(reqwest::Method::GET, &format!("/{name}"), "", None)?;
        match answer.status {
            200 => Ok(Some(answer.body)),
            404 => Ok(None),
            s => bail!("GET {name}: {s} {}", answer.body),
        }
    }
}

/// The object a run starts from.
fn template(name: &str, mode: Mode) -> Value {
    let mut labels = Map::new();
    if mode == Mode::Admission {
        labels.insert(ADMISSION_LABEL.into(), json!("on"));
    }
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "RaceWidget",
        "metadata": {"name": name, "labels": labels}, "spec": {"size": 1}})
}

/// The merge patch that turns `old`'s labels and annotations into `new`'s (null removes).
fn metadata_patch(old: &Value, new: &Value) -> Value {
    let mut metadata = Map::new();
    for map in ["labels", "annotations"] {
        let (before, after) = (&old["metadata"][map], &new["metadata"][map]);
        let mut patch = Map::new();
        for (key, value) in after.as_object().into_iter().flatten() {
            if before.get(key) != Some(value) {
                patch.insert(key.clone(), value.clone());
            }
        }
        for key in before.as_object().into_iter().flatten().map(|(k, _)| k) {
            if after.get(key).is_none() {
                patch.insert(key.clone(), Value::Null);
            }
        }
        if !patch.is_empty() {
            metadata.insert(map.into(), Value::Object(patch));
        }
    }
    json!({"metadata": metadata})
}

/// The field manager of a role: one per owner, as each owner's controller has its own.
fn manager(role: &Role) -> &str {
    match role {
        Role::Owner { name, .. } | Role::Handing { name, .. } | Role::Taking { name } => name,
    }
}

/// The configuration a role applies with server-side apply: its own labels and annotations
/// (what `Role::apply` sets on an object that has nothing else).
fn applied(role: &Role, template: &Value, mode: Mode, seq: u64, id: usize) -> Option<Value> {
    // The handing role's change needs a stored object; give it one that it owns.
    let base = match role {
        Role::Handing { name, .. } => {
            let mut owned = template.clone();
            owned["metadata"]["labels"][model::OWNER_KIND] = json!("ClusterExtension");
            owned["metadata"]["labels"][model::OWNER_NAME] = json!(name);
            Some(owned)
        }
        _ => None,
    };
    let object = role.apply(template, base.as_ref(), mode, seq, id)?;
    Some(
        json!({"apiVersion": template["apiVersion"], "kind": template["kind"],
        "metadata": {"name": template["metadata"]["name"],
            "labels": object["metadata"]["labels"], "annotations": object["metadata"]["annotations"]}}),
    )
}

/// One write of one writer, in its style.
#[allow(clippy::too_many_arguments)]
fn write(
    api: &Api,
    role: &Role,
    mode: Mode,
    style: Style,
    template: &Value,
    think: Duration,
    (seq, id): (u64, usize),
    stats: &mut Stats,
) -> Result<()> {
    let name = template["metadata"]["name"].as_str().unwrap_or_default();
    for _ in 0..50 {
        let stored = api.get(name)?;
        if mode == Mode::ClientCheck && !role.client_allows(stored.as_ref()) {
            stats.refusals += 1;
            return Ok(());
        }
        std::thread::sleep(think);
        let (method, path, content_type, body) = match (style, &stored) {
            (Style::Apply, _) => {
                let Some(config) = applied(role, template, mode, seq, id) else {
                    return Ok(());
                };
                let path = format!("/{name}?fieldManager={}&force=true", manager(role));
                (
                    reqwest::Method::PATCH,
                    path,
                    "application/apply-patch+yaml",
                    config,
                )
            }
            (_, None) => {
                let Some(new) = role.apply(template, None, mode, seq, id) else {
                    return Ok(());
                };
                (
                    reqwest::Method::POST,
                    String::new(),
                    "application/json",
                    new,
                )
            }
            (Style::Put, Some(old)) => {
                let Some(new) = role.apply(template, Some(old), mode, seq, id) else {
                    return Ok(());
                };
                // `new` is the stored object changed: it carries the resourceVersion read.
                let path = format!("/{name}");
                (reqwest::Method::PUT, path, "application/json", new)
            }
            (Style::Helm, Some(old)) => {
                let Some(new) = role.apply(template, Some(old), mode, seq, id) else {
                    return Ok(());
                };
                let patch = metadata_patch(old, &new);
                let path = format!("/{name}");
                (
                    reqwest::Method::PATCH,
                    path,
                    "application/merge-patch+json",
                    patch,
                )
            }
        };
        stats.attempts += 1;
        let start = Instant::now();
        let answer = api.send(method, &path, content_type, Some(&body))?;
        stats.latencies.push(start.elapsed());
        match answer.status {
            200 | 201 => {
                stats.commits += 1;
                return Ok(());
            }
            // The resourceVersion was stale, or the object was created meanwhile: a
            // controller's next reconcile starts again from a fresh read.
            409 => stats.conflicts += 1,
            403 | 400 => {
                let message = answer.body["message"].as_str().unwrap_or_default();
                if !message.contains("denied the request") {
                    bail!("{name}: {} {}", answer.status, answer.body);
                }
                stats.rejections += 1;
                return Ok(());
            }
            s => bail!("{name}: {s} {}", answer.body),
        }
    }
    Ok(())
}

/// The result of one run through the API servers.
pub struct Run {
    pub violations: usize,
    pub row: String,
    pub examples: Vec<String>,
}

/// Runs one scenario in one mode and style; objects are named after the run, so runs never
/// share one.
pub fn run(
    cluster: &Cluster,
    scenario: Scenario,
    mode: Mode,
    style: Style,
    opts: &super::Options,
    run_id: &str,
) -> Result<Run> {
    let names: Vec<String> = (0..opts.objects).map(|i| format!("{run_id}-{i}")).collect();
    let setup = Api::new(&cluster.urls[0], cluster)?;
    if scenario == Scenario::Handover {
        let owner = Role::Owner {
            name: "ext-a".into(),
            revision: None,
        };
        for name in &names {
            // Applied by ext-a's field manager, so that ext-a's own later applies (which
            // release the object in client-check mode) own the labels they remove.
            let object = applied(&owner, &template(name, mode), mode, 0, usize::MAX)
                .context("setup object")?;
            let answer = setup.apply(name, "ext-a", &object)?;
            if answer.status != 201 && answer.status != 200 {
                bail!("setup: creating {name}: {} {}", answer.status, answer.body);
            }
        }
    }
    let roles = Role::roles(scenario, opts.writers);
    let connect = |id: usize| Api::new(&cluster.urls[id % cluster.urls.len()], cluster);
    let (stats, wall) = super::run_writers(
        &roles,
        opts,
        names.len(),
        connect,
        |api, object, role, think, seq, stats| {
            let template = template(&names[object], mode);
            write(api, role, mode, style, &template, think, seq, stats)
        },
    )?;
    let etcd = Etcd::new(&cluster.etcd)?;
    let (violations, examples, versions) = super::judge(
        &etcd,
        names
            .iter()
            .map(|n| format!("/registry/{GROUP}/racewidgets/{n}")),
    )?;
    super::did_something(&stats, versions)?;
    let calls = match (&cluster.webhook_log, mode) {
        (Some(log), Mode::Admission) => webhook_calls(log, run_id)?.to_string(),
        _ => "-".into(),
    };
    let row = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | **{}** | {:.1} | {} | {} |",
        scenario.name(),
        style.name(),
        mode.name(),
        cluster.urls.len(),
        opts.writers,
        opts.objects,
        stats.cells(),
        calls,
        violations,
        wall.as_secs_f64(),
        super::percentile_ms(&stats.latencies, 0.5),
        super::percentile_ms(&stats.latencies, 0.99),
    );
    Ok(Run {
        violations,
        row,
        examples,
    })
}

pub const HEADER: &str = "| scenario | style | mode | API servers | writers | objects | writes sent \
| commits | conflicts (409) | client refusals | admission rejections | webhook calls \
| invariant violations | wall s | write p50 ms | write p99 ms |\n\
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_patch_sets_what_changed_and_removes_what_went() {
        let old = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "1"}}});
        let new = json!({"metadata": {"labels": {"a": "1", "c": "3"}, "annotations": {"x": "1"}}});
        assert_eq!(
            metadata_patch(&old, &new),
            json!({"metadata": {"labels": {"b": null, "c": "3"}}})
        );
    }

    #[test]
    fn the_applied_configuration_is_the_roles_own_fields() {
        let t = template("w", Mode::ClientCheck);
        let handing = Role::Handing {
            name: "ext-a".into(),
            to: "ext-b".into(),
        };
        // Releasing, in client-check mode: the configuration has no owner labels, which
        // removes the ones this manager applied.
        let config = applied(&handing, &t, Mode::ClientCheck, 1, 0).unwrap();
        assert!(
            config["metadata"]["labels"]
                .get(model::OWNER_NAME)
                .is_none()
        );
        let taking = Role::Taking {
            name: "ext-b".into(),
        };
        let config = applied(
            &taking,
            &template("w", Mode::Admission),
            Mode::Admission,
            1,
            0,
        )
        .unwrap();
        assert_eq!(config["metadata"]["labels"][model::OWNER_NAME], "ext-b");
        assert_eq!(config["metadata"]["labels"][ADMISSION_LABEL], "on");
    }
}
