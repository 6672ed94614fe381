//! `kubectl single-owner`: who owns what in a cluster, by single-owner-policy's own owner
//! model (its rules crate: the same settings, schemes, aliases, tool rules and messages).
//!
//! `owners` scans every listable type, metadata only, and prints each owner's objects and the
//! findings: two owners, an owner that is gone, what the policy would refuse on the object's
//! next ownership change. `who-owns KIND/NAME` explains one object. `check` reads the policy's
//! live deployment (its ClusterAdmissionPolicies and the webhooks the Kubewarden controller
//! wrote of them). Exit codes: 0 nothing found, 1 findings, 2 could not run.
//!
//! Modules, by domain: `discovery` (types served), `listing` (pages of metadata), `owners`
//! (the policy's owners of an object, and grouping), `findings` (the policy's refusals, an
//! owner gone), `lookups` (whether owners exist), `cluster` (the policy's own lookups through
//! kube-rs), `scan` (`owners`), `who_owns`, `report` (Report/ClusterReport), `output`, `check`
//! (the live deployment).

mod check;
mod cluster;
mod discovery;
mod findings;
mod listing;
mod lookups;
mod output;
mod owners;
mod preset;
mod progress;
mod protobuf;
mod report;
mod scan;
mod who_owns;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::output::Format;
use crate::owners::Filter;
use crate::report::ReportKind;

/// Exit code when the command could not run (bad flags, no cluster, discovery failed), as
/// clap exits on bad flags.
const CANNOT_RUN: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "kubectl single-owner",
    version,
    about = "Who owns what, by single-owner-policy's owner model"
)]
struct Cli {
    /// The kubeconfig context to use (default: the current context).
    #[arg(long, global = true)]
    context: Option<String>,
    /// The kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every owned object grouped by owner, and the findings.
    Owners(OwnersArgs),
    /// One object: its owners, references, handover and bound writers.
    WhoOwns(WhoOwnsArgs),
    /// The policy's live deployment: each ClusterAdmissionPolicy of this policy active, its
    /// webhook with the matchConditions its settings generate, no webhook that sends every
    /// write under Fail, its policy server there. One line per fault; exit 1 if any.
    Check(CheckArgs),
    /// The plugin's version, and the policy's whose rules it runs.
    Version,
}

#[derive(Debug, Args)]
struct PolicyArgs {
    /// A ClusterAdmissionPolicy manifest whose spec.settings are the settings, or the name of
    /// a preset the plugin ships: all-tools, olm-v1, olm-v0, helm, argocd,
    /// argocd-label-tracking, flux, applyset, kapp, timoni, crossplane, identity/... (the
    /// project's deploy/).
    #[arg(long, value_name = "FILE|NAME", conflicts_with = "settings")]
    preset: Option<PathBuf>,
    /// The policy settings, JSON or YAML (default: `{}`, the OLM v1 defaults).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// The namespace of Argo CD's Applications (for tracking ids without `<namespace>_`).
    #[arg(long, value_name = "NS", default_value = "argocd")]
    argocd_namespace: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    output: Format,
}

#[derive(Debug, Args)]
struct OwnersArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// All namespaces and cluster-scoped objects (the default).
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    all_namespaces: bool,
    /// Only objects in this namespace (cluster-scoped types are left out).
    #[arg(short, long, value_name = "NS")]
    namespace: Option<String>,
    /// Only owners with this key=value (owner part; repeatable: all of them).
    #[arg(long = "owner", value_name = "KEY=VALUE", value_parser = key_value)]
    owners: Vec<(String, String)>,
    /// Only owners of this tool (scheme name).
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// Also write the findings as reports (as Kubewarden's audit scanner does).
    #[arg(long)]
    report: bool,
    /// The reports' kind.
    #[arg(long, value_enum, default_value = "openreports", requires = "report")]
    report_kind: ReportKind,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// Only this ClusterAdmissionPolicy (repeatable; default: every one whose module is a
    /// single-owner artifact).
    #[arg(long = "policy", value_name = "NAME")]
    policies: Vec<String>,
}

#[derive(Debug, Args)]
struct WhoOwnsArgs {
    /// KIND/NAME, KIND as kubectl takes it (deploy, Deployment, deployments.apps).
    object: String,
    #[command(flatten)]
    policy: PolicyArgs,
    /// The object's namespace (default: the context's).
    #[arg(short, long, value_name = "NS")]
    namespace: Option<String>,
}

fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

