//! Who opened each MCP session, and how many a user may hold open at once.
//!
//! A session counts against its user while rmcp still holds it and it was used within the idle
//! timeout (rmcp closes a session idle that long; a closed one, `DELETE /mcp`, leaves rmcp's
//! table at once). A new session beyond the user's limit is refused with 429 before rmcp
//! creates it; another user is not affected.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// Session owners remembered at most; beyond, those unused for longer than a day are
/// forgotten (rmcp has closed them long before).
const SESSION_OWNERS: usize = 100_000;

/// A session's owner and when it was last used.
struct Owner {
    user: i64,
    used: Instant,
}

#[derive(Default)]
struct Book {
    /// MCP session id → its owner.
    owners: HashMap<String, Owner>,
    /// Sessions being opened now, per user (counted until their answer names them).
    opening: HashMap<i64, usize>,
}

/// The sessions of every user, checked on each `/mcp` request.
pub(super) struct SessionOwners {
    book: Arc<Mutex<Book>>,
    /// rmcp's sessions: one absent there is closed.
    live: Arc<LocalSessionManager>,
    per_user: usize,
    idle: Duration,
}

/// Why a user may not open another session: how many they hold, and the wait until the
/// least recently used one expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TooManySessions {
    pub(super) open: usize,
    pub(super) limit: usize,
    pub(super) wait: Duration,
}

impl TooManySessions {
    /// Whole minutes to wait, at least one.
    pub(super) fn wait_minutes(&self) -> u64 {
        self.wait.as_secs().div_ceil(60).max(1)
    }

    /// What the user is told.
    pub(super) fn message(&self) -> String {
        format!(
            "too many open MCP sessions for this user: {} open, at most {} per user; close an unused session (DELETE /mcp with its mcp-session-id, or quit a client you no longer use) or wait {} minute(s) for an idle one to expire",
            self.open,
            self.limit,
            self.wait_minutes()
        )
    }
}

/// A session being opened: counted against its user until dropped.
pub(super) struct Opening {
    book: Arc<Mutex<Book>>,
    user: i64,
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut book = lock(&self.book);
        if let Some(n) = book.opening.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                book.opening.remove(&self.user);
            }
        }
    }
}

fn lock(book: &Mutex<Book>) -> MutexGuard<'_, Book> {
    book.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionOwners {
    /// The owners of `live`'s sessions: `per_user` open at most each (0: no limit), a session
    /// unused for `idle` no longer counted.
    pub(super) fn new(live: Arc<LocalSessionManager>, per_user: usize, idle: Duration) -> Self {
        SessionOwners {
            book: Arc::default(),
            live,
            per_user,
            idle,
        }
    }

    /// Whether `user` may use the session `id` (marking it used): false when another user
    /// opened it. An unknown id is left to rmcp (which answers it is not found).
    pub(super) fn claim(&self, id: &str, user: i64) -> bool {
        let mut book = lock(&self.book);
        match book.owners.get_mut(id) {
            Some(owner) if owner.user != user => false,
            Some(owner) => {
                owner.used = Instant::now();
                true
            }
            None => true,
        }
    }

    /// Counts a new session of `user` while it opens; refused when they hold their limit.
    pub(super) async fn open(&self, user: i64) -> Result<Opening, TooManySessions> {
        if self.per_user == 0 {
            return Ok(self.opening(user));
        }
        let live: HashSet<String> = self
            .live
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        let mut book = lock(&self.book);
        book.owners.retain(|id, _| live.contains(id));
        let idle = self.idle;
        let held: Vec<Duration> = book
            .owners
            .values()
            .filter(|o| o.user == user && o.used.elapsed() < idle)
            .map(|o| o.used.elapsed())
            .collect();
        let open = held.len() + book.opening.get(&user).copied().unwrap_or(0);
        if open >= self.per_user {
            let oldest = held.iter().max().copied().unwrap_or_default();
            return Err(TooManySessions {
                open,
                limit: self.per_user,
                wait: idle.saturating_sub(oldest),
            });
        }
        drop(book);
        Ok(self.opening(user))
    }

    fn opening(&self, user: i64) -> Opening {
        *lock(&self.book).opening.entry(user).or_default() += 1;
        Opening {
            book: self.book.clone(),
            user,
        }
    }

    /// Records the session `id` that `user` opened.
    pub(super) fn opened(&self, id: &str, user: i64) {
        let mut book = lock(&self.book);
        if book.owners.len() >= SESSION_OWNERS {
            book.owners
                .retain(|_, o| o.used.elapsed() < Duration::from_secs(86_400));
        }
        book.owners.insert(
            id.to_string(),
            Owner {
                user,
                used: Instant::now(),
            },
        );
    }

    /// Forgets the session `id` (closed).
    pub(super) fn closed(&self, id: &str) {
        lock(&self.book).owners.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_user_holds_their_limit_and_no_more() {
        let owners = SessionOwners::new(
            Arc::new(LocalSessionManager::default()),
            2,
            Duration::from_secs(600),
        );
        // Two being opened at once count.
        let a = owners.open(1).await.unwrap();
        let b = owners.open(1).await.unwrap();
        let refused = owners.open(1).await.err().unwrap();
        assert_eq!((refused.open, refused.limit), (2, 2));
        assert_eq!(refused.wait_minutes(), 10);
        assert!(refused.message().contains("at most 2 per user"));
        // Another user is not counted against them.
        assert!(owners.open(2).await.is_ok());
        drop((a, b));
        // Sessions rmcp does not hold (closed) are not counted either.
        owners.opened("gone", 1);
        owners.opened("gone too", 1);
        let _c = owners.open(1).await.unwrap();
        let _d = owners.open(1).await.unwrap();
        // A session is its opener's.
        owners.opened("s", 3);
        assert!(owners.claim("s", 3) && !owners.claim("s", 4));
    }
}
