//! The store's rules, run on SQLite (a temporary file) and, when `LINKLY_TEST_POSTGRES` holds
//! a PostgreSQL URL, on a fresh PostgreSQL database created for each test.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use linkly_gateway::GatewayError;
use linkly_gateway::model::{
    CatalogQuery, LibraryKey, LibraryMeta, Limits, LinkOutcome, Plan, PublishedDoc, UnlinkOutcome,
    User, Visibility,
};
use linkly_gateway::server::db::{Db, DbSpec, PublishCommit};

use crate::common::{self, postgres, sqlite};

/// Runs a test body on every backend available (saying when PostgreSQL is skipped).
#[allow(clippy::print_stderr)]
fn each(body: impl Fn(&DbSpec)) {
    let lite = sqlite();
    body(&lite.spec);
    match postgres(None) {
        Some(pg) => body(&pg.spec),
        None => eprintln!("note: LINKLY_TEST_POSTGRES is unset: PostgreSQL not tested"),
    }
}

fn meta(title: &str, description: &str, category: &str, visibility: Visibility) -> LibraryMeta {
    LibraryMeta {
        title: title.into(),
        description: description.into(),
        category: category.into(),
        visibility: Some(visibility),
    }
}

/// Whether `result` is the error for an unknown library or user.
fn not_found<T>(result: Result<T, GatewayError>) -> bool {
    matches!(result, Err(GatewayError::NotFound(_)))
}

fn key(owner: &str, slug: &str) -> LibraryKey {
    LibraryKey {
        owner: owner.into(),
        slug: slug.into(),
    }
}

fn doc(path: &str, hash: &str) -> PublishedDoc {
    PublishedDoc {
        path: path.into(),
        doc_type: "md".into(),
        hash: hash.into(),
        size: 42,
        modified_at: 1_700_000_000_000,
        title: Some(format!("Title of {path}")),
        text: format!("text of {path} at {hash}"),
        outline: serde_json::json!([{"title": "Intro", "line": 1}]),
        vectors: None,
    }
}

/// One whole publish: opens it (removing `gone` at the commit), stages `docs`, commits.
fn publish(
    db: &Db,
    library_id: i64,
    docs: &[PublishedDoc],
    gone: &[&str],
) -> Result<PublishCommit, GatewayError> {
    let gone: Vec<String> = gone.iter().map(|g| g.to_string()).collect();
    let id = db.begin_publish(library_id, &gone)?;
    db.stage_documents(library_id, id, docs)?;
    db.commit_publish(library_id, id)
}

fn q(query: Option<&str>) -> CatalogQuery {
    CatalogQuery {
        query: query.map(str::to_string),
        limit: 50,
        ..CatalogQuery::default()
    }
}

fn addresses(db: &Db, viewer: &User, query: &CatalogQuery) -> Vec<String> {
    db.search_libraries(viewer, query)
        .unwrap()
        .entries
        .iter()
        .map(|e| e.library.key.address())
        .collect()
}

#[test]
fn users_tokens_plans_and_removal() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, token) = db.add_user("alice", Plan::Free).unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.plan, Plan::Free);
        assert!(token.starts_with("lk_") && token.len() == 67, "{token}");
        assert_eq!(db.user_by_token(&token).unwrap().as_ref(), Some(&alice));
        assert_eq!(db.user_by_token("lk_wrong").unwrap(), None);
        assert_eq!(db.user_by_token("").unwrap(), None);
        assert!(matches!(
            db.add_user("alice", Plan::Pro),
            Err(GatewayError::Conflict(_))
        ));
        assert!(matches!(
            db.add_user("Bad Name", Plan::Pro),
            Err(GatewayError::Invalid(_))
        ));
        let (bob, bob_token) = db.add_user("bob", Plan::Pro).unwrap();
        assert_ne!(token, bob_token);
        assert_eq!(
            db.users()
                .unwrap()
                .iter()
                .map(|u| u.name.as_str())
                .collect::<Vec<_>>(),
            ["alice", "bob"]
        );
        assert!(db.set_plan("alice", Plan::Pro).unwrap());
        assert!(!db.set_plan("nobody", Plan::Pro).unwrap());
        assert_eq!(db.user("alice").unwrap().unwrap().plan, Plan::Pro);
        assert_eq!(db.user("carol").unwrap(), None);

        // Removing a user takes their libraries, links and invitations with them.
        let lib = db
            .upsert_library(&bob, "notes", &meta("", "", "", Visibility::Private))
            .unwrap();
        publish(&db, lib.id, &[doc("r/a.md", "h1")], &[]).unwrap();
        db.invite(&key("bob", "notes"), "alice").unwrap();
        let alice = db.user("alice").unwrap().unwrap();
        assert!(matches!(
            db.link(&alice, &key("bob", "notes"), &Limits::default())
                .unwrap(),
            LinkOutcome::Linked { used: 1, .. }
        ));
        assert!(db.remove_user("bob").unwrap());
        assert!(!db.remove_user("bob").unwrap());
        assert_eq!(db.user_by_token(&bob_token).unwrap(), None);
        assert_eq!(db.library(&key("bob", "notes")).unwrap(), None);
        assert_eq!(db.slots_used(&alice).unwrap(), 0);
        assert!(db.linked(&alice).unwrap().is_empty());
        assert_eq!(db.library_state(&key("bob", "notes")).unwrap(), None);
    });
}

