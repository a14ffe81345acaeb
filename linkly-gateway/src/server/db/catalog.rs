//! The catalogue: libraries, who may see and link them (visibility, invitations), and the
//! links that use a user's slots.

use super::rows::{ENTRY_FLAGS, FROM_LIB, FromRow, LIB_COLS, Row, Val};
use super::users::{lock_user, user_id};
use super::{Backend, Db, Tx, count, like_pattern, now_ms};
use crate::model::{
    CatalogEntry, CatalogPage, CatalogQuery, LibraryInfo, LibraryKey, LibraryMeta, Limits,
    LinkOutcome, UnlinkOutcome, User, Visibility, parse_category, valid_name,
};
use crate::{GatewayError, Result};

/// The libraries the viewer (`$1`) may see: public and showcase ones, their own, and those
/// they were invited to.
const VISIBLE: &str = "(l.visibility <> 'private' OR l.owner_id = $1 OR EXISTS \
    (SELECT 1 FROM invites vi WHERE vi.library_id = l.id AND vi.user_id = $1))";

/// The libraries the user (`$1`) may link: public ones, their own, and those they were
/// invited to.
const LINKABLE: &str = "(l.visibility = 'public' OR l.owner_id = $1 OR EXISTS \
    (SELECT 1 FROM invites li WHERE li.library_id = l.id AND li.user_id = $1))";

