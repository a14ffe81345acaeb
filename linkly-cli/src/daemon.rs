//! `linkly serve` and `linkly stop`: the always-fresh server of a data directory, and how
//! commands find, start, stop and replace it.
//!
//! One per data directory (an exclusive lock on `serve.lock`). It binds first (so clients can
//! connect at once and see `index_status`), then runs `linkly-tools`' keep-fresh engine:
//! reconcile, watch, embed. SIGINT/SIGTERM and `POST /control/stop` (what `linkly stop` sends)
//! stop it gracefully: the HTTP server drains, the port file is removed, and a sync batch in
//! flight is rolled back (the index's dirty-row protocol redoes it at the next start).
//!
//! `linkly mcp` starts one in the background when none runs (`--exit-when-unused`: it stops
//! when its clients are gone; [`ensure_server`]). A server a person starts by hand takes over
//! from a background one: it leaves a hand-over mark in the data directory, asks the
//! background server to stop (its requests in flight finish), and takes the lock when it is
//! gone; meanwhile clients that lost their session wait for the new server instead of starting
//! another background one, and reconnect to it. A server started by hand is never replaced:
//! a second one is refused, naming `linkly stop`.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use linkly_core::DataDir;
use linkly_http::{
    CONTROL_HEADER, Health, HttpOptions, IndexStatus, PortFile, ServerInfo, ServerState, StartedBy,
};
use linkly_index::Index;
use linkly_tools::{FreshEvent, IndexState, KeepFreshOptions, Linkly};
use serde_json::json;

use crate::args::ServeArgs;
use crate::backend::runtime;
use crate::health::{Target, describe, read_port_file_full};
use crate::lan;
use crate::output::Printer;