#[test]
fn libraries_take_defaults_and_given_fields() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, _) = db.add_user("alice", Plan::Free).unwrap();
        let (lib, created) = db
            .put_library(&alice, "rust-book", &LibraryMeta::default())
            .unwrap();
        assert!(created);
        assert_eq!(lib.key, key("alice", "rust-book"));
        assert_eq!(lib.title, "rust-book");
        assert_eq!(lib.category, "other");
        assert_eq!(
            lib.visibility,
            Visibility::Private,
            "a new library is private unless made public"
        );
        assert_eq!(
            (lib.doc_count, lib.stars, lib.links, lib.content_seq),
            (0, 0, 0, 0)
        );

        std::thread::sleep(Duration::from_millis(3));
        let (again, created) = db
            .put_library(
                &alice,
                "rust-book",
                &meta("The Rust Book", "", "Programming", Visibility::Showcase),
            )
            .unwrap();
        assert!(!created);
        assert_eq!(again.id, lib.id);
        assert_eq!(again.title, "The Rust Book");
        assert_eq!(again.description, "");
        assert_eq!(again.category, "programming");
        assert_eq!(again.visibility, Visibility::Showcase);
        assert!(again.updated_at > lib.updated_at);

        // Empty fields keep what is there.
        let kept = db
            .upsert_library(
                &alice,
                "rust-book",
                &LibraryMeta {
                    description: "All of it".into(),
                    ..LibraryMeta::default()
                },
            )
            .unwrap();
        assert_eq!(
            (
                kept.title.as_str(),
                kept.description.as_str(),
                kept.category.as_str()
            ),
            ("The Rust Book", "All of it", "programming")
        );
        assert_eq!(kept.visibility, Visibility::Showcase);
        assert_eq!(
            db.library(&key("alice", "rust-book")).unwrap(),
            Some(kept.clone())
        );
        assert_eq!(db.library_by_id(kept.id).unwrap(), Some(kept));
        assert_eq!(db.library_count().unwrap(), 1);

        assert!(matches!(
            db.upsert_library(&alice, "x", &meta("", "", "cooking", Visibility::Public)),
            Err(GatewayError::Invalid(_))
        ));
        assert!(matches!(
            db.upsert_library(&alice, "Bad/Slug", &LibraryMeta::default()),
            Err(GatewayError::Invalid(_))
        ));
        assert!(db.delete_library(&alice, "rust-book").unwrap());
        assert!(!db.delete_library(&alice, "rust-book").unwrap());
        assert_eq!(db.library_count().unwrap(), 0);
    });
}

/// alice owns a public, a showcase and a private library; bob is invited to the private one;
/// carol is not.
fn catalogue(db: &Db) -> (User, User, User) {
    let (alice, _) = db.add_user("alice", Plan::Free).unwrap();
    let (bob, _) = db.add_user("bob", Plan::Free).unwrap();
    let (carol, _) = db.add_user("carol", Plan::Free).unwrap();
    for (slug, m) in [
        (
            "pub",
            meta(
                "Rust Patterns",
                "Idioms and 100% safe code",
                "programming",
                Visibility::Public,
            ),
        ),
        (
            "show",
            meta(
                "Design Systems",
                "Tokens, grids",
                "design",
                Visibility::Showcase,
            ),
        ),
        (
            "priv",
            meta("Private Notes", "Rust diary", "other", Visibility::Private),
        ),
    ] {
        db.upsert_library(&alice, slug, &m).unwrap();
        std::thread::sleep(Duration::from_millis(3));
    }
    db.invite(&key("alice", "priv"), "bob").unwrap();
    db.invite(&key("alice", "priv"), "bob").unwrap(); // twice: no change
    (alice, bob, carol)
}