impl Db {
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
                let existing = tx.row::<LibraryFields>(
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
                        let id = row.id;
                        let new_title = if title.is_empty() {
                            row.title.clone()
                        } else {
                            title.into()
                        };
                        let new_description = if description.is_empty() {
                            row.description.clone()
                        } else {
                            description.into()
                        };
                        let new_category = category
                            .map(str::to_string)
                            .unwrap_or_else(|| row.category.clone());
                        let new_visibility = meta
                            .visibility
                            .map(|v| v.as_str().to_string())
                            .unwrap_or_else(|| row.visibility.clone());
                        let changed = new_title != row.title
                            || new_description != row.description
                            || new_category != row.category
                            || new_visibility != row.visibility;
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
                        let row = tx.scalar::<i64>(
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
                                        .unwrap_or(Visibility::Private)
                                        .as_str()
                                        .into(),
                                ),
                                Val::I(now),
                            ],
                        )?;
                        match row {
                            Some(id) => (id, true),
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
            let Some(id) = tx.scalar::<i64>(
                "SELECT id FROM libraries WHERE owner_id = $1 AND slug = $2",
                &[Val::I(owner.id), Val::T(slug.into())],
            )?
            else {
                return Ok(false);
            };
            let id = [Val::I(id)];
            tx.exec("DELETE FROM publishes WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM documents WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM chunks WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM postings WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM links WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM invites WHERE library_id = $1", &id)?;
            tx.exec("DELETE FROM libraries WHERE id = $1", &id)?;
            Ok(true)
        })
    }

    /// A library by address, whoever may see it.
    pub fn library(&self, key: &LibraryKey) -> Result<Option<LibraryInfo>> {
        self.tx(false, |tx| {
            tx.row(
                &format!("SELECT {LIB_COLS} {FROM_LIB} WHERE u.name = $1 AND l.slug = $2"),
                &[Val::T(key.owner.clone()), Val::T(key.slug.clone())],
            )
        })
    }

    /// A library by the database's number, whoever may see it.
    pub fn library_by_id(&self, id: i64) -> Result<Option<LibraryInfo>> {
        self.tx(false, |tx| library_by_id(tx, id))
    }

    /// How many libraries the catalogue holds (every visibility).
    pub fn library_count(&self) -> Result<u64> {
        self.tx(false, |tx| {
            tx.value("SELECT COUNT(*) AS n FROM libraries", &[])
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
            let total: u64 = tx.value(
                &format!("SELECT COUNT(*) AS n {FROM_LIB} WHERE {filter}"),
                &params,
            )?;
            let mut page_params = params.clone();
            page_params.push(Val::I(limit));
            page_params.push(Val::I(offset));
            let n = page_params.len();
            let entries = tx.rows(
                &format!(
                    "SELECT {LIB_COLS}, {ENTRY_FLAGS} {FROM_LIB} WHERE {filter} \
                     ORDER BY l.updated_at DESC, u.name, l.slug LIMIT ${} OFFSET ${n}",
                    n - 1
                ),
                &page_params,
            )?;
            Ok(CatalogPage { entries, total })
        })
    }

    /// Invites a user to a library (they may then see and link it). `NotFound` for an unknown
    /// library or user; inviting twice is no change.
    pub fn invite(&self, key: &LibraryKey, user: &str) -> Result<()> {
        self.tx(true, |tx| {
            let library = tx
                .scalar::<i64>(
                    &format!("SELECT l.id AS id {FROM_LIB} WHERE u.name = $1 AND l.slug = $2"),
                    &[Val::T(key.owner.clone()), Val::T(key.slug.clone())],
                )?
                .ok_or_else(|| GatewayError::not_found(format!("no library {key}")))?;
            let invitee = user_id(tx, user)?
                .ok_or_else(|| GatewayError::not_found(format!("no user {user:?}")))?;
            tx.exec(
                "INSERT INTO invites (library_id, user_id, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT DO NOTHING",
                &[Val::I(library), Val::I(invitee), Val::I(now_ms())],
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
                .row::<LibraryOwner>(
                    &format!(
                        "SELECT l.id AS id, l.visibility AS visibility, l.owner_id AS owner_id \
                         {FROM_LIB} WHERE u.name = $1 AND l.slug = $2"
                    ),
                    &[Val::T(key.owner.clone()), Val::T(key.slug.clone())],
                )?
                .ok_or_else(|| GatewayError::not_found(format!("no library {key}")))?;
            let invitee = user_id(tx, user)?
                .ok_or_else(|| GatewayError::not_found(format!("no user {user:?}")))?;
            let (library_id, user_id) = (library.id, invitee);
            let removed = tx.exec(
                "DELETE FROM invites WHERE library_id = $1 AND user_id = $2",
                &[Val::I(library_id), Val::I(user_id)],
            )? > 0;
            if library.visibility != Visibility::Public && library.owner_id != user_id {
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
            tx.rows(
                &format!("SELECT {LIB_COLS} {FROM_LIB} ORDER BY u.name, l.slug"),
                &[],
            )
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
            let Some(row) = tx.row::<LinkState>(
                &format!(
                    "SELECT l.id AS id, CASE WHEN {VISIBLE} THEN 1 ELSE 0 END AS visible, \
                     CASE WHEN EXISTS (SELECT 1 FROM links ul \
                     WHERE ul.library_id = l.id AND ul.user_id = $1) THEN 1 ELSE 0 END AS linked \
                     {FROM_LIB} WHERE u.name = $2 AND l.slug = $3",
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
            let (visible, linked) = (row.visible, row.linked);
            if !linked {
                if !visible {
                    return Ok(UnlinkOutcome::NotFound);
                }
                let used = slots_used(tx, user)?;
                return Ok(UnlinkOutcome::AlreadyUnlinked { used, limit });
            }
            tx.exec(
                "DELETE FROM links WHERE user_id = $1 AND library_id = $2",
                &[Val::I(user.id), Val::I(row.id)],
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
            tx.rows(
                &format!(
                    "SELECT {LIB_COLS} {FROM_LIB} JOIN links k ON k.library_id = l.id \
                     WHERE k.user_id = $1 AND {LINKABLE} ORDER BY u.name, l.slug"
                ),
                &[Val::I(user.id)],
            )
        })
    }

    /// Whether the user has linked this library (and may still link it, as in [`Db::linked`]).
    pub fn is_linked(&self, user: &User, key: &LibraryKey) -> Result<bool> {
        self.tx(false, |tx| {
            Ok(tx
                .scalar::<i64>(
                    &format!(
                        "SELECT l.id AS id {FROM_LIB} JOIN links k ON k.library_id = l.id \
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
}

/// The fields of a library its owner may change, as [`Db::put_library`] reads them.
struct LibraryFields {
    id: i64,
    title: String,
    description: String,
    category: String,
    visibility: String,
}

impl FromRow for LibraryFields {
    fn from_row(row: &Row) -> Result<LibraryFields> {
        Ok(LibraryFields {
            id: row.get("id")?,
            title: row.get("title")?,
            description: row.get("description")?,
            category: row.get("category")?,
            visibility: row.get("visibility")?,
        })
    }
}

/// A library's number, visibility and owner, as [`Db::uninvite`] reads them.
struct LibraryOwner {
    id: i64,
    visibility: Visibility,
    owner_id: i64,
}

impl FromRow for LibraryOwner {
    fn from_row(row: &Row) -> Result<LibraryOwner> {
        let visibility: String = row.get("visibility")?;
        Ok(LibraryOwner {
            id: row.get("id")?,
            visibility: Visibility::parse(&visibility)
                .map_err(|e| GatewayError::Database(format!("column \"visibility\": {e}")))?,
            owner_id: row.get("owner_id")?,
        })
    }
}

/// Whether a user sees and has linked a library, as [`Db::unlink`] reads it.
struct LinkState {
    id: i64,
    visible: bool,
    linked: bool,
}

impl FromRow for LinkState {
    fn from_row(row: &Row) -> Result<LinkState> {
        Ok(LinkState {
            id: row.get("id")?,
            visible: row.get("visible")?,
            linked: row.get("linked")?,
        })
    }
}

/// A library by the database's number.
pub(super) fn library_by_id(tx: &mut Tx<'_>, id: i64) -> Result<Option<LibraryInfo>> {
    tx.row(
        &format!("SELECT {LIB_COLS} {FROM_LIB} WHERE l.id = $1"),
        &[Val::I(id)],
    )
}

/// A library as the viewer sees it, when they may.
fn visible_entry(tx: &mut Tx<'_>, viewer: &User, key: &LibraryKey) -> Result<Option<CatalogEntry>> {
    tx.row(
        &format!(
            "SELECT {LIB_COLS}, {ENTRY_FLAGS} {FROM_LIB} \
             WHERE u.name = $2 AND l.slug = $3 AND {VISIBLE}"
        ),
        &[
            Val::I(viewer.id),
            Val::T(key.owner.clone()),
            Val::T(key.slug.clone()),
        ],
    )
}

/// The user's links (every row counts, as the slots used).
fn slots_used(tx: &mut Tx<'_>, user: &User) -> Result<u32> {
    Ok(count(tx.value(
        "SELECT COUNT(*) AS n FROM links WHERE user_id = $1",
        &[Val::I(user.id)],
    )?))
}
