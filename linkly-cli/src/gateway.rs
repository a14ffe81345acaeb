//! `linkly gateway …`: Linkly Cloud, self-hosted. `serve` runs the multi-user gateway
//! (`linkly_gateway::serve`); `user add|remove|list`, `token rotate`, `invite [--remove]` and
//! `library list|remove` administer its database
//! directly (SQLite at `<data dir>/gateway/gateway.sqlite` unless `--database` names another
//! file or a PostgreSQL URL), so they work whether or not a gateway runs.

use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use linkly_core::DataDir;
use linkly_gateway::GatewayOptions;
use linkly_gateway::model::{LibraryKey, Limits, Plan};
use linkly_gateway::server::db::{Db, DbSpec};
use serde_json::json;

use crate::args::{
    GatewayCommand, GatewayDb, GatewayLibraryCommand, GatewayServeArgs, GatewayTokenCommand,
    GatewayUserCommand, PlanArg,
};
use crate::backend::runtime;
use crate::daemon::shutdown_signal;
use crate::output::Printer;

/// The gateway's folder in the data directory: its SQLite database, index cache, user notes.
fn gateway_dir(data: &DataDir) -> std::path::PathBuf {
    data.root().join("gateway")
}

/// Opens the gateway's database (creating the schema when missing).
fn open_db(data: &DataDir, db: &GatewayDb) -> anyhow::Result<Db> {
    open_db_reading_from(data, db, None)
}

/// [`open_db`], its reads sent to the standby `standby` when given.
fn open_db_reading_from(
    data: &DataDir,
    db: &GatewayDb,
    standby: Option<&str>,
) -> anyhow::Result<Db> {
    let dir = gateway_dir(data);
    let spec = DbSpec::parse(db.database.as_deref(), &dir)?;
    if let DbSpec::Sqlite(path) = &spec
        && let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        fs_err::create_dir_all(parent)?;
    }
    Db::open_with_standby(&spec, standby)
        .with_context(|| format!("cannot open the gateway database {}", spec.redacted()))
}

