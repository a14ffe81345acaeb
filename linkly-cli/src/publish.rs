//! `linkly publish`: sends a local library's extracted documents to a Linkly Cloud gateway
//! (`linkly_gateway::client::publish`), or takes it down with `--unpublish`.

use std::process::ExitCode;

use anyhow::bail;
use linkly_core::{DataDir, LibraryRef};
use linkly_gateway::client::publish::{PublishOptions, slug_from_name};
use linkly_gateway::model::{LibraryMeta, Visibility};
use linkly_tools::Linkly;
use serde_json::json;

use crate::args::{PublishArgs, VisibilityArg};
use crate::output::Printer;

/// The gateway token: `--token`, else `$LINKLY_GATEWAY_TOKEN`.
pub(crate) fn gateway_token(token: Option<String>) -> anyhow::Result<String> {
    match token
        .or_else(|| std::env::var("LINKLY_GATEWAY_TOKEN").ok())
        .filter(|t| !t.trim().is_empty())
    {
        Some(t) => Ok(t),
        None => bail!(
            "no gateway token: pass --token (the one `linkly gateway user add` printed) or set LINKLY_GATEWAY_TOKEN"
        ),
    }
}

pub(crate) fn publish(
    data: &DataDir,
    args: PublishArgs,
    token: Option<String>,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let token = gateway_token(token)?;
    if args.unpublish {
        let slug = match args.slug {
            Some(s) => s,
            None => {
                let config = linkly_core::Config::load(data)?;
                match config.library(&args.library) {
                    LibraryRef::Local(l) => slug_from_name(&l.name),
                    _ => args.library.clone(),
                }
            }
        };
        let deleted = linkly_gateway::client::publish::unpublish(&args.gateway, &token, &slug)?;
        if printer.json {
            println!(
                "{}",
                json!({"status": "success", "slug": slug, "deleted": deleted})
            );
        } else if deleted {
            println!("Unpublished {slug}: its documents, links and invitations are gone.");
        } else {
            println!("Nothing to unpublish: you have no library {slug} on that gateway.");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let category = match args.category.as_deref() {
        Some(c) => linkly_gateway::model::parse_category(c)?.to_string(),
        None => String::new(),
    };
    let opts = PublishOptions {
        gateway: args.gateway,
        token,
        slug: args.slug,
        meta: LibraryMeta {
            title: args.title.unwrap_or_default(),
            description: args.description.unwrap_or_default(),
            category,
            visibility: args.visibility.map(|v| match v {
                VisibilityArg::Public => Visibility::Public,
                VisibilityArg::Showcase => Visibility::Showcase,
                VisibilityArg::Private => Visibility::Private,
            }),
        },
    };
    let local = Linkly::open(data.clone()).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    let report = linkly_gateway::client::publish::publish(&local, &args.library, &opts)?;
    if printer.json {
        let mut v = serde_json::to_value(&report)?;
        v["status"] = json!("success");
        println!("{v}");
    } else {
        println!(
            "Published {} as {}{}: {} sent, {} unchanged, {} removed{}. {}",
            args.library,
            report.library,
            if report.created { " (new)" } else { "" },
            report.sent,
            report.unchanged,
            report.removed,
            if report.skipped > 0 {
                format!(" ({} left out: no extractable text)", report.skipped)
            } else {
                String::new()
            },
            match &report.vector_model {
                Some(m) => format!(
                    "Vectors of {m} went with {} of them: the gateway searches it by meaning when it has that model.",
                    report.sent_with_vectors
                ),
                None => "No vectors went (the local index has none): the gateway searches it by keyword.".to_string(),
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
