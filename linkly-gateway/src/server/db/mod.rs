//! The gateway's one store: accounts, the catalogue, links, invitations and published
//! documents, in SQLite (one process) or PostgreSQL (several processes sharing one
//! catalogue). See docs/gateway.md for the rules.
//!
//! Every query is written once, with `$1`-style placeholders (SQLite's backend numbers them
//! `?1`); only the schemas differ. Race-free rules (the slot check of [`Db::link`], document
//! sequence numbers) hold across processes: SQLite write transactions take the write lock
//! at once (`BEGIN IMMEDIATE`), PostgreSQL ones lock the row they depend on
//! (`SELECT … FOR UPDATE`).

mod postgres;
mod sqlite;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::model::{
    CatalogEntry, CatalogPage, CatalogQuery, DocChanges, LibraryInfo, LibraryKey, LibraryMeta,
    Limits, LinkOutcome, ManifestEntry, Plan, PublishedDoc, UnlinkOutcome, User, Visibility,
    parse_category, valid_name,
};
use crate::server::admin;
use crate::{GatewayError, Result};

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbSpec {
    /// A SQLite file (one gateway process).
    Sqlite(PathBuf),
    /// A PostgreSQL URL, `postgres://user:password@host:port/database` (several processes).
    Postgres(String),
}

impl DbSpec {
    /// `None` → `<data_dir>/gateway.sqlite`; `postgres://…` or `postgresql://…` → PostgreSQL;
    /// `sqlite://<path>` or any other text → a SQLite file at that path.
    pub fn parse(database: Option<&str>, data_dir: &Path) -> Result<DbSpec> {
        let Some(raw) = database.map(str::trim) else {
            return Ok(DbSpec::Sqlite(data_dir.join("gateway.sqlite")));
        };
        if raw.is_empty() {
            return Err(GatewayError::invalid(
                "--database is empty: give a SQLite file path or a postgres:// URL",
            ));
        }
        if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            return Ok(DbSpec::Postgres(raw.to_string()));
        }
        let path = raw.strip_prefix("sqlite://").unwrap_or(raw);
        Ok(DbSpec::Sqlite(PathBuf::from(path)))
    }

    /// A description without any password: the SQLite path, or the PostgreSQL URL with its
    /// password replaced by `***`.
    pub fn redacted(&self) -> String {
        match self {
            DbSpec::Sqlite(p) => p.display().to_string(),
            DbSpec::Postgres(url) => {
                let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
                match rest.split_once('@') {
                    Some((auth, host)) => match auth.split_once(':') {
                        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
                        None => url.clone(),
                    },
                    None => url.clone(),
                }
            }
        }
    }
}

/// One value bound to or read from a query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    /// An integer (booleans are 0/1).
    I(i64),
    /// Text.
    T(String),
    /// NULL.
    N,
}

/// One row read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row(Vec<Val>);

impl Row {
    fn i(&self, k: usize) -> i64 {
        match self.0.get(k) {
            Some(Val::I(v)) => *v,
            Some(Val::T(s)) => s.parse().unwrap_or(0),
            _ => 0,
        }
    }

    fn t(&self, k: usize) -> String {
        self.ot(k).unwrap_or_default()
    }

    fn ot(&self, k: usize) -> Option<String> {
        match self.0.get(k) {
            Some(Val::T(s)) => Some(s.clone()),
            Some(Val::I(v)) => Some(v.to_string()),
            _ => None,
        }
    }
}

/// An open transaction on either backend.
enum Tx<'a> {
    Lite(rusqlite::Transaction<'a>),
    Pg(::postgres::Transaction<'a>),
}

impl Tx<'_> {
    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>> {
        match self {
            Tx::Lite(tx) => sqlite::query(tx, sql, params),
            Tx::Pg(tx) => postgres::query(tx, sql, params),
        }
    }

    fn one(&mut self, sql: &str, params: &[Val]) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64> {
        match self {
            Tx::Lite(tx) => sqlite::execute(tx, sql, params),
            Tx::Pg(tx) => postgres::execute(tx, sql, params),
        }
    }

    /// ` FOR UPDATE` on PostgreSQL (a row lock until commit); nothing on SQLite, whose write
    /// transactions already hold the database's write lock.
    fn for_update(&self) -> &'static str {
        match self {
            Tx::Lite(_) => "",
            Tx::Pg(_) => " FOR UPDATE",
        }
    }

    fn commit(self) -> Result<()> {
        match self {
            Tx::Lite(tx) => Ok(tx.commit()?),
            Tx::Pg(tx) => tx.commit().map_err(postgres::failed),
        }
    }
}

enum Backend {
    Sqlite(sqlite::Pool),
    Postgres(postgres::Pool),
}

struct Inner {
    spec: DbSpec,
    backend: Backend,
}

/// The gateway's store. Cheap to clone (an `Arc` inside); every method is synchronous and
/// blocks on the database, so async code calls it from blocking threads
/// (`tokio::task::spawn_blocking`). On PostgreSQL this is required: the `postgres` driver
/// runs its own runtime and panics inside another one.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("spec", &self.inner.spec.redacted())
            .finish()
    }
}

/// The columns of a [`LibraryInfo`] (read by [`library_of`]), over `libraries l JOIN users u`.
const LIB_COLS: &str = "l.id, u.name, l.slug, l.title, l.description, l.category, \
    l.visibility, l.doc_count, l.stars, \
    (SELECT COUNT(*) FROM links lc WHERE lc.library_id = l.id), \
    l.created_at, l.updated_at, l.content_seq";

/// The viewer's flags of a [`CatalogEntry`] (the viewer is `$1`): owner, linked, invited.
const ENTRY_FLAGS: &str = "CASE WHEN l.owner_id = $1 THEN 1 ELSE 0 END, \
    CASE WHEN EXISTS (SELECT 1 FROM links lk WHERE lk.library_id = l.id AND lk.user_id = $1) \
    THEN 1 ELSE 0 END, \
    CASE WHEN EXISTS (SELECT 1 FROM invites iv WHERE iv.library_id = l.id AND iv.user_id = $1) \
    THEN 1 ELSE 0 END";

/// The libraries the viewer (`$1`) may see: public and showcase ones, their own, and those
/// they were invited to.
const VISIBLE: &str = "(l.visibility <> 'private' OR l.owner_id = $1 OR EXISTS \
    (SELECT 1 FROM invites vi WHERE vi.library_id = l.id AND vi.user_id = $1))";