pub(crate) fn run(
    data: &DataDir,
    cmd: GatewayCommand,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    match cmd {
        GatewayCommand::Serve(args) => serve(data, args),
        GatewayCommand::Token(cmd) => token(data, cmd, printer),
        GatewayCommand::Library(cmd) => libraries(data, cmd, printer),
        GatewayCommand::User(GatewayUserCommand::Add { name, plan, db }) => {
            let db = open_db(data, &db)?;
            let plan = match plan {
                PlanArg::Free => Plan::Free,
                PlanArg::Pro => Plan::Pro,
            };
            let (user, token) = db.add_user(&name, plan)?;
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "user": user.name, "plan": user.plan, "token": token})
                );
            } else {
                println!(
                    "Added {} ({} plan). Their token (shown once; only its hash is kept):",
                    user.name,
                    user.plan.as_str()
                );
                println!("{token}");
            }
            Ok(ExitCode::SUCCESS)
        }
        GatewayCommand::User(GatewayUserCommand::Remove { name, db }) => {
            let db = open_db(data, &db)?;
            if !db.remove_user(&name)? {
                bail!("no user {name:?} on this gateway (`linkly gateway user list`)");
            }
            if printer.json {
                println!("{}", json!({"status": "success", "removed": name}));
            } else {
                println!("Removed {name}, with their libraries, links and invitations.");
            }
            Ok(ExitCode::SUCCESS)
        }
        GatewayCommand::User(GatewayUserCommand::List { db }) => {
            let db = open_db(data, &db)?;
            let users = db.users()?;
            if printer.json {
                let list: Vec<_> = users
                    .iter()
                    .map(|u| {
                        json!({
                            "user": u.name, "plan": u.plan,
                            "created_at": linkly_core::format_rfc3339(u.created_at),
                        })
                    })
                    .collect();
                println!("{}", json!({"status": "success", "users": list}));
            } else if users.is_empty() {
                println!("No users yet: add one with `linkly gateway user add <name>`.");
            } else {
                for u in &users {
                    println!(
                        "{}\t{}\t{}",
                        u.name,
                        u.plan.as_str(),
                        linkly_core::format_rfc3339(u.created_at)
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        GatewayCommand::Invite {
            library,
            user,
            remove: true,
            db,
        } => {
            let key = LibraryKey::parse(&library)?;
            let db = open_db(data, &db)?;
            let removed = db.uninvite(&key, &user)?;
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "library": key.address(), "user": user, "removed": removed})
                );
            } else if removed {
                println!("Withdrew {user}'s invitation to {key}.");
            } else {
                println!("{user} had no invitation to {key}: nothing to withdraw.");
            }
            Ok(ExitCode::SUCCESS)
        }
        GatewayCommand::Invite {
            library, user, db, ..
        } => {
            let key = LibraryKey::parse(&library)?;
            let db = open_db(data, &db)?;
            db.invite(&key, &user)?;
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "library": key.address(), "user": user})
                );
            } else {
                println!("Invited {user} to {key}: they may link it now.");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `linkly gateway token rotate`.
fn token(data: &DataDir, cmd: GatewayTokenCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    match cmd {
        GatewayTokenCommand::Rotate { name, db } => {
            let db = open_db(data, &db)?;
            let Some(token) = db.rotate_token(&name)? else {
                bail!("no user {name:?} on this gateway (`linkly gateway user list`)");
            };
            if printer.json {
                println!(
                    "{}",
                    json!({"status": "success", "user": name, "token": token})
                );
            } else {
                println!(
                    "New token for {name} (shown once; the old one no longer works):\n{token}"
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `linkly gateway library list|remove`: every library, for an administrator.
fn libraries(
    data: &DataDir,
    cmd: GatewayLibraryCommand,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    match cmd {
        GatewayLibraryCommand::List { db } => {
            let db = open_db(data, &db)?;
            let libraries = db.all_libraries()?;
            if printer.json {
                let list: Vec<_> = libraries
                    .iter()
                    .map(|l| {
                        json!({
                            "library": l.key.address(),
                            "title": l.title,
                            "visibility": l.visibility.as_str(),
                            "documents": l.doc_count,
                            "links": l.links,
                            "updated_at": linkly_core::format_rfc3339(l.updated_at),
                        })
                    })
                    .collect();
                println!("{}", json!({"status": "success", "libraries": list}));
            } else if libraries.is_empty() {
                println!("No libraries yet: users publish them with `linkly publish`.");
            } else {
                for l in &libraries {
                    println!(
                        "{}\t{}\t{} documents\t{} links\t{}",
                        l.key.address(),
                        l.visibility.as_str(),
                        l.doc_count,
                        l.links,
                        linkly_core::format_rfc3339(l.updated_at)
                    );
                }
            }
        }
        GatewayLibraryCommand::Remove { library, db } => {
            let key = LibraryKey::parse(&library)?;
            let db = open_db(data, &db)?;
            if !db.remove_library(&key)? {
                bail!("no library {key} on this gateway (`linkly gateway library list`)");
            }
            if printer.json {
                println!("{}", json!({"status": "success", "removed": key.address()}));
            } else {
                println!("Removed {key}, with its documents, links and invitations.");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(data: &DataDir, a: GatewayServeArgs) -> anyhow::Result<ExitCode> {
    let db = open_db_reading_from(data, &a.db, a.read_database.as_deref())?;
    let database = match db.read_database() {
        Some(standby) => format!("{}, reads from {standby}", db.spec().redacted()),
        None => db.spec().redacted(),
    };
    let mut limits = Limits::default();
    if let Some(n) = a.free_slots {
        limits.free_slots = n;
    }
    if let Some(n) = a.pro_slots {
        limits.pro_slots = n;
    }
    if let Some(u) = a.upgrade_url {
        limits.upgrade_url = u;
    }
    let dir = gateway_dir(data);
    fs_err::create_dir_all(&dir)?;
    let mut opts = GatewayOptions::new(db, dir);
    opts.bind = a.bind.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    opts.port = a.port;
    opts.limits = limits;
    if let Some(rate) = a.rate {
        opts.rate = rate;
    }
    if let Some(n) = a.max_sessions_per_user {
        opts.max_sessions_per_user = n;
    }
    if let Some(bytes) = a.max_publish_bytes_per_day {
        opts.max_publish_bytes_per_day = bytes;
    }
    let port_file = a.port_file;
    runtime()?.block_on(async move {
        let bound = linkly_gateway::bind(opts)
            .await
            .with_context(|| format!("cannot listen on port {}", a.port))?;
        eprintln!(
            "Linkly Cloud gateway: serving on {} (database {database})",
            bound.endpoint()
        );
        if let Some(f) = &port_file {
            // Whole or absent: written aside, then renamed.
            let tmp = f.with_extension("tmp");
            fs_err::write(&tmp, bound.port().to_string())?;
            fs_err::rename(&tmp, f)?;
        }
        let served = bound.serve(shutdown_signal()).await;
        if let Some(f) = &port_file {
            let _ = fs_err::remove_file(f);
        }
        served?;
        eprintln!("Gateway stopped");
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