/// `kubectl single-owner version`: the plugin's version, and the policy's whose rules it runs
/// (one release carries both).
fn version() -> String {
    format!(
        "kubectl single-owner v{} (the rules of single-owner-policy v{})",
        env!("CARGO_PKG_VERSION"),
        single_owner_policy::VERSION
    )
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Version = cli.command {
        println!("{}", version());
        return ExitCode::SUCCESS;
    }
    // ring, not aws-lc-rs: the process's one rustls provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(CANNOT_RUN);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(CANNOT_RUN)
        }
    }
}

async fn client(cli: &Cli) -> Result<kube::Client> {
    let options = KubeConfigOptions {
        context: cli.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match (&cli.kubeconfig, &cli.context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options).await?
        }
        (None, Some(_)) => kube::Config::from_kubeconfig(&options).await?,
        (None, None) => kube::Config::infer().await?,
    };
    kube::Client::try_from(config).context("cannot make a client of the kubeconfig")
}

async fn run(cli: Cli) -> Result<u8> {
    let client = client(&cli).await.context("no cluster")?;
    if let Command::Check(args) = &cli.command {
        let (faults, checked) = check::check(&client, &args.policies).await?;
        for fault in &faults {
            println!("{fault}");
        }
        if checked == 0 {
            println!(
                "no ClusterAdmissionPolicy of single-owner-policy (none whose module is a single-owner artifact, or none named with --policy)"
            );
            return Ok(1);
        }
        if faults.is_empty() {
            println!("{checked} ClusterAdmissionPolicies of single-owner-policy checked: no fault");
        }
        return Ok(u8::from(!faults.is_empty()));
    }
    let discovered = Arc::new(discovery::discover(&client).await?);
    match &cli.command {
        Command::Owners(args) => owners(client, discovered, args).await,
        Command::WhoOwns(args) => who_owns(client, discovered, args).await,
        Command::Version | Command::Check(_) => Ok(0),
    }
}

async fn owners(
    client: kube::Client,
    discovered: Arc<discovery::Discovered>,
    args: &OwnersArgs,
) -> Result<u8> {
    let model = Arc::new(preset::load(
        args.policy.preset.as_deref(),
        args.policy.settings.as_deref(),
    )?);
    let filter = Filter {
        tool: args.tool.clone(),
        keys: args.owners.clone(),
    };
    let types: Vec<_> = discovered.listable().cloned().collect();
    let scope = scan::Scope {
        types: &types,
        namespace: args.namespace.as_deref(),
        filter: &filter,
        argocd_namespace: &args.policy.argocd_namespace,
    };
    let source = listing::Kube(client.clone());
    let lookup = lookups::KubeLookup::new(client.clone(), discovered.clone());
    let cluster = Arc::new(cluster::KubeCluster::new(
        client.clone(),
        discovered.clone(),
    ));
    let progress = progress::Progress::on_terminal();
    let mut outcome =
        scan::scan(model.clone(), &source, &lookup, cluster, &scope, &progress).await?;
    outcome.skipped.extend(discovered.skipped.iter().cloned());
    outcome.skipped.sort();
    match output::structured(&outcome, args.policy.output)? {
        Some(text) => print!("{text}"),
        None => print!("{}", output::outcome_table(&outcome)),
    }
    if args.report {
        let uid = report::run_uid();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let run = report::Run {
            kind: args.report_kind,
            uid: &uid,
            policy: &model.name,
            now,
        };
        let reports = report::reports(&outcome.findings, &run);
        let written = report::write(
            &client,
            &discovered,
            &reports,
            &run,
            args.namespace.as_deref(),
            filter.is_empty(),
        )
        .await
        .context("writing the reports failed")?;
        eprintln!(
            "reports: {} written, {} of earlier runs deleted (run {uid})",
            written.applied, written.deleted
        );
    }
    Ok(outcome.exit_code())
}

