//! The bytes each user publishes per UTC day, and the daily quota on them.
//!
//! What counts of a document is what the gateway stores of it: its text, path, title and
//! outline (as JSON) and its vectors (4 bytes a dimension a chunk); a document sent twice in
//! one publish counts twice. A publish's batches add to its own count (`publishes.bytes`) as
//! they are staged; its commit adds that count to the owner's day (`publish_usage`, one row per
//! user and UTC day). A batch that would take the day's bytes (committed, plus this publish's
//! staged) past the quota is refused, and so is a commit that would (another publish committed
//! meanwhile); either way the publish is discarded with everything it staged
//! ([`super::Db::stage_documents_within`]). The count lives in the database: it holds across
//! gateway processes and restarts.

use super::rows::Val;
use super::{Db, Tx, now_ms};
use crate::{GatewayError, Result};

/// A day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// Days of usage kept per user (older rows are deleted at a commit).
const KEEP_DAYS: i64 = 7;

/// The UTC day (days since 1970-01-01) of a time in milliseconds.
pub(super) fn utc_day(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// A byte count for people: `512 B`, `1.5 KiB`, `1.0 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The refusal of a publish that would take the day's bytes past `quota`.
fn over_quota(quota: u64, used: u64, adding: u64, now: i64) -> GatewayError {
    let next_day = (utc_day(now) + 1) * DAY_MS;
    let minutes = (next_day - now).div_euclid(60_000).max(1);
    GatewayError::Limit(format!(
        "daily publish quota reached: this publish needs {} more, but {} of this user's {} per day are used today; nothing of this publish was stored. The quota resets at 00:00 UTC ({}, in {} h {} min): publish then, publish fewer documents, or ask the gateway's administrator for more (--max-publish-bytes-per-day)",
        human_bytes(adding),
        human_bytes(used),
        human_bytes(quota),
        linkly_core::format_rfc3339(next_day),
        minutes / 60,
        minutes % 60,
    ))
}

/// The owner of the library, their row locked until commit (PostgreSQL; SQLite holds the
/// write lock already), so that their publishes are counted one at a time. `NotFound` for an
/// unknown library.
fn lock_owner(tx: &mut Tx<'_>, library_id: i64) -> Result<i64> {
    let owner: i64 = tx
        .scalar(
            "SELECT owner_id FROM libraries WHERE id = $1",
            &[Val::I(library_id)],
        )?
        .ok_or_else(|| GatewayError::not_found(format!("no library #{library_id}")))?;
    let sql = format!("SELECT id FROM users WHERE id = $1{}", tx.for_update());
    tx.scalar::<i64>(&sql, &[Val::I(owner)])?;
    Ok(owner)
}

/// The bytes `user` published on the UTC `day`.
fn used_on(tx: &mut Tx<'_>, user: i64, day: i64) -> Result<u64> {
    let used: Option<i64> = tx.scalar(
        "SELECT bytes FROM publish_usage WHERE user_id = $1 AND day = $2",
        &[Val::I(user), Val::I(day)],
    )?;
    Ok(u64::try_from(used.unwrap_or(0)).unwrap_or(0))
}

/// The bytes the open publish staged so far (0 when it is not open: the staging says so).
fn staged_by(tx: &mut Tx<'_>, library_id: i64, publish_id: i64) -> Result<u64> {
    let staged: Option<i64> = tx.scalar(
        "SELECT bytes FROM publishes WHERE id = $1 AND library_id = $2",
        &[Val::I(publish_id), Val::I(library_id)],
    )?;
    Ok(u64::try_from(staged.unwrap_or(0)).unwrap_or(0))
}

fn as_i64(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// Before a batch of `adding` bytes is staged: `Limit` when the day's bytes and the publish's
/// staged ones would go past `quota` with it.
pub(super) fn check_batch(
    tx: &mut Tx<'_>,
    library_id: i64,
    publish_id: i64,
    quota: Option<u64>,
    adding: u64,
) -> Result<()> {
    let Some(quota) = quota else {
        return Ok(());
    };
    let now = now_ms();
    let owner = lock_owner(tx, library_id)?;
    let used = used_on(tx, owner, utc_day(now))?;
    let staged = staged_by(tx, library_id, publish_id)?;
    if used.saturating_add(staged).saturating_add(adding) > quota {
        return Err(over_quota(quota, used, staged.saturating_add(adding), now));
    }
    Ok(())
}

/// After a batch is staged: its bytes added to the publish's.
pub(super) fn add_staged(tx: &mut Tx<'_>, publish_id: i64, bytes: u64) -> Result<()> {
    tx.exec(
        "UPDATE publishes SET bytes = bytes + $2 WHERE id = $1",
        &[Val::I(publish_id), Val::I(as_i64(bytes))],
    )?;
    Ok(())
}

/// Before a publish commits: its staged bytes added to its owner's day, `Limit` when they
/// would take it past `quota`; the owner's days older than a week are forgotten.
pub(super) fn charge_commit(
    tx: &mut Tx<'_>,
    library_id: i64,
    publish_id: i64,
    quota: Option<u64>,
) -> Result<()> {
    let now = now_ms();
    let day = utc_day(now);
    let owner = lock_owner(tx, library_id)?;
    let staged = staged_by(tx, library_id, publish_id)?;
    if staged == 0 {
        return Ok(());
    }
    let used = used_on(tx, owner, day)?;
    if let Some(quota) = quota
        && used.saturating_add(staged) > quota
    {
        return Err(over_quota(quota, used, staged, now));
    }
    tx.exec(
        "INSERT INTO publish_usage (user_id, day, bytes) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id, day) DO UPDATE SET bytes = publish_usage.bytes + excluded.bytes",
        &[Val::I(owner), Val::I(day), Val::I(as_i64(staged))],
    )?;
    tx.exec(
        "DELETE FROM publish_usage WHERE user_id = $1 AND day < $2",
        &[Val::I(owner), Val::I(day - KEEP_DAYS)],
    )?;
    Ok(())
}

impl Db {
    /// The bytes the user `user_id` published today (UTC), committed publishes only.
    pub fn published_today(&self, user_id: i64) -> Result<u64> {
        self.tx(false, |tx| used_on(tx, user_id, utc_day(now_ms())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_and_bytes_read_well() {
        assert_eq!(utc_day(0), 0);
        assert_eq!(utc_day(DAY_MS - 1), 0);
        assert_eq!(utc_day(DAY_MS), 1);
        assert_eq!(utc_day(-1), -1);
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1 << 30), "1.0 GiB");
    }

    #[test]
    fn a_refusal_says_the_quota_the_use_and_the_reset() {
        let noon = 20_000 * DAY_MS + DAY_MS / 2;
        let e = over_quota(1 << 20, 900 << 10, 200 << 10, noon).to_string();
        assert!(e.contains("1.0 MiB per day"), "{e}");
        assert!(e.contains("900.0 KiB"), "{e}");
        assert!(e.contains("200.0 KiB more"), "{e}");
        assert!(
            e.contains("00:00 UTC") && e.contains("in 12 h 0 min"),
            "{e}"
        );
        assert!(e.contains("nothing of this publish was stored"), "{e}");
    }
}
