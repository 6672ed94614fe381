//! `owners --report`: the findings as the reports Kubewarden's audit scanner writes, so the
//! same dashboards (Policy Reporter, `kubectl get reports`) show them.
//!
//! The shape is the audit scanner's (kubewarden-controller v1.36.0-beta.1,
//! `internal/audit-scanner/report/`): since Kubewarden 1.33 `openreports.io/v1alpha1`
//! `Report` (in the object's namespace) / `ClusterReport` (cluster-scoped objects); with
//! `--report-kind policyreport`, `wgpolicyk8s.io/v1alpha2` `PolicyReport` /
//! `ClusterPolicyReport`. One report per object, owned by it (`ownerReferences`, so the garbage
//! collector deletes it with the object), `scope` the object, `summary`, and one `fail` result
//! per finding. What differs, so as not to collide with the scanner's own reports: the name is
//! `single-owner-<uid>` (the scanner's is `<uid>`, and the same name in the same namespace is
//! the same object), `source: single-owner`, `app.kubernetes.io/managed-by:
//! kubectl-single-owner`, and the run label `single-owner.kubewarden.io/run-uid`. Reports are
//! written with server-side apply; a run deletes this plugin's reports of earlier runs, so a
//! fixed finding disappears (docs/owners.md).

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use clap::ValueEnum;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::{Value, json};

use crate::discovery::Discovered;
use crate::findings::Finding;

pub const SOURCE: &str = "single-owner";
pub const MANAGED_BY: &str = "kubectl-single-owner";
pub const RUN_LABEL: &str = "single-owner.kubewarden.io/run-uid";
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
const VERSION_LABEL: &str = "kubewarden.io/policyreport-version";
/// The policy's category and severity (metadata.yml, `io.kubewarden.policy.*`).
const CATEGORY: &str = "Resource ownership";
const SEVERITY: &str = "high";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportKind {
    /// openreports.io/v1alpha1 Report / ClusterReport (the audit scanner's default)
    Openreports,
    /// wgpolicyk8s.io/v1alpha2 PolicyReport / ClusterPolicyReport
    Policyreport,
}

impl ReportKind {
    /// Group, version, and the kinds for namespaced and cluster-scoped objects.
    pub fn kinds(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            ReportKind::Openreports => ("openreports.io", "v1alpha1", "Report", "ClusterReport"),
            ReportKind::Policyreport => (
                "wgpolicyk8s.io",
                "v1alpha2",
                "PolicyReport",
                "ClusterPolicyReport",
            ),
        }
    }
}

/// One run's reports.
pub struct Run<'a> {
    pub kind: ReportKind,
    pub uid: &'a str,
    /// The policy the results name (the preset's name).
    pub policy: &'a str,
    pub now: i64,
}

/// The reports of `findings`, one per object (objects without a uid cannot be reported).
pub fn reports(findings: &[Finding], run: &Run) -> Vec<Value> {
    let mut by: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in findings.iter().filter(|f| !f.object.uid.is_empty()) {
        by.entry(&f.object.uid).or_default().push(f);
    }
    let (group, version, namespaced, cluster) = run.kind.kinds();
    by.into_values()
        .filter_map(|fs| {
            let o = &fs.first()?.object;
            let results: Vec<Value> = fs
                .iter()
                .map(|f| {
                    let owners = f.owners.iter().map(|o| o.to_string()).collect::<Vec<_>>();
                    // Both kinds name it resourceSelector: the wgpolicyk8s.io v1alpha2 Go
                    // field is SubjectSelector, its JSON `resourceSelector`
                    // (wg-policy-prototypes policyreport_types.go), and Kubewarden's CRD
                    // declares only that.
                    let selector = "resourceSelector";
                    json!({
                        "source": SOURCE,
                        "policy": run.policy,
                        "rule": f.kind.as_str(),
                        "category": CATEGORY,
                        "severity": SEVERITY,
                        "timestamp": {"seconds": run.now, "nanos": 0},
                        "result": "fail",
                        "scored": true,
                        selector: {},
                        "message": f.message,
                        "properties": {
                            "finding": f.kind.as_str(),
                            "owners": owners.join("; "),
                            "policy-name": run.policy,
                        },
                    })
                })
                .collect();
            let mut metadata = json!({
                "name": format!("single-owner-{}", o.uid),
                "labels": {
                    MANAGED_BY_LABEL: MANAGED_BY,
                    VERSION_LABEL: "v2",
                    RUN_LABEL: run.uid,
                },
                "ownerReferences": [{
                    "apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": o.uid,
                }],
            });
            if let Some(ns) = &o.namespace {
                metadata["namespace"] = json!(ns);
            }
            let mut report = json!({
                "apiVersion": format!("{group}/{version}"),
                "kind": if o.namespace.is_some() { namespaced } else { cluster },
                "metadata": metadata,
                "scope": {
                    "apiVersion": o.api_version, "kind": o.kind, "namespace": o.namespace.clone().unwrap_or_default(),
                    "name": o.name, "uid": o.uid, "resourceVersion": o.resource_version,
                },
                "summary": {"pass": 0, "fail": results.len(), "warn": 0, "error": 0, "skip": 0},
                "results": results,
            });
            if run.kind == ReportKind::Openreports {
                report["source"] = json!(SOURCE);
            }
            Some(report)
        })
        .collect()
}