#[test]
fn search_lists_what_each_viewer_may_see_newest_first() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, bob, carol) = catalogue(&db);
        let all = q(None);
        assert_eq!(
            addresses(&db, &alice, &all),
            [
                "cloud://alice/priv",
                "cloud://alice/show",
                "cloud://alice/pub"
            ]
        );
        assert_eq!(addresses(&db, &bob, &all), addresses(&db, &alice, &all));
        assert_eq!(
            addresses(&db, &carol, &all),
            ["cloud://alice/show", "cloud://alice/pub"]
        );

        // Flags as carol sees them: public linkable, showcase not.
        let page = db.search_libraries(&carol, &all).unwrap();
        assert_eq!(page.total, 2);
        let show = &page.entries[0];
        assert!(!show.is_owner && !show.is_linked && !show.can_link);
        let public = &page.entries[1];
        assert!(!public.is_owner && public.can_link);
        // The owner may link everything; the invited reader the private one.
        assert!(
            db.search_libraries(&alice, &all)
                .unwrap()
                .entries
                .iter()
                .all(|e| e.is_owner && e.can_link)
        );
        let bob_page = db.search_libraries(&bob, &all).unwrap();
        assert!(bob_page.entries[0].can_link); // priv: invited
        assert!(!bob_page.entries[1].can_link); // show: the invitation is to priv only

        // query: case-insensitive substring of title, description or owner.
        assert_eq!(
            addresses(&db, &carol, &q(Some("rUsT"))),
            ["cloud://alice/pub"]
        );
        assert_eq!(
            addresses(&db, &bob, &q(Some("rust"))),
            ["cloud://alice/priv", "cloud://alice/pub"]
        );
        assert_eq!(
            addresses(&db, &carol, &q(Some("GRIDS"))),
            ["cloud://alice/show"]
        );
        assert_eq!(addresses(&db, &carol, &q(Some("ALI"))).len(), 2);
        // LIKE wildcards are literal.
        assert_eq!(
            addresses(&db, &carol, &q(Some("100%"))),
            ["cloud://alice/pub"]
        );
        assert!(addresses(&db, &carol, &q(Some("%"))).len() == 1);
        assert!(addresses(&db, &carol, &q(Some("_"))).is_empty());
        assert!(addresses(&db, &carol, &q(Some("nothing like it"))).is_empty());

        // category and owner are exact.
        let by_cat = CatalogQuery {
            category: Some("design".into()),
            ..q(None)
        };
        assert_eq!(addresses(&db, &carol, &by_cat), ["cloud://alice/show"]);
        let by_owner = CatalogQuery {
            owner: Some("alice".into()),
            ..q(None)
        };
        assert_eq!(addresses(&db, &alice, &by_owner).len(), 3);
        let by_prefix = CatalogQuery {
            owner: Some("ali".into()),
            ..q(None)
        };
        assert!(addresses(&db, &alice, &by_prefix).is_empty());

        // Paging: total counts every match.
        let page = db
            .search_libraries(
                &alice,
                &CatalogQuery {
                    limit: 2,
                    offset: 1,
                    ..q(None)
                },
            )
            .unwrap();
        assert_eq!(page.total, 3);
        assert_eq!(
            page.entries
                .iter()
                .map(|e| e.library.key.slug.as_str())
                .collect::<Vec<_>>(),
            ["show", "pub"]
        );
        let past = db
            .search_libraries(
                &alice,
                &CatalogQuery {
                    offset: 10,
                    ..q(None)
                },
            )
            .unwrap();
        assert_eq!((past.entries.len(), past.total), (0, 3));

        // An update moves a library to the top.
        std::thread::sleep(Duration::from_millis(3));
        db.upsert_library(
            &alice,
            "pub",
            &meta("Rust Patterns 2", "", "", Visibility::Public),
        )
        .unwrap();
        assert_eq!(addresses(&db, &carol, &all)[0], "cloud://alice/pub");

        // visible_library follows the same rules.
        assert!(
            db.visible_library(&carol, &key("alice", "priv"))
                .unwrap()
                .is_none()
        );
        assert!(
            db.visible_library(&bob, &key("alice", "priv"))
                .unwrap()
                .unwrap()
                .can_link
        );
        assert!(
            !db.visible_library(&carol, &key("alice", "show"))
                .unwrap()
                .unwrap()
                .can_link
        );
        assert!(
            db.visible_library(&carol, &key("alice", "nope"))
                .unwrap()
                .is_none()
        );
        // invite: unknown library or user.
        assert!(not_found(db.invite(&key("alice", "nope"), "bob")));
        assert!(not_found(db.invite(&key("alice", "pub"), "nobody")));
    });
}

/// Each step, a user's `act` on the library `owner/slug` (a link, an unlink), taken in order,
/// comes to what the step says.
fn in_order<T: PartialEq + std::fmt::Debug>(
    steps: &[(&User, &str, T)],
    act: impl Fn(&User, &LibraryKey) -> T,
) {
    for (user, address, want) in steps {
        let (owner, slug) = address.split_once('/').unwrap();
        assert_eq!(
            &act(user, &key(owner, slug)),
            want,
            "{}: {address}",
            user.name
        );
    }
}

