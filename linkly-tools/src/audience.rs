//! Who a call is for: the person (and the person's agents), who may read everything indexed and
//! save notes, or a visitor signed in over the LAN, who may only search and read the libraries
//! the person shares (`lan_shared_libraries`).
//!
//! The host decides the audience of a request (`linkly-http`'s gate) and runs the request's
//! work inside [`Audience::run`]; the tools ask [`current`] at the few places every call goes
//! through: a `library` argument resolves only to a shared library ([`crate::library`]), no
//! `library` means all the shared ones, a document outside them is not found
//! ([`Linkly::fresh_doc`]), `list_libraries` lists only them, and `note_save` is refused.

use std::cell::RefCell;
use std::sync::Arc;

use linkly_core::ErrorCode;

use crate::{Linkly, Result, ToolError};

/// Who a call is for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Audience {
    /// The person, or one of the person's agents: everything indexed, and `note_save`.
    #[default]
    Person,
    /// A LAN visitor: only the libraries named here (the person's `lan_shared_libraries`), read
    /// only.
    Shared(Vec<String>),
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<[String]>>> = const { RefCell::new(None) };
}

/// Puts the previous audience back when a [`Audience::run`] ends, panic or not.
struct Restore(Option<Arc<[String]>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl Audience {
    /// Runs `f` (tool calls on this thread) for this audience.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let shared = match self {
            Audience::Person => None,
            Audience::Shared(names) => Some(Arc::from(names.as_slice())),
        };
        let previous = CURRENT.with(|c| c.replace(shared));
        let _restore = Restore(previous);
        f()
    }

    /// Whether this audience may change anything (notes, settings): the person only.
    pub fn is_person(&self) -> bool {
        matches!(self, Audience::Person)
    }
}

/// The shared libraries the running call is limited to, or `None` for the person.
pub(crate) fn current() -> Option<Arc<[String]>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Refuses what is the person's alone (a write, the whole notes folder) to a visitor.
pub(crate) fn person_only(what: &str) -> Result<()> {
    match current() {
        None => Ok(()),
        Some(_) => Err(ToolError::new(
            ErrorCode::PathNotAllowed,
            format!(
                "{what} is the person's own: a visitor signed in over the local network may only search and read the shared libraries (list_libraries)"
            ),
        )),
    }
}

/// The libraries a visitor may name, for refusals: `"a", "b"`, or a sentence when none.
pub(crate) fn shared_names(shared: &[String]) -> String {
    if shared.is_empty() {
        "none (the person shares no library on the local network)".into()
    } else {
        shared
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Linkly {
    /// [`Linkly::call`] for `audience`: a visitor's call reads only the shared libraries.
    pub fn call_as(
        &self,
        audience: &Audience,
        name: &str,
        args: serde_json::Value,
    ) -> std::result::Result<crate::ToolOutput, crate::UnknownTool> {
        audience.run(|| self.call(name, args))
    }

    /// Whether the running call's audience may read the document at `path`: always for the
    /// person; for a visitor, when it lies in a shared library (its folders or tagged notes).
    pub(crate) fn admits(&self, path: &str) -> bool {
        let Some(shared) = current() else {
            return true;
        };
        let config = self.config();
        config
            .libraries
            .iter()
            .filter(|l| shared.iter().any(|s| s == &l.name))
            .filter_map(|l| crate::library::LibraryScope::of(self, l).ok())
            .any(|scope| scope.covers(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_sets_and_restores_the_audience_even_on_panic() {
        assert!(current().is_none());
        let shared = Audience::Shared(vec!["team".into()]);
        shared.run(|| {
            assert_eq!(current().as_deref(), Some(&["team".to_string()][..]));
            Audience::Person.run(|| assert!(current().is_none()));
            assert!(current().is_some());
        });
        assert!(current().is_none());
        let caught = std::panic::catch_unwind(|| shared.run(|| panic!("boom")));
        assert!(caught.is_err());
        assert!(current().is_none());
        assert!(person_only("note_save").is_ok());
        assert!(shared.run(|| person_only("note_save")).is_err());
    }
}