/// The libraries the user (`$1`) may link: public ones, their own, and those they were
/// invited to.
const LINKABLE: &str = "(l.visibility = 'public' OR l.owner_id = $1 OR EXISTS \
    (SELECT 1 FROM invites li WHERE li.library_id = l.id AND li.user_id = $1))";

const FROM_LIB: &str = "FROM libraries l JOIN users u ON u.id = l.owner_id";

const USER_COLS: &str = "id, name, plan, created_at";

fn user_of(row: &Row) -> User {
    User {
        id: row.i(0),
        name: row.t(1),
        plan: Plan::parse(&row.t(2)).unwrap_or(Plan::Free),
        created_at: row.i(3),
    }
}

fn library_of(row: &Row) -> LibraryInfo {
    LibraryInfo {
        id: row.i(0),
        key: LibraryKey {
            owner: row.t(1),
            slug: row.t(2),
        },
        title: row.t(3),
        description: row.t(4),
        category: row.t(5),
        visibility: Visibility::parse(&row.t(6)).unwrap_or(Visibility::Private),
        doc_count: row.i(7).max(0) as u64,
        stars: row.i(8).max(0) as u64,
        links: row.i(9).max(0) as u64,
        created_at: row.i(10),
        updated_at: row.i(11),
        content_seq: row.i(12),
    }
}