#[test]
fn link_rules_and_slots() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, bob, carol) = catalogue(&db);
        let limits = Limits::default();
        let (dave, _) = db.add_user("dave", Plan::Pro).unwrap();
        db.upsert_library(&dave, "extra", &meta("", "", "", Visibility::Public))
            .unwrap();
        // Link, then unlink, with the default limits, in this order (`owner/slug`): what each
        // came to.
        use LinkOutcome as Link;
        use UnlinkOutcome as Unlink;
        let links = |steps: &[(&User, &str, Link)]| {
            in_order(steps, |user, key| db.link(user, key, &limits).unwrap());
        };
        let unlinks = |steps: &[(&User, &str, Unlink)]| {
            in_order(steps, |user, key| db.unlink(user, key, &limits).unwrap());
        };
        // The addresses a user has linked.
        let linked = |user: &User| -> Vec<String> {
            let links = db.linked(user).unwrap();
            links.iter().map(|l| l.key.address()).collect()
        };

        links(&[
            // Not visible, or not there at all: not found.
            (&carol, "alice/priv", Link::NotFound),
            (&carol, "alice/none", Link::NotFound),
            // Showcase without an invitation.
            (&carol, "alice/show", Link::InviteRequired),
            // Public: linked, one slot.
            (&carol, "alice/pub", Link::Linked { used: 1, limit: 1 }),
            // Twice: no extra slot.
            (
                &carol,
                "alice/pub",
                Link::AlreadyLinked { used: 1, limit: 1 },
            ),
            // Free plan: the second library does not fit.
            (
                &carol,
                "dave/extra",
                Link::SlotExhausted { used: 1, limit: 1 },
            ),
        ]);
        assert!(db.is_linked(&carol, &key("alice", "pub")).unwrap());
        assert!(!db.is_linked(&carol, &key("dave", "extra")).unwrap());
        assert_eq!(linked(&carol), ["cloud://alice/pub"]);
        assert_eq!(db.library(&key("alice", "pub")).unwrap().unwrap().links, 1);
        let seen = db
            .visible_library(&carol, &key("alice", "pub"))
            .unwrap()
            .unwrap();
        assert!(seen.is_linked);

        // Unlink only the named one; then the other fits.
        unlinks(&[
            (
                &carol,
                "dave/extra",
                Unlink::AlreadyUnlinked { used: 1, limit: 1 },
            ),
            (&carol, "alice/priv", Unlink::NotFound),
            (&carol, "alice/pub", Unlink::Unlinked { used: 0, limit: 1 }),
        ]);
        links(&[
            (&carol, "dave/extra", Link::Linked { used: 1, limit: 1 }),
            // The owner links their own showcase; an invited reader a private library.
            (&alice, "alice/show", Link::Linked { used: 1, limit: 1 }),
            (&bob, "alice/priv", Link::Linked { used: 1, limit: 1 }),
        ]);
        // The plan is read from the database: pro gives 99 slots.
        assert!(db.set_plan("bob", Plan::Pro).unwrap());
        links(&[(&bob, "alice/pub", Link::Linked { used: 2, limit: 99 })]);
        let custom = Limits {
            free_slots: 2,
            ..Limits::default()
        };
        assert_eq!(
            db.link(&carol, &key("alice", "pub"), &custom).unwrap(),
            LinkOutcome::Linked { used: 2, limit: 2 }
        );
        assert_eq!(db.slots_used(&carol).unwrap(), 2);

        // A library made private drops out of linked() for someone not invited, but still
        // counts as a slot until unlinked, and can be unlinked.
        db.upsert_library(&alice, "pub", &meta("", "", "", Visibility::Private))
            .unwrap();
        assert_eq!(linked(&carol), ["cloud://dave/extra"]);
        assert!(!db.is_linked(&carol, &key("alice", "pub")).unwrap());
        assert_eq!(
            db.unlink(&carol, &key("alice", "pub"), &custom).unwrap(),
            UnlinkOutcome::Unlinked { used: 1, limit: 2 }
        );

        // Deleting a library takes its links.
        assert!(db.delete_library(&dave, "extra").unwrap());
        assert_eq!(db.slots_used(&carol).unwrap(), 0);
    });
}