async fn who_owns(
    client: kube::Client,
    discovered: Arc<discovery::Discovered>,
    args: &WhoOwnsArgs,
) -> Result<u8> {
    let model = Arc::new(preset::load(
        args.policy.preset.as_deref(),
        args.policy.settings.as_deref(),
    )?);
    let Some((kind, name)) = args.object.split_once('/') else {
        bail!("{:?} is not KIND/NAME", args.object);
    };
    let Some(ty) = discovered.resolve(kind).cloned() else {
        bail!("the server does not serve a resource type {kind:?}");
    };
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let getter = who_owns::KubeGetter {
        client: client.clone(),
        discovered: &discovered,
    };
    let api_version = ty.api_version();
    let Some((meta, _)) =
        who_owns::Getter::get(&getter, &api_version, &ty.kind, Some(&namespace), name).await?
    else {
        bail!(
            "{} {name:?} not found{}",
            ty.kind,
            if ty.namespaced {
                format!(" in namespace {namespace:?}")
            } else {
                String::new()
            }
        );
    };
    let object = owners::Object::of(&listing::Listed {
        ty: Arc::new(ty),
        meta,
    });
    let carried = owners::carried(&model, &object).map_err(anyhow::Error::msg)?;
    let lookup = lookups::KubeLookup::new(client.clone(), discovered.clone());
    let mut view = who_owns::describe(
        &model,
        &object,
        &carried,
        &lookup,
        &getter,
        &args.policy.argocd_namespace,
    )
    .await;
    // Its findings, as `owners` would report them.
    let cluster = Arc::new(cluster::KubeCluster::new(
        client.clone(),
        discovered.clone(),
    ));
    let judged = {
        let (model, object, carried) = (model.clone(), object.clone(), carried.clone());
        tokio::task::spawn_blocking(move || {
            findings::judged(&model, &object, &carried, cluster.as_ref())
        })
        .await?
    };
    match judged {
        findings::Judged::Accepted => {}
        findings::Judged::Refused(f) => view.findings.push(f),
        findings::Judged::Unchecked(why) => {
            eprintln!("warning: the policy's lookup failed, its owners cannot be checked: {why}")
        }
    }
    for o in &view.owners {
        for (r, c) in lookups::named(
            std::slice::from_ref(&carried_of(&carried, &o.owner)),
            &args.policy.argocd_namespace,
        )
        .iter()
        .zip(&o.checked)
        {
            if c.found == "gone" {
                view.findings.push(findings::gone(&object.r, &carried, r));
            }
        }
    }
    match output::structured(&view, args.policy.output)? {
        Some(text) => print!("{text}"),
        None => print!("{}", output::who_owns_table(&view)),
    }
    Ok(if view.findings.is_empty() { 0 } else { 1 })
}

fn carried_of(carried: &[owners::Carried], id: &owners::OwnerId) -> owners::Carried {
    carried
        .iter()
        .find(|c| c.id == *id)
        .cloned()
        .unwrap_or_else(|| owners::Carried {
            id: id.clone(),
            scheme: 0,
            values: Default::default(),
            controller: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use rstest::rstest;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_help_names_every_tool_preset_shipped() {
        let help = Cli::command()
            .find_subcommand_mut("owners")
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default();
        for (name, _) in preset::SHIPPED {
            let named = name.split_once('/').map_or(name, |(dir, _)| dir);
            assert!(help.contains(named), "{name} is not in the --preset help");
        }
    }

    #[rstest]
    #[case(&["owners", "--preset", "a", "--settings", "b"])]
    #[case(&["owners", "-A", "-n", "x"])]
    #[case(&["owners", "--owner", "novalue"])]
    #[case(&["owners", "-o", "xml"])]
    #[case(&["owners", "--report-kind", "policyreport"])]
    #[case(&["who-owns"])]
    fn bad_flags_exit_with_2(#[case] args: &[&str]) {
        let e = Cli::try_parse_from(
            std::iter::once("kubectl-single_owner").chain(args.iter().copied()),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), i32::from(CANNOT_RUN), "{e}");
    }

    #[test]
    fn flags_parse() {
        let cli = Cli::try_parse_from([
            "kubectl-single_owner",
            "--context",
            "kind",
            "owners",
            "-n",
            "apps",
            "--owner",
            "a=b",
            "--tool",
            "helm",
            "-o",
            "json",
            "--report",
            "--report-kind",
            "policyreport",
        ])
        .unwrap();
        let Command::Owners(args) = cli.command else {
            panic!()
        };
        assert_eq!(args.owners, [("a".to_string(), "b".to_string())]);
        assert_eq!(args.policy.output, Format::Json);
        assert_eq!(args.report_kind, ReportKind::Policyreport);
    }

    #[tokio::test]
    async fn no_cluster_is_an_error_so_exit_2() {
        let cli = Cli::try_parse_from([
            "kubectl-single_owner",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "owners",
        ])
        .unwrap();
        let e = run(cli).await.unwrap_err();
        assert!(format!("{e:#}").contains("no cluster"), "{e:#}");
    }
}
