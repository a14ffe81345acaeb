//! Accounts: users, their plans and tokens (only a token's SHA-256 is stored).

use super::rows::{USER_COLS, Val};
use super::{Db, Tx, now_ms};
use crate::model::{Plan, User, valid_name};
use crate::server::admin;
use crate::{GatewayError, Result};

impl Db {
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
            if user_id(tx, name)?.is_some() {
                return Err(GatewayError::Conflict(format!(
                    "user {name:?} exists already"
                )));
            }
            tx.row::<User>(
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
            .ok_or_else(|| GatewayError::Database("insert returned no row".into()))
        })?;
        Ok((user, token))
    }

    /// Removes a user with their libraries (and those libraries' documents, links and
    /// invitations), their links and their invitations. False when there was no such user.
    pub fn remove_user(&self, name: &str) -> Result<bool> {
        self.tx(true, |tx| {
            let Some(id) = user_id(tx, name)? else {
                return Ok(false);
            };
            let id = [Val::I(id)];
            let owned = "(SELECT id FROM libraries WHERE owner_id = $1)";
            for sql in [
                format!("DELETE FROM publishes WHERE library_id IN {owned}"),
                format!("DELETE FROM documents WHERE library_id IN {owned}"),
                format!("DELETE FROM chunks WHERE library_id IN {owned}"),
                format!("DELETE FROM postings WHERE library_id IN {owned}"),
                format!("DELETE FROM links WHERE user_id = $1 OR library_id IN {owned}"),
                format!("DELETE FROM invites WHERE user_id = $1 OR library_id IN {owned}"),
                "DELETE FROM libraries WHERE owner_id = $1".to_string(),
                "DELETE FROM publish_usage WHERE user_id = $1".to_string(),
                "DELETE FROM users WHERE id = $1".to_string(),
            ] {
                tx.exec(&sql, &id)?;
            }
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
            tx.rows(&format!("SELECT {USER_COLS} FROM users ORDER BY name"), &[])
        })
    }

    /// A user by name.
    pub fn user(&self, name: &str) -> Result<Option<User>> {
        self.tx(false, |tx| {
            tx.row(
                &format!("SELECT {USER_COLS} FROM users WHERE name = $1"),
                &[Val::T(name.into())],
            )
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
            tx.row(
                &format!("SELECT {USER_COLS} FROM users WHERE token_hash = $1"),
                &[Val::T(hash.clone())],
            )
        })
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
}

/// The number of the user `name`, when there is one.
pub(super) fn user_id(tx: &mut Tx<'_>, name: &str) -> Result<Option<i64>> {
    tx.scalar(
        "SELECT id FROM users WHERE name = $1",
        &[Val::T(name.into())],
    )
}

/// Locks the user's row until commit (PostgreSQL; SQLite holds the write lock already) and
/// reads their current plan. `Unauthorized` when the user was removed.
pub(super) fn lock_user(tx: &mut Tx<'_>, user: &User) -> Result<Plan> {
    let sql = format!("SELECT plan FROM users WHERE id = $1{}", tx.for_update());
    let plan: String = tx.scalar(&sql, &[Val::I(user.id)])?.ok_or_else(|| {
        GatewayError::Unauthorized(format!("user {} no longer exists", user.name))
    })?;
    Plan::parse(&plan).map_err(|e| GatewayError::Database(format!("column \"plan\": {e}")))
}