#[test]
fn racing_links_on_a_free_plan_link_exactly_one() {
    each(|spec| {
        let setup = Db::open(spec).unwrap();
        let (owner, _) = setup.add_user("owner", Plan::Pro).unwrap();
        let mut racers = Vec::new();
        for i in 0..6 {
            racers.push(setup.add_user(&format!("racer{i}"), Plan::Free).unwrap().0);
        }
        for slug in ["one", "two"] {
            setup
                .upsert_library(&owner, slug, &meta("", "", "", Visibility::Public))
                .unwrap();
        }
        let a = Db::open(spec).unwrap();
        let b = Db::open(spec).unwrap();
        for racer in racers {
            let barrier = Arc::new(Barrier::new(2));
            let handles: Vec<_> = [(a.clone(), "one"), (b.clone(), "two")]
                .into_iter()
                .map(|(db, slug)| {
                    let barrier = barrier.clone();
                    let racer = racer.clone();
                    std::thread::spawn(move || {
                        barrier.wait();
                        db.link(&racer, &key("owner", slug), &Limits::default())
                            .unwrap()
                    })
                })
                .collect();
            let outcomes: Vec<LinkOutcome> =
                handles.into_iter().map(|h| h.join().unwrap()).collect();
            let linked = outcomes
                .iter()
                .filter(|o| matches!(o, LinkOutcome::Linked { used: 1, limit: 1 }))
                .count();
            let refused = outcomes
                .iter()
                .filter(|o| matches!(o, LinkOutcome::SlotExhausted { used: 1, limit: 1 }))
                .count();
            assert_eq!((linked, refused), (1, 1), "{outcomes:?}");
            assert_eq!(setup.slots_used(&racer).unwrap(), 1);
        }
    });
}

#[test]
fn opening_twice_at_once_is_safe() {
    each(|spec| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let spec = spec.clone();
                std::thread::spawn(move || Db::open(&spec).map(|_| ()))
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
        let db = Db::open(spec).unwrap();
        assert_eq!(db.spec(), spec);
        assert!(db.users().unwrap().is_empty());
    });
}

/// The live documents of a library as its searches read them: (number, path, hash of the
/// text), in path order.
fn live(db: &Db, library: &LibraryKey) -> Vec<(i64, String, String)> {
    let Some(state) = db.library_state(library).unwrap() else {
        return Vec::new();
    };
    let rows = db.light_rows(&state).unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r.doc_id).collect();
    let bodies = db.bodies(&state, &ids).unwrap();
    rows.into_iter()
        .zip(bodies)
        .map(|(r, b)| (r.doc_id, r.path, b.unwrap()))
        .collect()
}

#[test]
fn documents_upsert_remove_and_keep_their_numbers() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, _) = db.add_user("alice", Plan::Free).unwrap();
        let lib = db
            .upsert_library(&alice, "docs", &LibraryMeta::default())
            .unwrap();
        let k = key("alice", "docs");
        assert!(db.manifest(lib.id).unwrap().is_empty());
        assert!(not_found(publish(
            &db,
            lib.id + 1000,
            &[doc("r/a.md", "h")],
            &[]
        )));

        std::thread::sleep(Duration::from_millis(3));
        publish(
            &db,
            lib.id,
            &[
                doc("r/a.md", "h1"),
                doc("r/b.md", "h1"),
                doc("r/c.md", "h1"),
            ],
            &[],
        )
        .unwrap();
        let after = db.library_by_id(lib.id).unwrap().unwrap();
        assert_eq!((after.doc_count, after.content_seq), (3, 3));
        assert!(after.updated_at > lib.updated_at);
        assert_eq!(
            db.manifest(lib.id)
                .unwrap()
                .iter()
                .map(|m| (m.path.as_str(), m.hash.as_str()))
                .collect::<Vec<_>>(),
            [("r/a.md", "h1"), ("r/b.md", "h1"), ("r/c.md", "h1")]
        );
        let first = live(&db, &k);
        assert_eq!(
            first
                .iter()
                .map(|(n, p, _)| (*n, p.as_str()))
                .collect::<Vec<_>>(),
            [(1, "r/a.md"), (2, "r/b.md"), (3, "r/c.md")]
        );
        assert_eq!(first[0].2, "text of r/a.md at h1");
        let state = db.library_state(&k).unwrap().unwrap();
        assert_eq!(state.roots, ["r"]);
        let rows = db.doc_rows(&state, &[3, 1, 99]).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.doc_id).collect::<Vec<_>>(),
            [1, 3],
            "in number order, unknown numbers left out"
        );
        assert_eq!(rows[0].title.as_deref(), Some("Title of r/a.md"));
        assert_eq!((rows[0].word_count, rows[0].total_lines), (5, 1));

        // An update keeps the number; a removal takes it out of the next version.
        let done = publish(&db, lib.id, &[doc("r/a.md", "h2")], &["r/b.md", "r/zzz.md"]).unwrap();
        assert_eq!((done.stored, done.removed), (1, 1));
        assert_eq!(publish(&db, lib.id, &[], &["r/b.md"]).unwrap().removed, 0);
        let info = db.library_by_id(lib.id).unwrap().unwrap();
        assert_eq!((info.doc_count, info.content_seq), (2, 5));
        assert_eq!(
            live(&db, &k),
            [
                (1, "r/a.md".to_string(), "text of r/a.md at h2".to_string()),
                (3, "r/c.md".to_string(), "text of r/c.md at h1".to_string())
            ]
        );
        // A reader of the version before still sees it whole.
        let older = db.light_rows(&state).unwrap();
        assert_eq!(older.len(), 3);
        assert_eq!(db.manifest(lib.id).unwrap().len(), 2);

        // Coming back at the same path: a new number (the old one left with the document).
        publish(&db, lib.id, &[doc("r/b.md", "h3")], &[]).unwrap();
        let back = live(&db, &k);
        assert_eq!(back.len(), 3);
        assert_eq!((back[1].0, back[1].1.as_str()), (4, "r/b.md"));
        assert_eq!(db.library_by_id(lib.id).unwrap().unwrap().doc_count, 3);
        // A title-less document and an empty batch.
        let mut untitled = doc("r/d.md", "h1");
        untitled.title = None;
        publish(&db, lib.id, &[untitled.clone()], &[]).unwrap();
        publish(&db, lib.id, &[], &[]).unwrap();
        let state = db.library_state(&k).unwrap().unwrap();
        let d = db.doc_row_by_path(&state, "r/d.md").unwrap().unwrap();
        assert_eq!((d.doc_id, d.title), (5, None));

        // Deleting the library drops its documents.
        assert!(db.delete_library(&alice, "docs").unwrap());
        assert!(live(&db, &k).is_empty());
        assert!(db.light_rows(&state).unwrap().is_empty());
    });
}

