//! What queries bind and read: values ([`Val`]), rows read by column name ([`Row`]) and one
//! row type per query ([`FromRow`]). A column that is missing, NULL where a value is due, of
//! another type, or holding a value its type refuses (an unknown plan or visibility) is an
//! error naming the column, never a default.

use std::sync::Arc;

use crate::model::{CatalogEntry, LibraryInfo, LibraryKey, ManifestEntry, Plan, User, Visibility};
use crate::{GatewayError, Result};

/// One value bound to or read from a query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    /// An integer (booleans are 0/1).
    I(i64),
    /// Text.
    T(String),
    /// NULL.
    N,
    /// A floating-point number (read only: distances).
    F(f64),
    /// Bytes (`BYTEA`, `BLOB`).
    B(Vec<u8>),
    /// An embedding: pgvector's `vector` on PostgreSQL, little-endian `f32`s in a `BLOB` on
    /// SQLite (bound only).
    V(Vec<f32>),
    /// A list of texts, bound as `text[]` on PostgreSQL and as a JSON array on SQLite (for
    /// [`super::Tx::in_list`]).
    Texts(Vec<String>),
    /// A list of integers, as [`Val::Texts`].
    Ints(Vec<i64>),
}

/// One row read: its values under the names of the query's columns (`SELECT … AS name`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    names: Arc<[String]>,
    vals: Vec<Val>,
}

impl Row {
    /// A row of a query whose columns are `names`.
    pub(super) fn new(names: Arc<[String]>, vals: Vec<Val>) -> Row {
        Row { names, vals }
    }

    /// The value of the column `name`, as `T`.
    pub(crate) fn get<T: Column>(&self, name: &str) -> Result<T> {
        let Some(k) = self.names.iter().position(|n| n == name) else {
            return Err(GatewayError::Database(format!(
                "the query has no column {name:?} (it has {})",
                self.names.join(", ")
            )));
        };
        let val = &self.vals[k];
        T::of(val).ok_or_else(|| {
            GatewayError::Database(format!(
                "column {name:?} holds {}, not {}",
                describe(val),
                T::KIND
            ))
        })
    }

    /// The value of the column `name` parsed by `parse` (a plan, a visibility), its error
    /// naming the column.
    fn parsed<T>(&self, name: &str, parse: impl FnOnce(&str) -> Result<T>) -> Result<T> {
        let text: String = self.get(name)?;
        parse(&text).map_err(|e| GatewayError::Database(format!("column {name:?}: {e}")))
    }
}

fn describe(v: &Val) -> String {
    match v {
        Val::I(i) => format!("the integer {i}"),
        Val::T(t) => format!("the text {t:?}"),
        Val::N => "NULL".to_string(),
        Val::F(f) => format!("the number {f}"),
        Val::B(b) => format!("{} bytes", b.len()),
        Val::V(v) => format!("a vector of {} values", v.len()),
        Val::Texts(t) => format!("a list of {} texts", t.len()),
        Val::Ints(i) => format!("a list of {} integers", i.len()),
    }
}

/// A type a column is read as.
pub(crate) trait Column: Sized {
    /// What the column should hold, for errors.
    const KIND: &'static str;
    /// The value, when `v` is one.
    fn of(v: &Val) -> Option<Self>;
}

impl Column for i64 {
    const KIND: &'static str = "an integer";
    fn of(v: &Val) -> Option<i64> {
        match v {
            Val::I(i) => Some(*i),
            _ => None,
        }
    }
}

impl Column for u64 {
    const KIND: &'static str = "a count (an integer ≥ 0)";
    fn of(v: &Val) -> Option<u64> {
        i64::of(v).and_then(|i| u64::try_from(i).ok())
    }
}

impl Column for bool {
    const KIND: &'static str = "a flag (0 or 1)";
    fn of(v: &Val) -> Option<bool> {
        match v {
            Val::I(0) => Some(false),
            Val::I(1) => Some(true),
            _ => None,
        }
    }
}

impl Column for String {
    const KIND: &'static str = "text";
    fn of(v: &Val) -> Option<String> {
        match v {
            Val::T(t) => Some(t.clone()),
            _ => None,
        }
    }
}

