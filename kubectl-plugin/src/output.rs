//! How results are printed: `-o table` for people, `-o json` / `-o yaml` as one object for
//! scripts (`{"owners": [...], "findings": [...], "skipped": [...]}`).

use anyhow::Result;
use clap::ValueEnum;
use comfy_table::{ContentArrangement, Table, presets::NOTHING};
use serde::Serialize;

use crate::scan::Outcome;
use crate::who_owns::WhoOwns;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Yaml,
}

/// `value` as JSON or YAML (`None` for a table, which each command writes its own way).
pub fn structured<T: Serialize>(value: &T, format: Format) -> Result<Option<String>> {
    Ok(match format {
        Format::Table => None,
        Format::Json => Some(serde_json::to_string_pretty(value)? + "\n"),
        Format::Yaml => Some(serde_yaml::to_string(value)?),
    })
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    t
}

fn namespace(ns: &Option<String>) -> String {
    ns.clone().unwrap_or_else(|| "-".into())
}

/// The owners, then the findings, then what was skipped.
pub fn outcome_table(outcome: &Outcome) -> String {
    let mut out = String::new();
    if outcome.owners.is_empty() {
        out.push_str("No owned objects found.\n");
    } else {
        let mut t = table(&["TOOL", "OWNER", "KIND", "NAMESPACE", "NAME"]);
        for g in &outcome.owners {
            let owner = (g.owner.iter())
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            for o in &g.objects {
                t.add_row(vec![
                    g.tool.clone(),
                    owner.clone(),
                    o.kind.clone(),
                    namespace(&o.namespace),
                    o.name.clone(),
                ]);
            }
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out.push('\n');
    if outcome.findings.is_empty() {
        out.push_str("No findings.\n");
    } else {
        out.push_str(&format!("{} finding(s):\n", outcome.findings.len()));
        for f in &outcome.findings {
            out.push_str(&format!(
                "- [{}] {}\n  {}\n",
                f.kind.as_str(),
                f.object.described(),
                f.message
            ));
        }
    }
    if !outcome.skipped.is_empty() {
        out.push_str(&format!("\n{} skipped:\n", outcome.skipped.len()));
        for s in &outcome.skipped {
            out.push_str(&format!("- {}: {}\n", s.what, s.reason));
        }
    }
    out
}

/// One object's owners, references, handover and bindings.
pub fn who_owns_table(w: &WhoOwns) -> String {
    let mut out = format!("{}\n", w.object.described());
    out.push_str("\nOwners:\n");
    if w.owners.is_empty() {
        out.push_str("  none (no owner keys of the policy)\n");
    }
    for o in &w.owners {
        out.push_str(&format!("  {}\n", o.owner));
        for c in &o.checked {
            out.push_str(&format!("    {}: {}\n", c.owner, c.found));
        }
    }
    out.push_str("\nownerReferences:\n");
    if w.owner_references.is_empty() {
        out.push_str("  none\n");
    }
    for r in &w.owner_references {
        out.push_str(&format!(
            "  {} {:?} ({}){}\n",
            r.kind,
            r.name,
            r.api_version,
            if r.controller { " controller" } else { "" }
        ));
    }
    if !w.controller_chain.is_empty() {
        out.push_str("\nController chain:\n");
        for (depth, l) in w.controller_chain.iter().enumerate() {
            out.push_str(&format!(
                "  {}{} {:?}{}: {}\n",
                "  ".repeat(depth),
                l.kind,
                l.name,
                l.namespace
                    .as_ref()
                    .map(|n| format!(" in {n:?}"))
                    .unwrap_or_default(),
                l.found
            ));
        }
    }
    out.push_str("\nHandover: ");
    match &w.handover {
        Some(h) => out.push_str(&format!("{}={} (in progress)\n", h.annotation, h.value)),
        None => out.push_str("none\n"),
    }
    if !w.bindings.is_empty() {
        out.push_str("\nWriters bound to its owner:\n");
        for b in &w.bindings {
            out.push_str(&format!("  {}: {}\n", b.tool, b.writers));
        }
    }
    if !w.findings.is_empty() {
        out.push_str(&format!("\n{} finding(s):\n", w.findings.len()));
        for f in &w.findings {
            out.push_str(&format!("- [{}] {}\n", f.kind.as_str(), f.message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owners::Filter;
    use crate::scan::tests::run;

    #[tokio::test]
    async fn json_is_one_object_of_owners_findings_and_skipped() {
        let outcome = run(&Filter::default()).await;
        let text = structured(&outcome, Format::Json).unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["findings", "owners", "skipped"]);
        let f = &v["findings"][0];
        assert_eq!(f["kind"], "refused-on-owner-change");
        assert_eq!(f["object"]["kind"], "ConfigMap");
        assert_eq!(f["object"]["namespace"], "apps");
        assert!(f["owners"][0]["keys"].is_object());
        assert!(f["message"].as_str().unwrap().contains("revision"));
        let g = &v["owners"][0];
        assert!(g["tool"].is_string() && g["owner"].is_object() && g["objects"].is_array());
        let yaml: serde_json::Value =
            serde_yaml::from_str(&structured(&outcome, Format::Yaml).unwrap().unwrap()).unwrap();
        assert_eq!(yaml, v);
    }

    #[tokio::test]
    async fn the_table_lists_owners_findings_and_skipped() {
        let outcome = run(&Filter::default()).await;
        let text = outcome_table(&outcome);
        assert!(text.contains("TOOL"), "{text}");
        assert!(text.contains("3 finding(s):"), "{text}");
        assert!(text.contains("[owner-gone] ConfigMap \"orphan\""), "{text}");
        assert!(text.contains("skipped:"), "{text}");
        assert!(structured(&outcome, Format::Table).unwrap().is_none());
    }
}