#[test]
fn a_document_sent_twice_in_a_publish_keeps_its_last_version() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, _) = db.add_user("alice", Plan::Free).unwrap();
        let lib = db
            .upsert_library(&alice, "docs", &LibraryMeta::default())
            .unwrap();
        let id = db.begin_publish(lib.id, &[]).unwrap();
        db.stage_documents(lib.id, id, &[doc("r/a.md", "h1"), doc("r/b.md", "h1")])
            .unwrap();
        db.stage_documents(lib.id, id, &[doc("r/a.md", "h2"), doc("r/a.md", "h3")])
            .unwrap();
        assert!(
            live(&db, &key("alice", "docs")).is_empty(),
            "not yet committed"
        );
        let done = db.commit_publish(lib.id, id).unwrap();
        assert_eq!(done.stored, 2);
        let docs = live(&db, &key("alice", "docs"));
        assert_eq!(
            docs.iter()
                .map(|(n, p, t)| (*n, p.as_str(), t.as_str()))
                .collect::<Vec<_>>(),
            [
                (1, "r/a.md", "text of r/a.md at h3"),
                (2, "r/b.md", "text of r/b.md at h1")
            ]
        );
    });
}

/// A document of `n` bytes of text and nothing else: it counts `n` + its path + 2 (the outline,
/// `[]`) against the daily quota.
fn sized(path: &str, n: usize) -> PublishedDoc {
    PublishedDoc {
        title: None,
        outline: serde_json::Value::Null,
        text: "x".repeat(n),
        ..doc(path, &format!("h{n}"))
    }
}

/// Whether `result` is a refusal over a per-user limit.
fn over_limit<T>(result: Result<T, GatewayError>) -> bool {
    matches!(result, Err(GatewayError::Limit(_)))
}