/// A library row followed by [`ENTRY_FLAGS`].
fn entry_of(row: &Row) -> CatalogEntry {
    let library = library_of(row);
    let is_owner = row.i(13) != 0;
    let invited = row.i(15) != 0;
    CatalogEntry {
        can_link: is_owner || invited || library.visibility == Visibility::Public,
        is_owner,
        is_linked: row.i(14) != 0,
        library,
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `%text%` for a case-insensitive `LIKE … ESCAPE '\'`.
fn like_pattern(text: &str) -> String {
    let mut p = String::from("%");
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

fn count(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

impl Db {
    /// Opens the store, creating its schema when missing (idempotent; on PostgreSQL safe when
    /// several processes start at once).
    pub fn open(spec: &DbSpec) -> Result<Db> {
        let backend = match spec {
            DbSpec::Sqlite(path) => Backend::Sqlite(sqlite::Pool::open(path)?),
            DbSpec::Postgres(url) => Backend::Postgres(postgres::Pool::open(url)?),
        };
        tracing::debug!(database = %spec.redacted(), "gateway database open");
        Ok(Db {
            inner: Arc::new(Inner {
                spec: spec.clone(),
                backend,
            }),
        })
    }

    /// Where it lives.
    pub fn spec(&self) -> &DbSpec {
        &self.inner.spec
    }

    /// Runs `f` in one transaction (a write one takes its locks up front on SQLite) and
    /// commits when it succeeds.
    ///
    /// On PostgreSQL a connection the server closed (a restart, a terminated backend) is
    /// dropped with every idle one, and `f` runs once more on a fresh connection when nothing
    /// of the first run can have been kept: it failed before its commit was sent, or it only
    /// read. A write whose commit was lost is not run again (it may have been applied).
    fn tx<T>(&self, write: bool, mut f: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        match &self.inner.backend {
            Backend::Sqlite(pool) if write => {
                let mut conn = pool.writer();
                let mut tx = Tx::Lite(sqlite::begin(&mut conn, true)?);
                let out = f(&mut tx)?;
                tx.commit()?;
                Ok(out)
            }
            Backend::Sqlite(pool) => {
                // Reads run beside each other and beside the writer (WAL).
                let mut conn = pool.reader()?;
                let out = (|| {
                    let mut tx = Tx::Lite(sqlite::begin(&mut conn, false)?);
                    let out = f(&mut tx)?;
                    tx.commit()?;
                    Ok(out)
                })();
                pool.give(conn);
                out
            }
            Backend::Postgres(pool) => {
                let mut fresh = false;
                loop {
                    let mut client = if fresh { pool.connect()? } else { pool.take()? };
                    let mut committing = false;
                    let out = (|| {
                        let mut tx = Tx::Pg(client.transaction().map_err(postgres::failed)?);
                        let out = f(&mut tx)?;
                        committing = true;
                        tx.commit()?;
                        Ok(out)
                    })();
                    let Err(e) = out else {
                        pool.give(client);
                        return out;
                    };
                    if !pool.lost(&mut client, &e) {
                        pool.give(client);
                        return Err(e);
                    }
                    pool.forget_idle();
                    if committing && write {
                        return Err(GatewayError::Database(format!(
                            "the connection to PostgreSQL was lost while committing: the change may or may not have been saved ({e})"
                        )));
                    }
                    if fresh {
                        let why = match &e {
                            GatewayError::Database(m) => m.clone(),
                            other => other.to_string(),
                        };
                        return Err(pool.unreachable(&why));
                    }
                    tracing::warn!(error = %e, "the connection to PostgreSQL was lost; running the transaction again on a new one");
                    fresh = true;
                }
            }
        }
    }

    // ----- users -----

    /// Adds a user; returns them and their token (shown once: only its SHA-256 is stored).
    /// `Invalid` for a bad name, `Conflict` when the name is taken.
    pub fn add_user(&self, name: &str, plan: Plan) -> Result<(User, String)> {
        if !valid_name(name) {
            return Err(GatewayError::invalid(format!(
                "invalid user name {name:?}: use 1-64 lowercase letters, digits, '-', '_' or '.', not starting with '-' or '.'"
            )));
        }
        let token = admin::new_token();
        let hash = admin::token_hash(&token);
        let user = self.tx(true, |tx| {
            if tx
                .one(
                    "SELECT id FROM users WHERE name = $1",
                    &[Val::T(name.into())],
                )?
                .is_some()
            {
                return Err(GatewayError::Conflict(format!(
                    "user {name:?} exists already"
                )));
            }
            let row = tx
                .one(
                    &format!(
                        "INSERT INTO users (name, plan, token_hash, created_at) \
                         VALUES ($1, $2, $3, $4) RETURNING {USER_COLS}"
                    ),
                    &[
                        Val::T(name.into()),
                        Val::T(plan.as_str().into()),
                        Val::T(hash.clone()),
                        Val::I(now_ms()),
                    ],
                )?
                .ok_or_else(|| GatewayError::Database("insert returned no row".into()))?;
            Ok(user_of(&row))
        })?;
        Ok((user, token))
    }

    /// Removes a user with their libraries (and those libraries' documents, links and
    /// invitations), their links and their invitations. False when there was no such user.
    pub fn remove_user(&self, name: &str) -> Result<bool> {
        self.tx(true, |tx| {
            let Some(row) = tx.one(
                "SELECT id FROM users WHERE name = $1",
                &[Val::T(name.into())],
            )?
            else {
                return Ok(false);
            };
            let id = Val::I(row.i(0));
            let owned = "(SELECT id FROM libraries WHERE owner_id = $1)";
            tx.exec(
                &format!(
                    "DELETE FROM staged_documents WHERE publish_id IN \
                     (SELECT id FROM publishes WHERE library_id IN {owned})"
                ),
                std::slice::from_ref(&id),
            )?;
            tx.exec(
                &format!("DELETE FROM publishes WHERE library_id IN {owned}"),
                std::slice::from_ref(&id),
            )?;
            tx.exec(
                &format!("DELETE FROM documents WHERE library_id IN {owned}"),
                std::slice::from_ref(&id),
            )?;
            tx.exec(
                &format!("DELETE FROM links WHERE user_id = $1 OR library_id IN {owned}"),
                std::slice::from_ref(&id),
            )?;
            tx.exec(
                &format!("DELETE FROM invites WHERE user_id = $1 OR library_id IN {owned}"),
                std::slice::from_ref(&id),
            )?;
            tx.exec(
                "DELETE FROM libraries WHERE owner_id = $1",
                std::slice::from_ref(&id),
            )?;
            tx.exec("DELETE FROM users WHERE id = $1", &[id])?;
            Ok(true)
        })
    }

    /// Changes a user's plan. False when there is no such user.
    pub fn set_plan(&self, name: &str, plan: Plan) -> Result<bool> {
        self.tx(true, |tx| {
            Ok(tx.exec(
                "UPDATE users SET plan = $1 WHERE name = $2",
                &[Val::T(plan.as_str().into()), Val::T(name.into())],
            )? > 0)
        })
    }

    /// Every user, by name.
    pub fn users(&self) -> Result<Vec<User>> {
        self.tx(false, |tx| {
            Ok(tx
                .query(&format!("SELECT {USER_COLS} FROM users ORDER BY name"), &[])?
                .iter()
                .map(user_of)
                .collect())
        })
    }

    /// A user by name.
    pub fn user(&self, name: &str) -> Result<Option<User>> {
        self.tx(false, |tx| {
            Ok(tx
                .one(
                    &format!("SELECT {USER_COLS} FROM users WHERE name = $1"),
                    &[Val::T(name.into())],
                )?
                .as_ref()
                .map(user_of))
        })
    }

    /// The user a token belongs to.
    pub fn user_by_token(&self, token: &str) -> Result<Option<User>> {
        let token = token.trim();
        if token.is_empty() {
            return Ok(None);
        }
        let hash = admin::token_hash(token);
        self.tx(false, |tx| {
            Ok(tx
                .one(
                    &format!("SELECT {USER_COLS} FROM users WHERE token_hash = $1"),
                    &[Val::T(hash.clone())],
                )?
                .as_ref()
                .map(user_of))
        })
    }

    // ----- libraries -----

    /// Creates or updates a library (see [`Db::put_library`]).
    pub fn upsert_library(
        &self,
        owner: &User,
        slug: &str,
        meta: &LibraryMeta,
    ) -> Result<LibraryInfo> {
        Ok(self.put_library(owner, slug, meta)?.0)
    }

    /// Creates or updates a library, saying whether it was created. A new one takes the
    /// meta's fields, with visibility `public`, category `other` and the slug as title when
    /// they are not given; an existing one takes the fields given (non-empty), and its
    /// `updated_at` moves when one of them changed.
    pub fn put_library(
        &self,
        owner: &User,
        slug: &str,
        meta: &LibraryMeta,
    ) -> Result<(LibraryInfo, bool)> {
        if !valid_name(slug) {
            return Err(GatewayError::invalid(format!(
                "invalid library slug {slug:?}: use 1-64 lowercase letters, digits, '-', '_' or '.', not starting with '-' or '.'"
            )));
        }
        let category = match meta.category.trim() {
            "" => None,
            c => Some(parse_category(c)?),
        };
        let title = meta.title.trim();
        let description = meta.description.trim();
        self.tx(true, |tx| {
            // Two processes creating the same library at once: the second one's insert finds
            // the first one's row (`ON CONFLICT DO NOTHING` waits for its transaction), and it
            // goes round again to update that row instead of failing.
            let (id, created) = loop {
                let existing = tx.one(
                    &format!(
                        "SELECT id, title, description, category, visibility FROM libraries \
                     WHERE owner_id = $1 AND slug = $2{}",
                        tx.for_update()
                    ),
                    &[Val::I(owner.id), Val::T(slug.into())],
                )?;
                let now = now_ms();
                break match existing {
                    Some(row) => {
                        let id = row.i(0);
                        let new_title = if title.is_empty() {
                            row.t(1)
                        } else {
                            title.into()
                        };
                        let new_description = if description.is_empty() {
                            row.t(2)
                        } else {
                            description.into()
                        };
                        let new_category = category.map(str::to_string).unwrap_or_else(|| row.t(3));
                        let new_visibility = meta
                            .visibility
                            .map(|v| v.as_str().to_string())
                            .unwrap_or_else(|| row.t(4));
                        let changed = (new_title.as_str(), new_description.as_str())
                            != (row.t(1).as_str(), row.t(2).as_str())
                            || new_category != row.t(3)
                            || new_visibility != row.t(4);
                        if changed {
                            tx.exec(
                                "UPDATE libraries SET title = $1, description = $2, category = $3, \
                             visibility = $4, updated_at = $5 WHERE id = $6",
                                &[
                                    Val::T(new_title),
                                    Val::T(new_description),
                                    Val::T(new_category),
                                    Val::T(new_visibility),
                                    Val::I(now),
                                    Val::I(id),
                                ],
                            )?;
                        }
                        (id, false)
                    }
                    None => {
                        let row = tx.one(
                            "INSERT INTO libraries (owner_id, slug, title, description, category, \
                             visibility, created_at, updated_at) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
                             ON CONFLICT (owner_id, slug) DO NOTHING RETURNING id",
                            &[
                                Val::I(owner.id),
                                Val::T(slug.into()),
                                Val::T(if title.is_empty() { slug } else { title }.into()),
                                Val::T(description.into()),
                                Val::T(category.unwrap_or("other").into()),
                                Val::T(
                                    meta.visibility
                                        .unwrap_or(Visibility::Public)
                                        .as_str()
                                        .into(),
                                ),
                                Val::I(now),
                            ],
                        )?;
                        match row {
                            Some(row) => (row.i(0), true),
                            // Another process created it meanwhile: update that one.
                            None => continue,
                        }
                    }
                };
            };
            let info = library_by_id(tx, id)?
                .ok_or_else(|| GatewayError::Database("library vanished".into()))?;
            Ok((info, created))
        })
    }

    /// Deletes a library of this owner with its documents, links and invitations. False when
    /// there was none.
    pub fn delete_library(&self, owner: &User, slug: &str) -> Result<bool> {
        self.tx(true, |tx| {
            let Some(row) = tx.one(
                "SELECT id FROM libraries WHERE owner_id = $1 AND slug = $2",
                &[Val::I(owner.id), Val::T(slug.into())],
            )?
            else {
                return Ok(false);
            };
            let id = [Val::I(row.i(0))];
            tx.exec(
                "DELETE FROM staged_documents WHERE publish_id IN \
                 (SELECT id FROM publishes WHERE library_id = $1)",
                &id,
            )?;
            tx.exec("DELETE FROM publishes WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM documents WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM links WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM invites WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM libraries WHERE id = $1", &id)?;
            Ok(true)
        })
    }

    /// A library by address, whoever may see it.
    pub fn library(&self, key: &LibraryKey) -> Result<Option<LibraryInfo>> {
        self.tx(false, |tx| {
            Ok(tx
                .one(
                    &format!("SELECT {LIB_COLS} {FROM_LIB} WHERE u.name = $1 AND l.slug = $2"),
                    &[Val::T(key.owner.clone()), Val::T(key.slug.clone())],
                )?
                .as_ref()
                .map(library_of))
        })
    }

    /// A library by the database's number, whoever may see it.
    pub fn library_by_id(&self, id: i64) -> Result<Option<LibraryInfo>> {
        self.tx(false, |tx| library_by_id(tx, id))
    }

    /// How many libraries the catalogue holds (every visibility).
    pub fn library_count(&self) -> Result<u64> {
        self.tx(false, |tx| {
            Ok(tx
                .one("SELECT COUNT(*) FROM libraries", &[])?
                .map_or(0, |r| r.i(0).max(0) as u64))
        })
    }

    /// A library as the viewer sees it; `None` when it does not exist or is private and the
    /// viewer is neither its owner nor invited.
    pub fn visible_library(&self, viewer: &User, key: &LibraryKey) -> Result<Option<CatalogEntry>> {
        self.tx(false, |tx| visible_entry(tx, viewer, key))
    }

    /// A page of the catalogue as the viewer sees it: public and showcase libraries, plus
    /// private ones the viewer owns or was invited to; filtered by `query` (a case-insensitive
    /// substring of title, description or owner name), exact `category` and exact `owner`;
    /// newest update first, then by address.
    pub fn search_libraries(&self, viewer: &User, q: &CatalogQuery) -> Result<CatalogPage> {
        let mut params = vec![Val::I(viewer.id)];
        let mut filter = String::from(VISIBLE);
        if let Some(text) = q.query.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            params.push(Val::T(like_pattern(text)));
            let n = params.len();
            // SQLite's LIKE ignores ASCII case by itself and its lower() folds ASCII only, so
            // lower() would change nothing there but the cost (half of a search's time at
            // 10,000 libraries); PostgreSQL's LIKE needs it (and folds all of Unicode).
            let fold = |col: &str| match &self.inner.backend {
                Backend::Sqlite(_) => col.to_string(),
                Backend::Postgres(_) => format!("lower({col})"),
            };
            filter.push_str(&format!(
                " AND ({} LIKE ${n} ESCAPE '\\' \
                 OR {} LIKE ${n} ESCAPE '\\' \
                 OR {} LIKE ${n} ESCAPE '\\')",
                fold("l.title"),
                fold("l.description"),
                fold("u.name")
            ));
        }
        if let Some(category) = q.category.as_deref().filter(|c| !c.is_empty()) {
            params.push(Val::T(category.to_string()));
            filter.push_str(&format!(" AND l.category = ${}", params.len()));
        }
        if let Some(owner) = q.owner.as_deref().filter(|o| !o.is_empty()) {
            params.push(Val::T(owner.to_string()));
            filter.push_str(&format!(" AND u.name = ${}", params.len()));
        }
        let limit = i64::from(q.limit.clamp(1, 50));
        let offset = i64::try_from(q.offset).unwrap_or(i64::MAX);
        self.tx(false, |tx| {
            let total = tx
                .one(
                    &format!("SELECT COUNT(*) {FROM_LIB} WHERE {filter}"),
                    &params,
                )?
                .map_or(0, |r| r.i(0).max(0) as u64);
            let mut page_params = params.clone();
            page_params.push(Val::I(limit));
            page_params.push(Val::I(offset));
            let n = page_params.len();
            let entries = tx
                .query(
                    &format!(
                        "SELECT {LIB_COLS}, {ENTRY_FLAGS} {FROM_LIB} WHERE {filter} \
                         ORDER BY l.updated_at DESC, u.name, l.slug LIMIT ${} OFFSET ${n}",
                        n - 1
                    ),
                    &page_params,
                )?
                .iter()
                .map(entry_of)
                .collect();
            Ok(CatalogPage { entries, total })
        })
    }

    /// Invites a user to a library (they may then see and link it). `NotFound` for an unknown
    /// library or user; inviting twice is no change.
    pub fn invite(&self, key: &LibraryKey, user: &str) -> Result<()> {
        self.tx(true, |tx| {
            let library = tx
                .one(
                    &format!("SELECT l.id {FROM_LIB} WHERE u.name = $1 AND l.slug = $2"),
                    &[Val::T(key.owner.clone()), Val::T(key.slug.clone())],
                )?
                .ok_or_else(|| GatewayError::not_found(format!("no library {key}")))?;
            let invitee = tx
                .one(
                    "SELECT id FROM users WHERE name = $1",
                    &[Val::T(user.into())],
                )?
                .ok_or_else(|| GatewayError::not_found(format!("no user {user:?}")))?;
            tx.exec(
                "INSERT INTO invites (library_id, user_id, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT DO NOTHING",
                &[Val::I(library.i(0)), Val::I(invitee.i(0)), Val::I(now_ms())],
            )?;
            Ok(())
        })
    }

    /// Withdraws an invitation: the user may no longer see a showcase or private library, and
    /// loses their link to it (a public library stays linked). False when there was no such
    /// invitation.
    pub fn uninvite(&self, key: &LibraryKey, user: &str) -> Result<bool> {
        self.tx(true, |tx| {
            let library = tx
                .one(
                    &format!(
                        "SELECT l.id, l.visibility, l.owner_id {FROM_LIB} WHERE u.name = $1 AND l.slug = $2"
                    ),
                    &[Val::T(key.owner.clone()), Val::T(key.slug.clone())],
                )?
                .ok_or_else(|| GatewayError::not_found(format!("no library {key}")))?;
            let invitee = tx
                .one(
                    "SELECT id FROM users WHERE name = $1",
                    &[Val::T(user.into())],
                )?
                .ok_or_else(|| GatewayError::not_found(format!("no user {user:?}")))?;
            let (library_id, user_id) = (library.i(0), invitee.i(0));
            let removed = tx.exec(
                "DELETE FROM invites WHERE library_id = $1 AND user_id = $2",
                &[Val::I(library_id), Val::I(user_id)],
            )? > 0;
            if library.t(1) != Visibility::Public.as_str() && library.i(2) != user_id {
                tx.exec(
                    "DELETE FROM links WHERE library_id = $1 AND user_id = $2",
                    &[Val::I(library_id), Val::I(user_id)],
                )?;
            }
            Ok(removed)
        })
    }

    /// Every library of the gateway, whatever its visibility (for an administrator), by owner
    /// and slug.
    pub fn all_libraries(&self) -> Result<Vec<LibraryInfo>> {
        self.tx(false, |tx| {
            Ok(tx
                .query(
                    &format!("SELECT {LIB_COLS} {FROM_LIB} ORDER BY u.name, l.slug"),
                    &[],
                )?
                .iter()
                .map(library_of)
                .collect())
        })
    }

    /// Removes a library by address (for an administrator), with its documents, links and
    /// invitations. False when there was none.
    pub fn remove_library(&self, key: &LibraryKey) -> Result<bool> {
        let Some(owner) = self.user(&key.owner)? else {
            return Ok(false);
        };
        self.delete_library(&owner, &key.slug)
    }

    /// Gives a user a new token; the old one stops working at once (every gateway process
    /// reads the token's hash from the database on each request). The new token is shown once;
    /// `None` when there is no such user.
    pub fn rotate_token(&self, name: &str) -> Result<Option<String>> {
        let token = admin::new_token();
        let hash = admin::token_hash(&token);
        let changed = self.tx(true, |tx| {
            tx.exec(
                "UPDATE users SET token_hash = $1 WHERE name = $2",
                &[Val::T(hash.clone()), Val::T(name.into())],
            )
        })?;
        Ok((changed > 0).then_some(token))
    }

    /// Links a library to the user's account, in one transaction whose slot check no other
    /// process can interleave: not visible → `NotFound`; already linked → `AlreadyLinked` (no
    /// slot used); showcase or private and neither owner nor invited → `InviteRequired`;
    /// every slot used → `SlotExhausted`; else `Linked`. The plan is read from the database.
    pub fn link(&self, user: &User, key: &LibraryKey, limits: &Limits) -> Result<LinkOutcome> {
        self.tx(true, |tx| {
            let plan = lock_user(tx, user)?;
            let limit = limits.slots(plan);
            let Some(entry) = visible_entry(tx, user, key)? else {
                return Ok(LinkOutcome::NotFound);
            };
            let used = slots_used(tx, user)?;
            if entry.is_linked {
                return Ok(LinkOutcome::AlreadyLinked { used, limit });
            }
            if !entry.can_link {
                return Ok(LinkOutcome::InviteRequired);
            }
            if used >= limit {
                return Ok(LinkOutcome::SlotExhausted { used, limit });
            }
            tx.exec(
                "INSERT INTO links (user_id, library_id, created_at) VALUES ($1, $2, $3)",
                &[Val::I(user.id), Val::I(entry.library.id), Val::I(now_ms())],
            )?;
            Ok(LinkOutcome::Linked {
                used: used + 1,
                limit,
            })
        })
    }

    /// Unlinks a library from the user's account (only that one; the invitation stays).
    /// `NotFound` when no library of that address exists, or it is neither visible to the
    /// user nor linked by them; `AlreadyUnlinked` when it was not linked.
    pub fn unlink(&self, user: &User, key: &LibraryKey, limits: &Limits) -> Result<UnlinkOutcome> {
        self.tx(true, |tx| {
            let plan = lock_user(tx, user)?;
            let limit = limits.slots(plan);
            let Some(row) = tx.one(
                &format!(
                    "SELECT l.id, {VISIBLE_COL}, CASE WHEN EXISTS (SELECT 1 FROM links ul \
                     WHERE ul.library_id = l.id AND ul.user_id = $1) THEN 1 ELSE 0 END \
                     {FROM_LIB} WHERE u.name = $2 AND l.slug = $3",
                    VISIBLE_COL = format_args!("CASE WHEN {VISIBLE} THEN 1 ELSE 0 END"),
                ),
                &[
                    Val::I(user.id),
                    Val::T(key.owner.clone()),
                    Val::T(key.slug.clone()),
                ],
            )?
            else {
                return Ok(UnlinkOutcome::NotFound);
            };
            let (visible, linked) = (row.i(1) != 0, row.i(2) != 0);
            if !linked {
                if !visible {
                    return Ok(UnlinkOutcome::NotFound);
                }
                let used = slots_used(tx, user)?;
                return Ok(UnlinkOutcome::AlreadyUnlinked { used, limit });
            }
            tx.exec(
                "DELETE FROM links WHERE user_id = $1 AND library_id = $2",
                &[Val::I(user.id), Val::I(row.i(0))],
            )?;
            let used = slots_used(tx, user)?;
            Ok(UnlinkOutcome::Unlinked { used, limit })
        })
    }

    /// The slots the user uses now: every library they have linked.
    pub fn slots_used(&self, user: &User) -> Result<u32> {
        self.tx(false, |tx| slots_used(tx, user))
    }

    /// The libraries the user has linked and may still link (public, their own, or invited),
    /// by address.
    pub fn linked(&self, user: &User) -> Result<Vec<LibraryInfo>> {
        self.tx(false, |tx| {
            Ok(tx
                .query(
                    &format!(
                        "SELECT {LIB_COLS} {FROM_LIB} JOIN links k ON k.library_id = l.id \
                         WHERE k.user_id = $1 AND {LINKABLE} ORDER BY u.name, l.slug"
                    ),
                    &[Val::I(user.id)],
                )?
                .iter()
                .map(library_of)
                .collect())
        })
    }

    /// Whether the user has linked this library (and may still link it, as in [`Db::linked`]).
    pub fn is_linked(&self, user: &User, key: &LibraryKey) -> Result<bool> {
        self.tx(false, |tx| {
            Ok(tx
                .one(
                    &format!(
                        "SELECT l.id {FROM_LIB} JOIN links k ON k.library_id = l.id \
                         WHERE k.user_id = $1 AND u.name = $2 AND l.slug = $3 AND {LINKABLE}"
                    ),
                    &[
                        Val::I(user.id),
                        Val::T(key.owner.clone()),
                        Val::T(key.slug.clone()),
                    ],
                )?
                .is_some())
        })
    }

    // ----- documents -----

    /// The library's documents by path and hash, in path order.
    pub fn manifest(&self, library_id: i64) -> Result<Vec<ManifestEntry>> {
        self.tx(false, |tx| {
            Ok(tx
                .query(
                    "SELECT path, hash, vector_model FROM documents WHERE library_id = $1 \
                     AND deleted = 0 ORDER BY path",
                    &[Val::I(library_id)],
                )?
                .iter()
                .map(|r| ManifestEntry {
                    path: r.t(0),
                    hash: r.t(1),
                    vector_model: r.ot(2),
                })
                .collect())
        })
    }

    /// Stores documents in one transaction, replacing those at the same paths (a document
    /// keeps its id while it stays at its path); each gets a new sequence number, and the
    /// library's `content_seq`, document count and `updated_at` move. `NotFound` for an
    /// unknown library.
    pub fn put_documents(&self, library_id: i64, docs: &[PublishedDoc]) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        check_paths(docs)?;
        let n = docs.len() as i64;
        self.tx(true, |tx| {
            // The UPDATE locks the library's row: concurrent publishers number in turn.
            let last = tx
                .one(
                    "UPDATE libraries SET content_seq = content_seq + $2, updated_at = $3 \
                     WHERE id = $1 RETURNING content_seq",
                    &[Val::I(library_id), Val::I(n), Val::I(now_ms())],
                )?
                .ok_or_else(|| GatewayError::not_found(format!("no library #{library_id}")))?
                .i(0);
            let first = last - n + 1;
            for (i, doc) in docs.iter().enumerate() {
                let mut params = vec![Val::I(library_id)];
                params.extend(doc_values(doc)?);
                params.push(Val::I(first + i as i64));
                tx.exec(
                    &format!(
                        "INSERT INTO documents (library_id, path, doc_type, hash, size, \
                         modified_at, title, body, outline, vector_model, vectors, seq, deleted) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0) {UPSERT}"
                    ),
                    &params,
                )?;
            }
            recount(tx, library_id)
        })
    }

    /// Removes documents by path, leaving a tombstone with a new sequence number for each
    /// (so other processes' indexes drop them too); the count of documents removed. The
    /// library's `content_seq`, count and `updated_at` move when one was.
    pub fn remove_documents(&self, library_id: i64, paths: &[String]) -> Result<u64> {
        if paths.is_empty() {
            return Ok(0);
        }
        self.tx(true, |tx| {
            let seq = lock_library(tx, library_id)?;
            let (seq, removed) = tombstone(tx, library_id, seq, paths)?;
            if removed > 0 {
                moved(tx, library_id, seq)?;
            }
            Ok(removed)
        })
    }

    // ----- staged publishes -----

    /// Opens a staged publish of a library and returns its number: the documents it is given
    /// ([`Db::stage_documents`]) stay out of sight until [`Db::commit_publish`] applies them
    /// and removes `gone` in one transaction. Any other open publish of the library is
    /// discarded with its staged documents (a publish cut off, or one a newer one overtakes),
    /// and so is every publish left open longer than [`PUBLISH_TTL_MS`]. `NotFound` for an
    /// unknown library.
    pub fn begin_publish(&self, library_id: i64, gone: &[String]) -> Result<i64> {
        let gone =
            serde_json::to_string(gone).map_err(|e| GatewayError::Database(e.to_string()))?;
        self.tx(true, |tx| {
            // Locks the library's row: two publishes starting at once open in turn.
            lock_library(tx, library_id)?;
            let now = now_ms();
            let stale = "(SELECT id FROM publishes WHERE library_id = $1 OR created_at < $2)";
            let params = [Val::I(library_id), Val::I(now - PUBLISH_TTL_MS)];
            tx.exec(
                &format!("DELETE FROM staged_documents WHERE publish_id IN {stale}"),
                &params,
            )?;
            tx.exec(
                "DELETE FROM publishes WHERE library_id = $1 OR created_at < $2",
                &params,
            )?;
            let row = tx
                .one(
                    "INSERT INTO publishes (library_id, created_at, gone) VALUES ($1, $2, $3) \
                     RETURNING id",
                    &[Val::I(library_id), Val::I(now), Val::T(gone.clone())],
                )?
                .ok_or_else(|| GatewayError::Database("insert returned no row".into()))?;
            Ok(row.i(0))
        })
    }

    /// Stages documents for an open publish (a document sent twice keeps its last version);
    /// nothing of them is visible before [`Db::commit_publish`]. `Conflict` when the publish
    /// is no longer open (committed, or discarded by a newer publish of the library).
    pub fn stage_documents(
        &self,
        library_id: i64,
        publish_id: i64,
        docs: &[PublishedDoc],
    ) -> Result<()> {
        check_paths(docs)?;
        self.tx(true, |tx| {
            // Locks the publish's row: a newer publish cannot discard it halfway through.
            lock_publish(tx, library_id, publish_id)?;
            for doc in docs {
                let mut params = vec![Val::I(publish_id)];
                params.extend(doc_values(doc)?);
                tx.exec(
                    "INSERT INTO staged_documents (publish_id, path, doc_type, hash, size, \
                     modified_at, title, body, outline, vector_model, vectors) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                     ON CONFLICT (publish_id, path) DO UPDATE SET doc_type = excluded.doc_type, \
                     hash = excluded.hash, size = excluded.size, \
                     modified_at = excluded.modified_at, title = excluded.title, \
                     body = excluded.body, outline = excluded.outline, \
                     vector_model = excluded.vector_model, vectors = excluded.vectors",
                    &params,
                )?;
            }
            Ok(())
        })
    }

    /// Applies an open publish in one transaction: removes the documents its manifest no
    /// longer listed and stores its staged documents, each with a new sequence number as
    /// [`Db::remove_documents`] and [`Db::put_documents`] do; then forgets the publish.
    /// `Conflict` when it is no longer open, `NotFound` for an unknown library.
    pub fn commit_publish(&self, library_id: i64, publish_id: i64) -> Result<PublishCommit> {
        self.tx(true, |tx| {
            let seq = lock_library(tx, library_id)?;
            let gone = lock_publish(tx, library_id, publish_id)?;
            let gone: Vec<String> =
                serde_json::from_str(&gone).map_err(|e| GatewayError::Database(e.to_string()))?;
            let (seq, removed) = tombstone(tx, library_id, seq, &gone)?;
            let staged = tx
                .one(
                    "SELECT COUNT(*) FROM staged_documents WHERE publish_id = $1",
                    &[Val::I(publish_id)],
                )?
                .map_or(0, |r| r.i(0).max(0));
            if staged > 0 {
                tx.exec(
                    &format!(
                        "INSERT INTO documents (library_id, path, doc_type, hash, size, \
                         modified_at, title, body, outline, vector_model, vectors, seq, deleted) \
                         SELECT CAST($1 AS BIGINT), path, doc_type, hash, size, modified_at, \
                         title, body, outline, vector_model, vectors, \
                         CAST($3 AS BIGINT) + ROW_NUMBER() OVER (ORDER BY path), 0 \
                         FROM staged_documents WHERE publish_id = $2 {UPSERT}"
                    ),
                    &[Val::I(library_id), Val::I(publish_id), Val::I(seq)],
                )?;
            }
            if removed > 0 || staged > 0 {
                moved(tx, library_id, seq + staged)?;
            }
            tx.exec(
                "DELETE FROM staged_documents WHERE publish_id = $1",
                &[Val::I(publish_id)],
            )?;
            tx.exec("DELETE FROM publishes WHERE id = $1", &[Val::I(publish_id)])?;
            Ok(PublishCommit {
                stored: staged as u64,
                removed,
            })
        })
    }

    /// The changes after `seq`, at most `limit` (at least 1) of them, in sequence order.
    pub fn changes_since(&self, library_id: i64, seq: i64, limit: usize) -> Result<DocChanges> {
        let limit = limit.clamp(1, 1_000_000);
        self.tx(false, |tx| {
            let rows = tx.query(
                "SELECT id, path, doc_type, hash, size, modified_at, title, body, outline, seq, \
                 deleted, vectors FROM documents WHERE library_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[Val::I(library_id), Val::I(seq), Val::I(limit as i64 + 1)],
            )?;
            let mut changes = DocChanges {
                last_seq: seq,
                has_more: rows.len() > limit,
                ..DocChanges::default()
            };
            for row in rows.iter().take(limit) {
                changes.last_seq = row.i(9);
                if row.i(10) != 0 {
                    changes.removed.push(row.t(1));
                    continue;
                }
                let outline = serde_json::from_str(&row.t(8))
                    .unwrap_or_else(|_| serde_json::Value::Array(Vec::new()));
                changes.upserted.push((
                    row.i(0),
                    PublishedDoc {
                        path: row.t(1),
                        doc_type: row.t(2),
                        hash: row.t(3),
                        size: row.i(4).max(0) as u64,
                        modified_at: row.i(5),
                        title: row.ot(6),
                        text: row.t(7),
                        outline,
                        // Written by `put_documents` or a publish's commit from checked vectors; unreadable ones
                        // (never expected) leave the document keyword-only.
                        vectors: row
                            .ot(11)
                            .and_then(|v| serde_json::from_str(&v).ok()),
                    },
                ));
            }
            Ok(changes)
        })
    }
}

fn library_by_id(tx: &mut Tx<'_>, id: i64) -> Result<Option<LibraryInfo>> {
    Ok(tx
        .one(
            &format!("SELECT {LIB_COLS} {FROM_LIB} WHERE l.id = $1"),
            &[Val::I(id)],
        )?
        .as_ref()
        .map(library_of))
}

fn visible_entry(tx: &mut Tx<'_>, viewer: &User, key: &LibraryKey) -> Result<Option<CatalogEntry>> {
    Ok(tx
        .one(
            &format!(
                "SELECT {LIB_COLS}, {ENTRY_FLAGS} {FROM_LIB} \
                 WHERE u.name = $2 AND l.slug = $3 AND {VISIBLE}"
            ),
            &[
                Val::I(viewer.id),
                Val::T(key.owner.clone()),
                Val::T(key.slug.clone()),
            ],
        )?
        .as_ref()
        .map(entry_of))
}

/// Locks the user's row until commit (PostgreSQL; SQLite holds the write lock already) and
/// reads their current plan. `Unauthorized` when the user was removed.
fn lock_user(tx: &mut Tx<'_>, user: &User) -> Result<Plan> {
    let sql = format!("SELECT plan FROM users WHERE id = $1{}", tx.for_update());
    let row = tx.one(&sql, &[Val::I(user.id)])?.ok_or_else(|| {
        GatewayError::Unauthorized(format!("user {} no longer exists", user.name))
    })?;
    Ok(Plan::parse(&row.t(0)).unwrap_or(user.plan))
}

/// The user's links (every row counts, as the slots used).
fn slots_used(tx: &mut Tx<'_>, user: &User) -> Result<u32> {
    Ok(count(
        tx.one(
            "SELECT COUNT(*) FROM links WHERE user_id = $1",
            &[Val::I(user.id)],
        )?
        .map_or(0, |r| r.i(0)),
    ))
}

/// Sets the library's document count from its live documents.
fn recount(tx: &mut Tx<'_>, library_id: i64) -> Result<()> {
    tx.exec(
        "UPDATE libraries SET doc_count = (SELECT COUNT(*) FROM documents d \
         WHERE d.library_id = $1 AND d.deleted = 0) WHERE id = $1",
        &[Val::I(library_id)],
    )?;
    Ok(())
}

/// How long a publish may stay open: one older is discarded when any publish starts.
pub const PUBLISH_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// What [`Db::commit_publish`] applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishCommit {
    /// Documents stored (new or changed).
    pub stored: u64,
    /// Documents removed (no longer in the manifest).
    pub removed: u64,
}

/// The end of an insert into `documents` whose row may exist already: it replaces that row's
/// content (the document keeps its id) and brings it back when it was a tombstone.
const UPSERT: &str = "ON CONFLICT (library_id, path) DO UPDATE SET doc_type = excluded.doc_type, \
     hash = excluded.hash, size = excluded.size, modified_at = excluded.modified_at, \
     title = excluded.title, body = excluded.body, outline = excluded.outline, \
     seq = excluded.seq, deleted = 0, vector_model = excluded.vector_model, \
     vectors = excluded.vectors";

/// `Invalid` when a document has an empty path.
fn check_paths(docs: &[PublishedDoc]) -> Result<()> {
    match docs.iter().find(|d| d.path.trim().is_empty()) {
        Some(bad) => Err(GatewayError::invalid(format!(
            "a document has an empty path (hash {:?})",
            bad.hash
        ))),
        None => Ok(()),
    }
}

/// A document's columns as stored: path, doc_type, hash, size, modified_at, title, body,
/// outline, vector_model, vectors.
fn doc_values(doc: &PublishedDoc) -> Result<[Val; 10]> {
    let vectors = match &doc.vectors {
        Some(v) => {
            Val::T(serde_json::to_string(v).map_err(|e| GatewayError::Database(e.to_string()))?)
        }
        None => Val::N,
    };
    Ok([
        Val::T(doc.path.clone()),
        Val::T(doc.doc_type.clone()),
        Val::T(doc.hash.clone()),
        Val::I(i64::try_from(doc.size).unwrap_or(i64::MAX)),
        Val::I(doc.modified_at),
        doc.title.clone().map_or(Val::N, Val::T),
        Val::T(doc.text.clone()),
        Val::T(doc.outline.to_string()),
        doc.vectors
            .as_ref()
            .map_or(Val::N, |v| Val::T(v.model.clone())),
        vectors,
    ])
}

/// Locks the library's row until commit (PostgreSQL; SQLite holds the write lock already) and
/// reads its `content_seq`. `NotFound` for an unknown library.
fn lock_library(tx: &mut Tx<'_>, library_id: i64) -> Result<i64> {
    let sql = format!(
        "SELECT content_seq FROM libraries WHERE id = $1{}",
        tx.for_update()
    );
    Ok(tx
        .one(&sql, &[Val::I(library_id)])?
        .ok_or_else(|| GatewayError::not_found(format!("no library #{library_id}")))?
        .i(0))
}

/// Locks an open publish's row until commit and reads its `gone` list (JSON). `Conflict` when
/// the library has no such open publish.
fn lock_publish(tx: &mut Tx<'_>, library_id: i64, publish_id: i64) -> Result<String> {
    let sql = format!(
        "SELECT gone FROM publishes WHERE id = $1 AND library_id = $2{}",
        tx.for_update()
    );
    Ok(tx
        .one(&sql, &[Val::I(publish_id), Val::I(library_id)])?
        .ok_or_else(|| {
            GatewayError::Conflict(format!(
                "publish #{publish_id} is no longer open: a newer publish of this library started, or it was committed or left open for a day; publish again"
            ))
        })?
        .t(0))
}

/// Tombstones the live documents at these paths, numbering them on from `seq`: the last
/// number used and how many were removed.
fn tombstone(
    tx: &mut Tx<'_>,
    library_id: i64,
    mut seq: i64,
    paths: &[String],
) -> Result<(i64, u64)> {
    let mut removed = 0;
    for path in paths {
        let changed = tx.exec(
            "UPDATE documents SET deleted = 1, seq = $3, body = '', outline = '[]', \
             title = NULL, vector_model = NULL, vectors = NULL \
             WHERE library_id = $1 AND path = $2 AND deleted = 0",
            &[Val::I(library_id), Val::T(path.clone()), Val::I(seq + 1)],
        )?;
        if changed > 0 {
            seq += 1;
            removed += changed;
        }
    }
    Ok((seq, removed))
}

/// Records that the library's documents changed up to `seq`: its `content_seq` (which every
/// process's index catches up to), `updated_at` and document count.
fn moved(tx: &mut Tx<'_>, library_id: i64, seq: i64) -> Result<()> {
    tx.exec(
        "UPDATE libraries SET content_seq = $2, updated_at = $3 WHERE id = $1",
        &[Val::I(library_id), Val::I(seq), Val::I(now_ms())],
    )?;
    recount(tx, library_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parses_paths_and_urls() {
        let dir = Path::new("/data");
        assert_eq!(
            DbSpec::parse(None, dir).unwrap(),
            DbSpec::Sqlite(PathBuf::from("/data/gateway.sqlite"))
        );
        assert_eq!(
            DbSpec::parse(Some("postgresql://u:p@h/db"), dir).unwrap(),
            DbSpec::Postgres("postgresql://u:p@h/db".into())
        );
        assert_eq!(
            DbSpec::parse(Some("sqlite:///tmp/g.db"), dir).unwrap(),
            DbSpec::Sqlite(PathBuf::from("/tmp/g.db"))
        );
        assert!(DbSpec::parse(Some(" "), dir).is_err());
        assert_eq!(
            DbSpec::Postgres("postgres://u:secret@h:5432/db".into()).redacted(),
            "postgres://u:***@h:5432/db"
        );
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_pattern("Rust_50%"), "%rust\\_50\\%%");
    }
}