/// How long a server started by `linkly mcp` lives without any request (`LINKLY_MCP_IDLE_SECS`).
const DEFAULT_IDLE_SECS: u64 = 300;
/// How long a client waits for a server it started to answer.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a hand-over may take: the background server finishes its requests in flight
/// (5 s at most, see `linkly_http`'s drain) and exits, the new one binds.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `linkly stop` waits for the server to be gone.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// A new random LAN token: 32 hex characters.
fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub(crate) fn serve(data: &DataDir, a: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = linkly_core::Config::load(data)?;
    let mut changed = false;
    for p in &a.paths {
        changed |= config.add_folder(p)?;
    }
    // `--lan` turns LAN access on (a setting: the window turns it off and on again while the
    // server runs) and listens on every address from the start.
    if a.lan && config.lan_access().is_none() {
        config.lan_enabled = true;
        if config.lan_token.as_deref().is_none_or(str::is_empty) {
            config.lan_token = Some(new_token());
        }
        changed = true;
    }
    data.ensure()?;
    if changed {
        config.save(data)?;
    }

    // Single writer: one server per data directory.
    let by_hand = a.exit_when_unused.is_none();
    let lock_path = data.root().join("serve.lock");
    let lock = fs_err::File::create(&lock_path)?;
    let mut mark = None;
    match lock.file().try_lock() {
        // A person's server is about to take over: a background one leaves it the directory.
        Ok(()) if !by_hand && handover_pending(data) => {
            eprintln!(
                "A server started by hand is taking over {}: leaving it the work",
                data.root().display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        Ok(()) => {}
        // Started by `linkly mcp`, which lost a race to another client's server: that one
        // serves both.
        Err(std::fs::TryLockError::WouldBlock) if !by_hand => {
            eprintln!(
                "A server already runs for {}: leaving it the work",
                data.root().display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        Err(std::fs::TryLockError::WouldBlock) => mark = Some(take_over(data, &lock, &lock_path)?),
        Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
    }
    let info = ServerInfo {
        pid: std::process::id(),
        started_at: linkly_core::format_rfc3339(linkly_core::now_millis()),
        started_by: if by_hand {
            StartedBy::Hand
        } else {
            StartedBy::Background
        },
        options: options_of(&a),
    };

    let index = Arc::new(Index::open(&data.index_dir())?);
    let linkly = Arc::new(Linkly::new(index, data.clone(), config));
    let state = ServerState::new(IndexStatus::Scanning);
    state.set_info(info);
    let bind = if a.lan {
        a.bind.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    let rt = runtime()?;
    // The window's live progress, fed by the keep-fresh engine below.
    let live = Arc::new(linkly_window::Live::default());
    let window_live = live.clone();
    let result = rt.block_on(async move {
        // Bind first, so clients can connect at once and see `index_status`.
        // Who may come from the network is read from the configuration at every request.
        let lan_of = linkly.clone();
        let lan_switch: linkly_http::LanSwitch =
            Arc::new(move || lan_of.config().lan_access().map(str::to_string));
        let bound = linkly_http::bind(HttpOptions {
            bind,
            lan_switch: Some(lan_switch),
            port: a.port,
            port_file: Some(data.port_file()),
            control_token: Some(new_token()),
            // Per start, like Jupyter's: the person's clients read it from the 0600 port file.
            local_secret: Some(linkly_http::new_token()),
            ..HttpOptions::default()
        })
        .await?;
        eprintln!("Linkly MCP server: {}", bound.endpoint());
        eprintln!(
            "Linkly window: {}",
            bound.endpoint().trim_end_matches("/mcp").to_string() + "/"
        );
        if let Some(mark) = mark {
            // The mark keeps clients waiting for this server: it goes once the port file
            // names it.
            let port_file = data.port_file();
            tokio::spawn(async move {
                let started = Instant::now();
                while started.elapsed() < Duration::from_secs(10)
                    && read_port_file_full(&port_file)
                        .ok()
                        .flatten()
                        .is_none_or(|p| p.pid != std::process::id())
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                drop(mark);
            });
        }
        if a.lan {
            eprintln!(
                "LAN access on {bind}:{}: clients must send `Authorization: Bearer <token>` (the token is in `linkly status`); they read only the libraries in lan_shared_libraries. The token travels over plain HTTP: use trusted networks, or an SSH tunnel or TLS proxy",
                bound.port()
            );
        }
        // The keep-fresh engine: reconcile, watch, embed (fetching the model when allowed).
        let engine_state = state.clone();
        let announced = AtomicBool::new(false);
        let engine = linkly
            .keep_fresh(
                KeepFreshOptions {
                    watch: !a.no_watch,
                    fetch_model: !a.no_model_download,
                },
                move |event| {
                    live.record(event);
                    report(&engine_state, &announced, event)
                },
            )
            .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        let stop = stop_when(state.clone(), data.root().to_path_buf(), a.exit_when_unused);
        let agent_token = data.agent_token()?;
        let lan_listener = Arc::new(lan::Listener::default());
        let app = compose(
            &bound,
            linkly.clone(),
            state.clone(),
            window_live,
            agent_token,
            lan_listener.clone(),
        );
        if bind.is_loopback() {
            // Started for this computer: the LAN listener opens and closes with the setting.
            tokio::spawn(lan::follow(
                linkly,
                lan_listener,
                bound.port(),
                app.router.clone(),
                bound.limits(),
            ));
        }
        let close_sessions = app.close_sessions;
        let served = linkly_http::serve(bound, app.router, state, async move {
            stop.await;
            close_sessions();
        })
        .await;
        drop(engine);
        Ok::<(), anyhow::Error>(served?)
    });
    drop(lock);
    result?;
    Ok(ExitCode::SUCCESS)
}

/// The routes a data directory's server serves, and what ends its MCP sessions at shutdown.
struct App {
    router: axum::Router,
    close_sessions: Box<dyn FnOnce() + Send>,
}

/// Composes the server: `/health` and `/control/stop` (the host's), `/mcp` and the window at
/// `/`, behind the one gate (every route's class, the local secret, the agent and LAN tokens).
fn compose(
    bound: &linkly_http::BoundHttp,
    linkly: Arc<Linkly>,
    state: Arc<ServerState>,
    live: Arc<linkly_window::Live>,
    agent_token: String,
    lan_listener: Arc<lan::Listener>,
) -> App {
    let mcp = linkly_mcp::router(
        linkly.clone(),
        bound.bind(),
        &linkly_mcp::McpOptions::default(),
    );
    let close_sessions = Box::new(mcp.closer());
    let shared_of = linkly.clone();
    let gate = bound.gate(
        Some(agent_token.clone()),
        Arc::new(move || shared_of.config().lan_shared_libraries.clone()),
    );
    let window = linkly_window::router(
        linkly.clone(),
        live,
        linkly_window::WindowOptions {
            endpoint: bound.endpoint(),
            bind: bound.bind(),
            lan_address: lan_address(bound, &linkly, lan_listener),
            agent_token: Some(agent_token),
            gate: gate.clone(),
        },
    );
    let routes = bound
        .host_routes(linkly, state)
        .mount(
            &["/mcp", "/mcp/{*rest}"],
            linkly_http::Class::Read,
            mcp.router,
        )
        .merge(window);
    App {
        router: gate.wrap(routes),
        close_sessions,
    }
}

/// Where other computers reach the server while LAN access is on: the LAN listener's address
/// for a server started for this computer; for one started with `--lan` (every address from
/// the start), its network address while the setting is on.
fn lan_address(
    bound: &linkly_http::BoundHttp,
    linkly: &Arc<Linkly>,
    listener: Arc<lan::Listener>,
) -> Arc<dyn Fn() -> Option<std::net::SocketAddr> + Send + Sync> {
    let (bind, port) = (bound.bind(), bound.port());
    if bind.is_loopback() {
        return Arc::new(move || listener.address());
    }
    let ip = if bind.is_unspecified() {
        lan::network_address().unwrap_or(bind)
    } else {
        bind
    };
    let linkly = linkly.clone();
    Arc::new(move || {
        linkly
            .config()
            .lan_access()
            .map(|_| std::net::SocketAddr::new(ip, port))
    })
}

/// Shows what the engine does: start-up sync and failures on stderr, the rest in the log, and
/// the index state in `/health`.
fn report(state: &ServerState, announced: &AtomicBool, event: &FreshEvent) {
    match event {
        FreshEvent::State(s) => state.set(match s {
            IndexState::Scanning => IndexStatus::Scanning,
            IndexState::Indexing => IndexStatus::Indexing,
            IndexState::Watching => IndexStatus::Watching,
            IndexState::Idle => IndexStatus::Idle,
            IndexState::Rebuilding => IndexStatus::Rebuilding,
            IndexState::Error => IndexStatus::Error,
        }),
        FreshEvent::Synced { report: r, full } => {
            if *full {
                eprintln!(
                    "Indexed {} files: {} new, {} changed, {} removed",
                    r.seen, r.added, r.updated, r.removed
                );
            } else if r.added + r.updated + r.removed > 0 {
                tracing::info!(
                    added = r.added,
                    updated = r.updated,
                    removed = r.removed,
                    elapsed_ms = r.elapsed_ms,
                    "changes indexed"
                );
            }
        }
        FreshEvent::Downloading { model, .. } if !announced.swap(true, Ordering::SeqCst) => {
            eprintln!(
                "Fetching the embedding model {model} from the Hugging Face hub in the background (search is keyword-only until it is there; `--no-model-download` turns this off)"
            );
        }
        FreshEvent::Embedded(r) if r.docs > 0 => eprintln!(
            "Embedded {} documents ({} chunks) in {:.1}s",
            r.docs,
            r.chunks,
            r.elapsed_ms as f64 / 1000.0
        ),
        FreshEvent::Failed(m) => eprintln!("Error: {m}"),
        _ => {}
    }
}

/// Resolves on SIGINT/SIGTERM or a `POST /control/stop`; with `unused`, also after that many
/// seconds without a request, or when the data directory is gone (a server that `linkly mcp`
/// started for its clients).
async fn stop_when(state: Arc<ServerState>, root: std::path::PathBuf, unused: Option<u64>) {
    let asked = state.clone();
    let asked = async move {
        let request = asked.stop_requested().await;
        match (request.handover, request.by_pid) {
            (true, Some(pid)) => eprintln!(
                "Handing over to the server started by hand (pid {pid}): finishing the requests in flight"
            ),
            (true, None) => eprintln!(
                "Handing over to a server started by hand: finishing the requests in flight"
            ),
            (false, _) => eprintln!("Stop requested (`linkly stop`)"),
        }
    };
    let idle = async move {
        let Some(secs) = unused else {
            return std::future::pending::<()>().await;
        };
        let limit = Duration::from_secs(secs);
        loop {
            tokio::time::sleep(Duration::from_secs(1).min(limit)).await;
            if state.unused_for() >= limit {
                eprintln!("No client for {secs}s: stopping");
                return;
            }
            if !root.exists() {
                eprintln!("The data directory is gone: stopping");
                return;
            }
        }
    };
    tokio::select! {
        () = shutdown_signal() => {},
        () = idle => {},
        () = asked => {},
    }
}

/// Resolves on SIGINT or SIGTERM (also how `linkly gateway serve` stops).
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    eprintln!("Shutting down");
}

/// The flags a server was started with, as `/health` and `linkly status` show them.
fn options_of(a: &ServeArgs) -> Vec<String> {
    let mut o = Vec::new();
    if a.lan {
        o.push("--lan".to_string());
    }
    if let Some(b) = a.bind {
        o.extend(["--bind".to_string(), b.to_string()]);
    }
    if a.port != crate::args::DEFAULT_PORT {
        o.extend(["--port".to_string(), a.port.to_string()]);
    }
    if a.no_watch {
        o.push("--no-watch".into());
    }
    if a.no_model_download {
        o.push("--no-model-download".into());
    }
    if let Some(s) = a.exit_when_unused {
        o.extend(["--exit-when-unused".to_string(), s.to_string()]);
    }
    o
}

/// `<data dir>/handover`: a server started by hand is taking over (it holds the pid of that
/// server). While it is fresh, clients wait for the new server instead of starting one.
fn handover_file(data: &DataDir) -> PathBuf {
    data.root().join("handover")
}

/// Whether a server started by hand is taking over now (a mark younger than the hand-over's
/// time limit: a mark left by a crashed server does not hold anything up for long).
fn handover_pending(data: &DataDir) -> bool {
    fs_err::metadata(handover_file(data))
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < HANDOVER_TIMEOUT))
}

/// The hand-over mark, removed when dropped.
struct HandoverMark(PathBuf);

impl Drop for HandoverMark {
    fn drop(&mut self) {
        let _ = fs_err::remove_file(&self.0);
    }
}

/// The running server's port file and `/health`, when it answers.
fn current(data: &DataDir) -> Option<(PortFile, Health)> {
    let file = read_port_file_full(&data.port_file()).ok().flatten()?;
    let health = Target::local(file.port)
        .health_json(Duration::from_millis(1500))
        .ok()?;
    Some((file, health))
}

/// Asks the server of `file` to stop (`handover`: for a server started by hand that takes
/// over). Errors carry the server's answer.
fn ask_to_stop(file: &PortFile, handover: bool) -> anyhow::Result<()> {
    let Some(control) = file.control.as_deref() else {
        bail!(
            "the server (pid {}) is from an older version of Linkly and takes no stop request; stop it with Ctrl-C or `kill {}`",
            file.pid,
            file.pid
        );
    };
    let target = Target::of_port_file(file);
    let body = json!({"handover": handover, "by_pid": std::process::id()}).to_string();
    let (status, answer, _) = target.request(
        "POST",
        "/control/stop",
        &[(CONTROL_HEADER, control)],
        &body,
        Duration::from_secs(5),
    )?;
    if !(200..300).contains(&status) {
        bail!(
            "the server refused to stop (HTTP {status}): {}",
            answer.trim()
        );
    }
    Ok(())
}

/// A server started by hand finds the lock held: it takes over from a background server (and
/// returns the hand-over mark, to drop once its port file is written), or refuses when the
/// running one was started by hand.
fn take_over(
    data: &DataDir,
    lock: &fs_err::File,
    lock_path: &Path,
) -> anyhow::Result<HandoverMark> {
    let mark_path = handover_file(data);
    fs_err::write(&mark_path, std::process::id().to_string())?;
    let mark = HandoverMark(mark_path);
    let started = Instant::now();
    let mut asked: Option<u32> = None;
    loop {
        match lock.file().try_lock() {
            Ok(()) => {
                if let Some(pid) = asked {
                    eprintln!("Took over from the background server (pid {pid})");
                }
                return Ok(mark);
            }
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
        if asked.is_none() {
            match current(data) {
                Some((file, health)) => match health.server {
                    Some(info) if info.started_by == StartedBy::Background => {
                        eprintln!(
                            "A background server runs for {} ({}): it hands over to this one once its requests in flight are done",
                            data.root().display(),
                            describe(&info)
                        );
                        ask_to_stop(&file, true)?;
                        asked = Some(file.pid);
                    }
                    Some(info) => bail!(
                        "another `linkly serve` is already running for {} ({}); tool commands already go to it — `linkly stop` stops it",
                        data.root().display(),
                        describe(&info)
                    ),
                    None => bail!(
                        "another `linkly serve` is already running for {} (pid {}, an older version); stop it first",
                        data.root().display(),
                        file.pid
                    ),
                },
                // The server holding the lock has not written its port file yet (it is
                // starting), or it stopped answering.
                None if started.elapsed() > Duration::from_secs(10) => bail!(
                    "another `linkly serve` is already running for {} (lock {}) but does not answer; `linkly stop` or `linkly doctor` may help",
                    data.root().display(),
                    lock_path.display()
                ),
                None => {}
            }
        }
        if started.elapsed() > HANDOVER_TIMEOUT {
            bail!(
                "the background server did not hand over within {}s (see {})",
                HANDOVER_TIMEOUT.as_secs(),
                data.root().join("serve.log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `linkly stop`: stops the data directory's server gracefully (by its control request, with
/// the token of the port file), and waits until it is gone.
pub(crate) fn stop(data: &DataDir, printer: Printer) -> anyhow::Result<ExitCode> {
    let report = |stopped: Option<&ServerInfo>, message: String| {
        if printer.json {
            println!(
                "{}",
                json!({"status": "success", "stopped": stopped.is_some(), "server": stopped, "message": message})
            );
        } else {
            println!("{message}");
        }
    };
    let Some(file) = read_port_file_full(&data.port_file())? else {
        report(
            None,
            format!("No server runs for {}", data.root().display()),
        );
        return Ok(ExitCode::SUCCESS);
    };
    let info = match Target::local(file.port).health_json(Duration::from_secs(2)) {
        Ok(h) => h.server,
        Err(e) => {
            if lock_free(data) {
                // A server that crashed left its port file.
                let _ = fs_err::remove_file(data.port_file());
                report(
                    None,
                    format!(
                        "No server runs for {} (removed the port file of one that did not stop cleanly)",
                        data.root().display()
                    ),
                );
                return Ok(ExitCode::SUCCESS);
            }
            bail!(
                "the server of {} (pid {}) does not answer ({e:#}); stop it with `kill {}`",
                data.root().display(),
                file.pid,
                file.pid
            );
        }
    };
    ask_to_stop(&file, false)?;
    let started = Instant::now();
    while !gone(data, &file) {
        if started.elapsed() > STOP_TIMEOUT {
            bail!(
                "the server (pid {}) was asked to stop but still runs after {}s",
                file.pid,
                STOP_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let what = info
        .as_ref()
        .map(describe)
        .unwrap_or_else(|| format!("pid {}", file.pid));
    report(info.as_ref(), format!("Stopped the server ({what})"));
    Ok(ExitCode::SUCCESS)
}

/// Whether no process holds `serve.lock` (taken and released at once).
fn lock_free(data: &DataDir) -> bool {
    let Ok(f) = fs_err::File::create(data.root().join("serve.lock")) else {
        return false;
    };
    f.file().try_lock().is_ok()
}

/// Whether the server of `file` is gone: its port file removed (or another server's) and its
/// port closed.
fn gone(data: &DataDir, file: &PortFile) -> bool {
    let same_file = read_port_file_full(&data.port_file())
        .ok()
        .flatten()
        .is_some_and(|p| p.pid == file.pid);
    !same_file
        && Target::local(file.port)
            .health(Duration::from_millis(500))
            .is_err()
}

/// The running server of the data directory, if its port file answers `/health`.
pub(crate) fn running(data: &DataDir) -> Option<Target> {
    let file = read_port_file_full(&data.port_file()).ok().flatten()?;
    let target = Target::of_port_file(&file);
    target
        .health(Duration::from_millis(1500))
        .ok()
        .filter(|(status, _, _)| (200..300).contains(status))
        .map(|_| target)
}

/// The data directory's server: the running one, else one started now in the background
/// (`serve --exit-when-unused`). Two clients starting at once both end up with the same
/// server: the second `serve` finds the first one's lock and exits, and both wait for the port
/// file of the winner. While a server started by hand takes over, it waits for that one.
pub(crate) fn ensure_server(data: &DataDir) -> anyhow::Result<Target> {
    if let Some(t) = running(data) {
        return Ok(t);
    }
    if handover_pending(data) {
        let started = Instant::now();
        while started.elapsed() < HANDOVER_TIMEOUT && handover_pending(data) {
            if let Some(t) = running(data) {
                return Ok(t);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        if let Some(t) = running(data) {
            return Ok(t);
        }
    }
    data.ensure()?;
    let exe = std::env::current_exe().context("cannot find the linkly executable")?;
    let log_path = data.root().join("serve.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    let idle = std::env::var("LINKLY_MCP_IDLE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_IDLE_SECS);
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--home")
        .arg(data.root())
        .args(["serve", "--exit-when-unused", &idle.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    // Its own process group: a client that kills its process group does not stop the server
    // other clients share.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().context("cannot start `linkly serve`")?;
    let started = Instant::now();
    let mut exited = None;
    loop {
        if let Some(t) = running(data) {
            // Reap it when it stops (it outlives this process otherwise; init reaps it then).
            if exited.is_none() {
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
            }
            // A server just started loads the embedding model (when on disk) before anything
            // else: the client's first searches are then hybrid. A fraction of a second.
            while started.elapsed() < START_TIMEOUT
                && t.health_json(Duration::from_secs(2))
                    .is_ok_and(|h| h.index_status == IndexStatus::Scanning)
            {
                std::thread::sleep(Duration::from_millis(25));
            }
            return Ok(t);
        }
        if exited.is_none()
            && let Ok(Some(status)) = child.try_wait()
        {
            // Lost the race for the lock to another client's server (or a server started by
            // hand is taking over), or failed: keep waiting a little for the winner's port
            // file.
            exited = Some(status);
        }
        let patience = if handover_pending(data) {
            HANDOVER_TIMEOUT
        } else {
            Duration::from_secs(5)
        };
        if started.elapsed() > START_TIMEOUT.max(patience)
            || exited.is_some() && started.elapsed() > patience
        {
            bail!(
                "`linkly serve` did not start (see {}){}",
                log_path.display(),
                exited
                    .map(|s| format!("; it exited with {s}"))
                    .unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}