#[test]
fn publishes_past_the_daily_quota_are_refused_and_leave_nothing() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, _) = db.add_user("alice", Plan::Free).unwrap();
        let (bob, _) = db.add_user("bob", Plan::Free).unwrap();
        let lib = |user: &User, slug: &str| {
            db.upsert_library(user, slug, &LibraryMeta::default())
                .unwrap()
                .id
        };
        let (a1, a2, b1) = (lib(&alice, "a1"), lib(&alice, "a2"), lib(&bob, "b1"));
        let quota = Some(1000);
        // Two publishes of Alice's, each within the quota while staged.
        let p1 = db.begin_publish(a1, &[]).unwrap();
        db.stage_documents_within(a1, p1, &[sized("r/one.md", 400)], quota)
            .unwrap();
        let p2 = db.begin_publish(a2, &[]).unwrap();
        db.stage_documents_within(a2, p2, &[sized("r/two.md", 400)], quota)
            .unwrap();
        db.stage_documents_within(a2, p2, &[sized("r/three.md", 200)], quota)
            .unwrap();
        db.commit_publish_within(a1, p1, quota).unwrap();
        assert_eq!(db.published_today(alice.id).unwrap(), 400 + 8 + 2);
        // The second would take her day past it: refused at its commit, and discarded.
        assert!(over_limit(db.commit_publish_within(a2, p2, quota)));
        assert!(matches!(
            db.commit_publish_within(a2, p2, quota),
            Err(GatewayError::Conflict(_))
        ));
        assert!(live(&db, &key("alice", "a2")).is_empty());
        let a2_rows = format!("SELECT COUNT(*) FROM documents WHERE library_id = {a2}");
        assert_eq!(common::count(spec, &a2_rows), 0, "nothing staged is kept");
        assert_eq!(db.published_today(alice.id).unwrap(), 410);
        // A batch past it is refused before anything is written, and its publish discarded.
        let p3 = db.begin_publish(a2, &[]).unwrap();
        db.stage_documents_within(a2, p3, &[sized("r/small.md", 10)], quota)
            .unwrap();
        let refused = db.stage_documents_within(a2, p3, &[sized("r/big.md", 600)], quota);
        let message = refused.as_ref().err().map(ToString::to_string);
        assert!(over_limit(refused), "{message:?}");
        let message = message.unwrap_or_default();
        assert!(message.contains("1000 B per day"), "{message}");
        assert!(message.contains("410 B"), "{message}");
        assert!(message.contains("resets at 00:00 UTC"), "{message}");
        assert!(matches!(
            db.stage_documents_within(a2, p3, &[sized("r/small.md", 10)], quota),
            Err(GatewayError::Conflict(_))
        ));
        assert_eq!(common::count(spec, &a2_rows), 0, "nothing staged is kept");
        // Bob has his own day; no quota, no refusal.
        let p4 = db.begin_publish(b1, &[]).unwrap();
        db.stage_documents_within(b1, p4, &[sized("r/bob.md", 900)], quota)
            .unwrap();
        db.commit_publish_within(b1, p4, quota).unwrap();
        assert_eq!(live(&db, &key("bob", "b1")).len(), 1);
        assert!(publish(&db, a2, &[sized("r/big.md", 5000)], &[]).is_ok());
        assert_eq!(db.published_today(alice.id).unwrap(), 410 + 5000 + 8 + 2);
        // Removing a user removes their count.
        assert!(db.remove_user("bob").unwrap());
        let usage = format!(
            "SELECT COUNT(*) FROM publish_usage WHERE user_id = {}",
            bob.id
        );
        assert_eq!(common::count(spec, &usage), 0);
    });
}

#[test]
#[allow(clippy::print_stderr)] // the timings, for whoever runs it with --nocapture
fn search_over_ten_thousand_libraries_is_fast() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (viewer, _) = db.add_user("viewer", Plan::Free).unwrap();
        let owners: Vec<User> = (0..20)
            .map(|i| db.add_user(&format!("owner{i}"), Plan::Pro).unwrap().0)
            .collect();
        let visibilities = [
            Visibility::Public,
            Visibility::Showcase,
            Visibility::Private,
        ];
        let started = Instant::now();
        if let DbSpec::Postgres(url) = spec {
            // One statement: ten thousand commits would measure the disk, not the search.
            let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
            c.batch_execute(
                "INSERT INTO libraries (owner_id, slug, title, description, category, visibility, \
                 created_at, updated_at) \
                 SELECT (SELECT id FROM users WHERE name = 'owner' || (i % 20)), 'lib' || i, \
                 'Library ' || i, 'About topic ' || (i % 97) || ' and more', \
                 (ARRAY['ai-ml','programming','design','science','business','lifestyle',\
                 'education','other'])[i % 8 + 1], \
                 (ARRAY['public','showcase','private'])[i % 3 + 1], 1700000000000 + i, \
                 1700000000000 + i FROM generate_series(0, 9999) AS i",
            )
            .unwrap();
        }
        let stored_one_by_one = if matches!(spec, DbSpec::Postgres(_)) {
            0
        } else {
            10_000
        };
        for i in 0..stored_one_by_one {
            let m = meta(
                &format!("Library {i}"),
                &format!("About topic {} and more", i % 97),
                linkly_gateway::model::CATEGORIES[i % 8],
                visibilities[i % 3],
            );
            db.upsert_library(&owners[i % 20], &format!("lib{i}"), &m)
                .unwrap();
        }
        eprintln!("10,000 libraries stored in {:?}", started.elapsed());
        assert_eq!(db.library_count().unwrap(), 10_000);
        std::thread::sleep(Duration::from_millis(3));
        db.upsert_library(
            &owners[9999 % 20],
            "lib9999",
            &meta("Library 9999 (new)", "", "", Visibility::Public),
        )
        .unwrap();
        let queries = [
            q(None),
            q(Some("topic 42")),
            CatalogQuery {
                category: Some("science".into()),
                offset: 500,
                ..q(Some("library"))
            },
            CatalogQuery {
                owner: Some("owner7".into()),
                ..q(None)
            },
        ];
        for query in &queries {
            let started = Instant::now();
            let page = db.search_libraries(&viewer, query).unwrap();
            let took = started.elapsed();
            eprintln!(
                "{query:?}: {} of {} in {took:?}",
                page.entries.len(),
                page.total
            );
            assert!(took < Duration::from_millis(500), "{query:?} took {took:?}");
        }
        let all = db.search_libraries(&viewer, &q(None)).unwrap();
        assert_eq!(all.total, 10_000 - 10_000 / 3);
        assert_eq!(all.entries.len(), 50);
        assert_eq!(all.entries[0].library.key.slug, "lib9999");
    });
}