impl Column for f64 {
    const KIND: &'static str = "a number";
    fn of(v: &Val) -> Option<f64> {
        match v {
            Val::F(f) => Some(*f),
            Val::I(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl Column for Vec<u8> {
    const KIND: &'static str = "bytes";
    fn of(v: &Val) -> Option<Vec<u8>> {
        match v {
            Val::B(b) => Some(b.clone()),
            _ => None,
        }
    }
}

impl<T: Column> Column for Option<T> {
    const KIND: &'static str = T::KIND;
    fn of(v: &Val) -> Option<Option<T>> {
        match v {
            Val::N => Some(None),
            v => T::of(v).map(Some),
        }
    }
}

/// The row type of a query: built from a row by column name.
pub(crate) trait FromRow: Sized {
    /// The value of one row.
    fn from_row(row: &Row) -> Result<Self>;
}

/// The columns of a [`User`]: `SELECT {USER_COLS} FROM users`.
pub(crate) const USER_COLS: &str = "id, name, plan, created_at";

impl FromRow for User {
    fn from_row(row: &Row) -> Result<User> {
        Ok(User {
            id: row.get("id")?,
            name: row.get("name")?,
            plan: row.parsed("plan", Plan::parse)?,
            created_at: row.get("created_at")?,
        })
    }
}

/// The columns of a [`LibraryInfo`], over `libraries l JOIN users u` ([`FROM_LIB`]).
pub(crate) const LIB_COLS: &str = "l.id AS id, u.name AS owner, l.slug AS slug, \
    l.title AS title, l.description AS description, l.category AS category, \
    l.visibility AS visibility, l.doc_count AS doc_count, l.stars AS stars, \
    (SELECT COUNT(*) FROM links lc WHERE lc.library_id = l.id) AS links, \
    l.created_at AS created_at, l.updated_at AS updated_at, l.content_seq AS content_seq";

/// The tables [`LIB_COLS`] reads.
pub(crate) const FROM_LIB: &str = "FROM libraries l JOIN users u ON u.id = l.owner_id";

impl FromRow for LibraryInfo {
    fn from_row(row: &Row) -> Result<LibraryInfo> {
        Ok(LibraryInfo {
            id: row.get("id")?,
            key: LibraryKey {
                owner: row.get("owner")?,
                slug: row.get("slug")?,
            },
            title: row.get("title")?,
            description: row.get("description")?,
            category: row.get("category")?,
            visibility: row.parsed("visibility", Visibility::parse)?,
            doc_count: row.get("doc_count")?,
            stars: row.get("stars")?,
            links: row.get("links")?,
            created_at: row.get("created_at")?,
            updated_at: row.get("updated_at")?,
            content_seq: row.get("content_seq")?,
        })
    }
}

/// The viewer's flags of a [`CatalogEntry`] (the viewer is `$1`), after [`LIB_COLS`].
pub(crate) const ENTRY_FLAGS: &str = "CASE WHEN l.owner_id = $1 THEN 1 ELSE 0 END AS is_owner, \
    CASE WHEN EXISTS (SELECT 1 FROM links lk WHERE lk.library_id = l.id AND lk.user_id = $1) \
    THEN 1 ELSE 0 END AS is_linked, \
    CASE WHEN EXISTS (SELECT 1 FROM invites iv WHERE iv.library_id = l.id AND iv.user_id = $1) \
    THEN 1 ELSE 0 END AS invited";

impl FromRow for CatalogEntry {
    fn from_row(row: &Row) -> Result<CatalogEntry> {
        let library = LibraryInfo::from_row(row)?;
        let is_owner: bool = row.get("is_owner")?;
        let invited: bool = row.get("invited")?;
        Ok(CatalogEntry {
            can_link: is_owner || invited || library.visibility == Visibility::Public,
            is_owner,
            is_linked: row.get("is_linked")?,
            library,
        })
    }
}

impl FromRow for ManifestEntry {
    fn from_row(row: &Row) -> Result<ManifestEntry> {
        Ok(ManifestEntry {
            path: row.get("path")?,
            hash: row.get("hash")?,
            vector_model: row.get("vector_model")?,
        })
    }
}

/// A row of one column, read as `T`: `SELECT COUNT(*) AS n`, `SELECT id`.
pub(crate) struct One<T>(pub(crate) T);

impl<T: Column> One<T> {
    /// The only column of the row.
    fn read(row: &Row) -> Result<T> {
        match row.names.first() {
            Some(name) if row.names.len() == 1 => row.get(name),
            _ => Err(GatewayError::Database(format!(
                "expected one column, the query has {}",
                row.names.join(", ")
            ))),
        }
    }
}

impl<T: Column> FromRow for One<T> {
    fn from_row(row: &Row) -> Result<One<T>> {
        One::read(row).map(One)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cols: &[(&str, Val)]) -> Row {
        Row::new(
            cols.iter().map(|(n, _)| n.to_string()).collect(),
            cols.iter().map(|(_, v)| v.clone()).collect(),
        )
    }

    #[test]
    fn columns_are_read_by_name_and_bad_values_are_errors() {
        let r = row(&[
            ("id", Val::I(7)),
            ("name", Val::T("alice".into())),
            ("plan", Val::T("pro".into())),
            ("created_at", Val::I(5)),
        ]);
        let user = User::from_row(&r).unwrap();
        assert_eq!(
            (user.id, user.name.as_str(), user.plan),
            (7, "alice", Plan::Pro)
        );
        let bad = row(&[
            ("id", Val::I(7)),
            ("name", Val::T("alice".into())),
            ("plan", Val::T("gold".into())),
            ("created_at", Val::I(5)),
        ]);
        let e = User::from_row(&bad).unwrap_err().to_string();
        assert!(e.contains("\"plan\"") && e.contains("gold"), "{e}");
        let e = r.get::<i64>("name").unwrap_err().to_string();
        assert!(
            e.contains("\"name\"") && e.contains("not an integer"),
            "{e}"
        );
        let e = r.get::<i64>("missing").unwrap_err().to_string();
        assert!(e.contains("no column \"missing\""), "{e}");
        assert_eq!(
            r.get::<Option<String>>("name").unwrap().as_deref(),
            Some("alice")
        );
        let nulls = row(&[("t", Val::N), ("n", Val::I(-1)), ("f", Val::I(2))]);
        assert_eq!(nulls.get::<Option<String>>("t").unwrap(), None);
        assert!(nulls.get::<String>("t").is_err(), "NULL where text is due");
        assert!(nulls.get::<u64>("n").is_err(), "a negative count");
        assert!(nulls.get::<bool>("f").is_err(), "a flag is 0 or 1");
        assert!(One::<i64>::from_row(&r).is_err(), "several columns");
        assert_eq!(
            One::<i64>::from_row(&row(&[("n", Val::I(3))])).unwrap().0,
            3
        );
    }
}