/// What `write` did.
#[derive(Debug, Default)]
pub struct Written {
    pub applied: usize,
    pub deleted: usize,
}

/// Applies the reports, then deletes this plugin's reports of other runs (in `namespace`
/// only, when the scan was; cluster reports only when the scan was cluster-wide), unless
/// `prune` is off (a filtered scan did not judge every object).
pub async fn write(
    client: &kube::Client,
    discovered: &Discovered,
    reports: &[Value],
    run: &Run<'_>,
    namespace: Option<&str>,
    prune: bool,
) -> Result<Written> {
    let (group, version, namespaced, cluster) = run.kind.kinds();
    // The plural as discovery found it, at the version the reports are written in: a CRD
    // that serves several versions (Kubewarden's PolicyReport: v1alpha1, v1alpha2 and
    // v1beta1, v1beta1 preferred) is found at its preferred one, and a v1alpha2 body sent
    // to the v1beta1 path is refused ("invalid object type ... BadRequest").
    let find = |kind: &str| {
        discovered
            .find(group, kind)
            .map(|t| ApiResource {
                version: version.to_string(),
                api_version: format!("{group}/{version}"),
                ..t.api_resource()
            })
            .ok_or_else(|| {
                anyhow!(
                    "{group}/{version} {kind} is not served: install its CRDs (Kubewarden's \
                 kubewarden-crds chart does), or choose the other --report-kind"
                )
            })
    };
    let (ns_ar, cluster_ar) = (find(namespaced)?, find(cluster)?);
    let mut written = Written::default();
    let params = PatchParams::apply(MANAGED_BY).force();
    for report in reports {
        let name = report
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let api: Api<DynamicObject> = match report
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ns_ar),
            None => Api::all_with(client.clone(), &cluster_ar),
        };
        api.patch(name, &params, &Patch::Apply(report))
            .await
            .with_context(|| format!("writing report {name}"))?;
        written.applied += 1;
    }
    if !prune {
        return Ok(written);
    }
    let stale = ListParams::default().labels(&format!(
        "{MANAGED_BY_LABEL}={MANAGED_BY},{RUN_LABEL}!={}",
        run.uid
    ));
    let mut apis: Vec<Api<DynamicObject>> = vec![match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ns_ar),
        None => Api::all_with(client.clone(), &ns_ar),
    }];
    if namespace.is_none() {
        apis.push(Api::all_with(client.clone(), &cluster_ar));
    }
    for (i, api) in apis.iter().enumerate() {
        let ar = if i == 0 { &ns_ar } else { &cluster_ar };
        let list = api
            .list_metadata(&stale)
            .await
            .with_context(|| format!("listing old {}", ar.plural))?;
        for old in list.items {
            let name = old.metadata.name.unwrap_or_default();
            let api: Api<DynamicObject> = match &old.metadata.namespace {
                Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
                None => Api::all_with(client.clone(), ar),
            };
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => written.deleted += 1,
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("deleting old report {name}")),
            }
        }
    }
    Ok(written)
}

/// A run's uid: unique per run (time and process), as the scanner's run uid is.
pub fn run_uid() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}-{:x}", nanos, std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owners::Filter;
    use crate::scan::tests::run as scan;
    use rstest::rstest;

    #[rstest]
    #[case(
        ReportKind::Openreports,
        "openreports.io/v1alpha1",
        "Report",
        "resourceSelector"
    )]
    #[case(
        ReportKind::Policyreport,
        "wgpolicyk8s.io/v1alpha2",
        "PolicyReport",
        "resourceSelector"
    )]
    #[tokio::test]
    async fn one_report_per_object_in_the_audit_scanners_shape(
        #[case] kind: ReportKind,
        #[case] api_version: &str,
        #[case] report_kind: &str,
        #[case] selector: &str,
    ) {
        let outcome = scan(&Filter::default()).await;
        let run = Run {
            kind,
            uid: "run1",
            policy: "single-owner-all-tools",
            now: 42,
        };
        let reports = reports(&outcome.findings, &run);
        assert_eq!(reports.len(), 3);
        let r = &reports[0];
        assert_eq!(r["apiVersion"], api_version);
        assert_eq!(r["kind"], report_kind);
        let uid = r["scope"]["uid"].as_str().unwrap();
        assert_eq!(r["metadata"]["name"], format!("single-owner-{uid}"));
        assert_eq!(r["metadata"]["namespace"], "apps");
        assert_eq!(r["metadata"]["labels"][MANAGED_BY_LABEL], MANAGED_BY);
        assert_eq!(r["metadata"]["labels"][VERSION_LABEL], "v2");
        assert_eq!(r["metadata"]["labels"][RUN_LABEL], "run1");
        assert_eq!(r["metadata"]["ownerReferences"][0]["uid"], uid);
        assert_eq!(
            r["summary"],
            json!({"pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 0})
        );
        let result = &r["results"][0];
        assert_eq!(result["source"], SOURCE);
        assert_eq!(result["result"], "fail");
        assert_eq!(result["scored"], true);
        assert_eq!(result["timestamp"]["seconds"], 42);
        assert_eq!(result[selector], json!({}));
        assert!(result["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert_eq!(r.get("source").is_some(), kind == ReportKind::Openreports);
    }
}