#[test]
fn racing_creates_of_one_library_both_succeed_and_one_creates() {
    each(|spec| {
        let setup = Db::open(spec).unwrap();
        let (owner, _) = setup.add_user("owner", Plan::Pro).unwrap();
        // Two handles: two pools of connections, as two gateway processes have.
        let a = Db::open(spec).unwrap();
        let b = Db::open(spec).unwrap();
        for round in 0..12 {
            let slug = format!("race-{round}");
            let barrier = Arc::new(Barrier::new(2));
            let handles: Vec<_> = [(a.clone(), "from a"), (b.clone(), "from b")]
                .into_iter()
                .map(|(db, title)| {
                    let (barrier, owner, slug) = (barrier.clone(), owner.clone(), slug.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        db.put_library(&owner, &slug, &meta(title, "", "", Visibility::Public))
                    })
                })
                .collect();
            let outcomes: Vec<_> = handles
                .into_iter()
                .map(|h| h.join().unwrap().expect("both creates succeed"))
                .collect();
            let created = outcomes.iter().filter(|(_, created)| *created).count();
            assert_eq!(created, 1, "{outcomes:?}");
            assert_eq!(outcomes[0].0.id, outcomes[1].0.id);
            let stored = setup.library(&key("owner", &slug)).unwrap().unwrap();
            assert!(["from a", "from b"].contains(&stored.title.as_str()));
        }
    });
}

#[test]
fn administration_rotates_tokens_withdraws_invitations_and_lists_every_library() {
    each(|spec| {
        let db = Db::open(spec).unwrap();
        let (alice, old) = db.add_user("alice", Plan::Free).unwrap();
        let (bob, _) = db.add_user("bob", Plan::Free).unwrap();

        // A rotated token replaces the old one at once.
        let new = db.rotate_token("alice").unwrap().unwrap();
        assert_ne!(new, old);
        assert!(new.starts_with("lk_"), "{new}");
        assert_eq!(db.user_by_token(&old).unwrap(), None);
        assert_eq!(db.user_by_token(&new).unwrap().unwrap().id, alice.id);
        assert_eq!(db.rotate_token("nobody").unwrap(), None);

        // A withdrawn invitation takes the link to a private library with it.
        db.upsert_library(&alice, "diary", &meta("", "", "", Visibility::Private))
            .unwrap();
        db.upsert_library(&alice, "open", &meta("", "", "", Visibility::Public))
            .unwrap();
        for slug in ["diary", "open"] {
            db.invite(&key("alice", slug), "bob").unwrap();
            assert!(matches!(
                db.link(
                    &bob,
                    &key("alice", slug),
                    &Limits {
                        free_slots: 5,
                        ..Limits::default()
                    }
                )
                .unwrap(),
                LinkOutcome::Linked { .. }
            ));
        }
        assert!(db.is_linked(&bob, &key("alice", "diary")).unwrap());
        assert!(db.uninvite(&key("alice", "diary"), "bob").unwrap());
        assert!(!db.uninvite(&key("alice", "diary"), "bob").unwrap());
        assert!(!db.is_linked(&bob, &key("alice", "diary")).unwrap());
        assert!(
            db.visible_library(&bob, &key("alice", "diary"))
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            db.link(&bob, &key("alice", "diary"), &Limits::default())
                .unwrap(),
            LinkOutcome::InviteRequired | LinkOutcome::NotFound
        ));
        // A public library stays linked.
        assert!(db.uninvite(&key("alice", "open"), "bob").unwrap());
        assert!(db.is_linked(&bob, &key("alice", "open")).unwrap());
        assert!(not_found(db.uninvite(&key("alice", "nope"), "bob")));
        assert!(not_found(db.uninvite(&key("alice", "open"), "nobody")));

        // An administrator sees every library, private ones included, and removes one.
        db.upsert_library(&bob, "maps", &meta("", "", "", Visibility::Showcase))
            .unwrap();
        let all: Vec<String> = db
            .all_libraries()
            .unwrap()
            .iter()
            .map(|l| l.key.address())
            .collect();
        assert_eq!(
            all,
            [
                "cloud://alice/diary",
                "cloud://alice/open",
                "cloud://bob/maps"
            ]
        );
        assert!(db.remove_library(&key("alice", "open")).unwrap());
        assert!(!db.remove_library(&key("alice", "open")).unwrap());
        assert!(!db.remove_library(&key("nobody", "open")).unwrap());
        assert!(!db.is_linked(&bob, &key("alice", "open")).unwrap());
        assert_eq!(db.all_libraries().unwrap().len(), 2);
    });
}
