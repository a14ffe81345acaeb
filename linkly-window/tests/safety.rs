//! The window's safety checks and its state changes, over HTTP against the router (the same
//! router `linkly serve` mounts at `/`): CSRF refused (no token, wrong Origin: 403, nothing
//! changed), hostile names escaped, the LAN sign-in, the headers (CSP), no path to the disk,
//! a note's conflict, delete and restore, a folder that does not exist.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use linkly_core::{Config, DataDir, Library};
use linkly_http::{Access, Gate, GateOptions};
use linkly_tools::Linkly;
use linkly_window::{CSP, Live, WindowOptions, router};
use tower::ServiceExt;

const HOST: &str = "127.0.0.1:60606";
const ORIGIN: &str = "http://127.0.0.1:60606";
const HOSTILE: &str = "<img src=x onerror=alert(1)>.md";
/// The server's per-start local secret: the person's requests carry it (as `linkly open`'s
/// sign-in or the bridge's bearer token would).
const SECRET: &str = "the-local-secret-of-this-start";

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    linkly: Arc<Linkly>,
    app: Router,
    /// Every route the window declares, with its class.
    table: Vec<linkly_http::RouteClass>,
}

fn fixture_with(lan_token: Option<&str>) -> Fixture {
    build(lan_token, false)
}

/// A server started for this computer whose LAN access the person switches while it runs (as
/// `linkly serve` is): on, with `lan_token`, at the start.
fn fixture_switched(lan_token: &str) -> Fixture {
    build(Some(lan_token), true)
}

fn build(lan_token: Option<&str>, switched: bool) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    fs_err::create_dir_all(&docs).unwrap();
    fs_err::write(
        docs.join("plan.md"),
        "# Plan\n\nThe budget for 2024 is set.\n\n## Risks\n\nThe budget may slip.\n",
    )
    .unwrap();
    fs_err::write(
        docs.join(HOSTILE),
        "# <script>alert(2)</script>\n\nzebra <b>crossing</b> & more\n",
    )
    .unwrap();
    let long: String = (1..=1200).map(|i| format!("line number {i}\n")).collect();
    fs_err::write(docs.join("long.txt"), long).unwrap();
    let data = DataDir::new(tmp.path().join("home"));
    data.ensure().unwrap();
    let mut config = Config::default();
    config.add_folder(&docs).unwrap();
    if lan_token.is_some() {
        // The person shares one library (the documents) with LAN visitors.
        config.libraries.push(Library {
            name: "team".into(),
            id: 1,
            folders: vec![fs_err::canonicalize(&docs).unwrap()],
            ..Library::default()
        });
        config.lan_shared_libraries = vec!["team".into()];
        config.lan_token = lan_token.map(str::to_string);
        config.lan_enabled = true;
    }
    config.save(&data).unwrap();
    let linkly = Arc::new(Linkly::open(data).unwrap());
    linkly.index_now(&mut |_| {}).unwrap();
    let bind = if lan_token.is_some() && !switched {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    let lan_of = linkly.clone();
    let access = if switched {
        Access::switched(
            bind,
            Arc::new(move || lan_of.config().lan_access().map(str::to_string)),
        )
    } else {
        Access::new(bind, lan_token.map(str::to_string))
    };
    let shared_of = linkly.clone();
    let address_of = linkly.clone();
    let gate = Gate::new(GateOptions {
        access,
        local_secret: Some(SECRET.into()),
        agent_token: None,
        lan_shared: Arc::new(move || shared_of.config().lan_shared_libraries.clone()),
    });
    let routes = router(
        linkly.clone(),
        Arc::new(Live::default()),
        WindowOptions {
            endpoint: "http://127.0.0.1:60606/mcp".into(),
            bind,
            lan_address: Arc::new(move || {
                address_of
                    .config()
                    .lan_access()
                    .map(|_| "192.168.1.10:60606".parse().unwrap())
            }),
            agent_token: None,
            gate: gate.clone(),
        },
    );
    let table = routes.table().to_vec();
    let app = gate.wrap(routes);
    Fixture {
        root: tmp.path().to_path_buf(),
        _tmp: tmp,
        linkly,
        app,
        table,
    }
}

fn fixture() -> Fixture {
    fixture_with(None)
}

async fn send(app: &Router, mut req: Request<Body>) -> (StatusCode, Response<Body>, String) {
    // The person's requests come from this computer; anyone else's from the network (no peer
    // address: never a local one).
    let person = format!("Bearer {SECRET}");
    if req
        .headers()
        .get(header::AUTHORIZATION)
        .is_some_and(|a| a == person.as_str())
    {
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(std::net::SocketAddr::from((
                [127, 0, 0, 1],
                50_000,
            ))));
    }
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let (parts, body) = res.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    (status, Response::from_parts(parts, Body::empty()), text)
}

/// A GET of the person's (with the local secret).
fn get(path: &str, cookie: Option<&str>) -> Request<Body> {
    get_as(path, cookie, true)
}

/// A GET of someone without the local secret (a visitor, or anyone).
fn anon(path: &str, cookie: Option<&str>) -> Request<Body> {
    get_as(path, cookie, false)
}

fn get_as(path: &str, cookie: Option<&str>, person: bool) -> Request<Body> {
    let mut b = Request::get(path).header(header::HOST, HOST);
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    if person {
        b = b.header(header::AUTHORIZATION, format!("Bearer {SECRET}"));
    }
    b.body(Body::empty()).unwrap()
}

/// A form POST of the person's.
fn post(path: &str, cookie: &str, origin: Option<&str>, form: &str) -> Request<Body> {
    post_as(path, cookie, origin, form, true)
}

fn post_as(
    path: &str,
    cookie: &str,
    origin: Option<&str>,
    form: &str,
    person: bool,
) -> Request<Body> {
    let mut b = Request::post(path)
        .header(header::HOST, HOST)
        .header(header::COOKIE, cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(o) = origin {
        b = b.header(header::ORIGIN, o);
    }
    if person {
        b = b.header(header::AUTHORIZATION, format!("Bearer {SECRET}"));
    }
    b.body(Body::from(form.to_string())).unwrap()
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A visitor's session: its cookie and the CSRF token its pages carry.
struct Session {
    cookie: String,
    csrf: String,
    /// Whether its requests carry the local secret (the person's).
    person: bool,
}

/// A session from a first page.
async fn session(app: &Router) -> Session {
    let (status, res, body) = send(app, get("/", None)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let cookie = res
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|v| v.starts_with("linkly_sid="))
        .expect("a session cookie");
    Session {
        cookie: cookie_pair(cookie),
        csrf: csrf_of(&body),
        person: true,
    }
}

/// The `name=value` of a `Set-Cookie` header.
fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_string()
}

/// The CSRF token a page carries in its `csrf-token` meta element.
fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf-token\" content=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string()
}

/// The id of the first document a page links to.
fn first_doc_id(page: &str) -> String {
    page.split("href=\"/doc/")
        .nth(1)
        .unwrap()
        .split(['?', '"'])
        .next()
        .unwrap()
        .to_string()
}

/// Where a redirect points.
fn location(res: &Response<Body>) -> String {
    res.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string()
}

/// A form posted as the window posts it: same origin, with the session's cookie and its CSRF
/// token added to `fields`.
async fn submit(
    app: &Router,
    session: &Session,
    path: &str,
    fields: &str,
) -> (StatusCode, Response<Body>, String) {
    let form = format!("{fields}&_csrf={}", session.csrf);
    send(
        app,
        post_as(path, &session.cookie, Some(ORIGIN), &form, session.person),
    )
    .await
}

fn notes_on_disk(f: &Fixture) -> usize {
    let dir = f.linkly.notes_dir();
    fs_err::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn every_answer_has_the_security_headers() {
    let f = fixture();
    for path in [
        "/",
        "/search?q=budget",
        "/notes",
        "/libraries",
        "/agents",
        "/nowhere",
    ] {
        let (_, res, _) = send(&f.app, get(path, None)).await;
        let h = res.headers();
        assert_eq!(h[header::CONTENT_SECURITY_POLICY], CSP, "{path}");
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(h[header::REFERRER_POLICY], "same-origin");
    }
    let (_, _, body) = send(&f.app, get("/", None)).await;
    // No inline script or style: the CSP would block them.
    assert!(!body.contains("<script>"), "inline script");
    assert!(!body.contains("style="), "inline style");
    assert!(!body.contains("<style"), "inline style element");
}

#[tokio::test]
async fn a_foreign_host_is_refused() {
    let f = fixture();
    let req = Request::get("/")
        .header(header::HOST, "evil.example:60606")
        .body(Body::empty())
        .unwrap();
    let (status, _, _) = send(&f.app, req).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn csrf_refused_without_token_or_with_a_foreign_origin() {
    let f = fixture();
    let s = session(&f.app).await;
    let before = notes_on_disk(&f);
    let with_token = format!("mode=create&content=hello&_csrf={}", s.csrf);
    let refused = [
        (
            "no token",
            "/notes/save",
            Some(ORIGIN),
            "mode=create&content=hello".to_string(),
        ),
        (
            "a wrong token",
            "/notes/save",
            Some(ORIGIN),
            "mode=create&content=hello&_csrf=0123456789abcdef0123456789abcdef01234567".to_string(),
        ),
        (
            "the right token from another site",
            "/notes/save",
            Some("http://evil.example"),
            with_token.clone(),
        ),
        ("no Origin at all", "/notes/save", None, with_token),
        (
            "a folder change from another site",
            "/folders/add",
            Some("http://evil.example"),
            format!("path=%2Ftmp&_csrf={}", s.csrf),
        ),
    ];
    for (case, path, origin, form) in refused {
        let (status, _, _) = send(&f.app, post(path, &s.cookie, origin, &form)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{case}");
    }
    // Nothing changed.
    assert_eq!(notes_on_disk(&f), before);
    assert_eq!(f.linkly.config().folders.len(), 1);
    // With both, it goes through.
    let (status, res, _) = submit(&f.app, &s, "/notes/save", "mode=create&content=hello").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(location(&res).starts_with("/notes/edit/"));
    assert_eq!(notes_on_disk(&f), before + 1);
}

#[tokio::test]
async fn hostile_names_and_texts_are_escaped() {
    let f = fixture();
    let (status, _, body) = send(&f.app, get("/search?q=zebra+crossing", None)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("&lt;img src=x onerror=alert(1)&gt;.md"),
        "{body}"
    );
    assert!(!body.contains("<img src=x"), "raw name in the page");
    assert!(!body.contains("<b>crossing"), "raw snippet in the page");
    assert!(!body.contains("<script>alert"), "raw title in the page");
    // Its document page too.
    let id = first_doc_id(&body);
    let (status, _, body) = send(&f.app, get(&format!("/doc/{id}"), None)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!body.contains("<img src=x"));
    assert!(!body.contains("<script>alert"));
    assert!(body.contains("&lt;b&gt;crossing&lt;/b&gt;"));
    // The overview's folder list and the search box echo are escaped as well.
    let (_, _, body) = send(&f.app, get("/search?q=%3Cscript%3Ex", None)).await;
    assert!(!body.contains("<script>x"));
}

#[tokio::test]
async fn lan_visitors_sign_in_with_the_token() {
    let f = fixture_with(Some("s3cret-token"));
    // Not signed in: every page sends to the sign-in, every change is refused.
    let (status, res, _) = send(&f.app, anon("/search?q=budget", None)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[header::LOCATION], "/signin");
    let (status, res, body) = send(&f.app, anon("/signin", None)).await;
    assert_eq!(status, StatusCode::OK);
    let s = Session {
        cookie: cookie_pair(res.headers()[header::SET_COOKIE].to_str().unwrap()),
        csrf: csrf_of(&body),
        person: false,
    };
    let (status, _, _) = submit(&f.app, &s, "/notes/save", "mode=create&content=x").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A wrong token.
    let (status, res, _) = submit(&f.app, &s, "/signin", "token=nope").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(res.headers().get(header::SET_COOKIE).is_none());
    // The right one sets an HttpOnly, SameSite=Strict cookie.
    let (status, res, _) = submit(&f.app, &s, "/signin", "token=s3cret-token").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let auth = res.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_string();
    assert!(auth.starts_with("linkly_auth="));
    assert!(auth.contains("HttpOnly") && auth.contains("SameSite=Strict"));
    let both = format!("{}; {}", s.cookie, cookie_pair(&auth));
    let (status, _, body) = send(&f.app, anon("/search?q=budget", Some(&both))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("data-testid=\"result\""));
    // The proof belongs to its session: with another session id it is refused.
    let stolen = format!(
        "linkly_sid=0123456789abcdef0123456789abcdef; {}",
        cookie_pair(&auth)
    );
    let (status, _, _) = send(&f.app, anon("/", Some(&stolen))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn nothing_outside_the_index_is_served() {
    let f = fixture();
    for path in [
        "/doc/..%2F..%2Fetc%2Fpasswd/file",
        "/doc/%2Fetc%2Fpasswd/file",
        "/doc/999999/file",
        "/assets/..%2F..%2FCargo.toml",
        "/assets/app.css",
        "/etc/passwd",
        "/../Cargo.toml",
    ] {
        let (status, _, body) = send(&f.app, get(path, None)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(!body.contains("root:"), "{path}");
    }
    // A document's file, by its id.
    let (_, _, body) = send(&f.app, get("/search?q=budget", None)).await;
    let id = first_doc_id(&body);
    let req = get(&format!("/doc/{id}/file"), None);
    let res = f.app.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()[header::CONTENT_TYPE],
        "application/octet-stream"
    );
    assert!(
        res.headers()[header::CONTENT_DISPOSITION]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&bytes).contains("The budget for 2024"));
}

#[tokio::test]
async fn a_document_lands_on_its_lines_and_finds() {
    let f = fixture();
    let (_, _, body) = send(&f.app, get("/search?q=%22line+number+777%22", None)).await;
    let id = first_doc_id(&body);
    // A page of 500 lines holding line 777, never the whole document.
    let (status, _, body) = send(&f.app, get(&format!("/doc/{id}?line=777"), None)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("id=\"L777\""));
    assert!(body.contains("id=\"L501\"") && body.contains("id=\"L1000\""));
    assert!(!body.contains("id=\"L500\"") && !body.contains("id=\"L1001\""));
    // Find: count, the current match's page, next and previous.
    let (status, _, body) = send(&f.app, get(&format!("/doc/{id}?find=number+11&m=3"), None)).await;
    assert_eq!(status, StatusCode::OK);
    // "number 11" matches 11, 110–119 and 1100–1199: 111 lines.
    assert!(body.contains("data-total=\"111\""), "{body}");
    assert!(body.contains("id=\"find-next\"") && body.contains("id=\"find-prev\""));
    assert!(
        body.contains("class=\"line hit cur\" id=\"L112\""),
        "the 4th match is line 112"
    );
    // A bad regex: the tool's message next to the box.
    let (status, _, body) = send(&f.app, get(&format!("/doc/{id}?find=%28&re=1"), None)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("id=\"find-error\""));
}

#[tokio::test]
async fn a_refused_query_shows_the_tools_message() {
    let f = fixture();
    let (status, _, body) = send(&f.app, get("/search?q=budget&after=yesterday", None)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("id=\"search-error\""));
    assert!(body.contains("modified_after"), "{body}");
}

#[tokio::test]
async fn a_lost_race_shows_both_texts_and_delete_goes_to_the_trash() {
    let f = fixture();
    let s = session(&f.app).await;
    let (_, res, _) = submit(
        &f.app,
        &s,
        "/notes/save",
        "mode=create&content=Shopping%0A%0Abread",
    )
    .await;
    let note_id = location(&res)
        .trim_start_matches("/notes/edit/")
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let base = f.linkly.note(&note_id).unwrap().version;
    // Two tabs edit from the same base.
    let edit = |content: &str| {
        format!("mode=edit&note_id={note_id}&base_version={base}&content={content}")
    };
    // Tab 1 saves first.
    let tea = edit("Shopping%0A%0Abread+and+tea");
    let (status, _, _) = submit(&f.app, &s, "/notes/save", &tea).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    // Tab 2, from the same base, loses: both texts are shown, nothing is written.
    let jam = edit("Shopping%0A%0Abread+and+jam");
    let (status, _, body) = submit(&f.app, &s, "/notes/save", &jam).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body.contains("id=\"conflict\""));
    assert!(body.contains("bread and tea") && body.contains("bread and jam"));
    let now = f.linkly.note(&note_id).unwrap();
    assert!(now.body.contains("bread and tea"));
    // Delete (into the trash), then undo.
    let (status, res, _) = submit(
        &f.app,
        &s,
        "/notes/delete",
        &format!("note_id={note_id}&base_version={}", now.version),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(f.linkly.note(&note_id).is_err());
    let (_, _, body) = send(&f.app, get(&location(&res), Some(&s.cookie))).await;
    assert!(body.contains("id=\"note-undo\""));
    let name = f.linkly.trashed_notes().unwrap()[0].name.clone();
    let (status, _, _) = submit(
        &f.app,
        &s,
        "/notes/restore",
        &format!("name={}", enc(&name)),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(
        f.linkly
            .note(&note_id)
            .unwrap()
            .body
            .contains("bread and tea")
    );
}

/// Adds a folder to watch from the overview's form.
async fn add_folder(
    app: &Router,
    session: &Session,
    dir: &std::path::Path,
) -> (StatusCode, Response<Body>, String) {
    let form = format!("path={}", enc(&dir.to_string_lossy()));
    submit(app, session, "/folders/add", &form).await
}

#[tokio::test]
async fn a_folder_that_does_not_exist_is_refused_with_a_message() {
    let f = fixture();
    let s = session(&f.app).await;
    let missing = f.root.join("no-such-folder");
    let (status, _, body) = add_folder(&f.app, &s, &missing).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("id=\"folder-error\""));
    assert_eq!(f.linkly.config().folders.len(), 1);
    // A real one is added and indexed.
    let more = f.root.join("more");
    fs_err::create_dir_all(&more).unwrap();
    fs_err::write(more.join("quokka.md"), "the quokka smiles\n").unwrap();
    let (status, _, _) = add_folder(&f.app, &s, &more).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(f.linkly.config().folders.len(), 2);
    let mut found = false;
    for _ in 0..100 {
        let (_, _, body) = send(&f.app, get("/search?q=quokka", None)).await;
        if body.contains("data-testid=\"result\"") {
            found = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(found, "the new folder's document is searchable");
}

#[tokio::test]
async fn every_language_renders_and_the_switch_is_remembered() {
    let f = fixture();
    let mut req = get("/", None);
    req.headers_mut()
        .insert(header::ACCEPT_LANGUAGE, "ja,en;q=0.5".parse().unwrap());
    let (_, _, body) = send(&f.app, req).await;
    assert!(body.contains("lang=\"ja\"") && body.contains("概要"));
    let s = session(&f.app).await;
    let (status, res, _) = submit(&f.app, &s, "/lang", "lang=fr&back=%2Fnotes").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[header::LOCATION], "/notes");
    let set = res.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(set.starts_with("linkly_lang=fr"));
    let (_, _, body) = send(
        &f.app,
        get("/", Some(&format!("{}; linkly_lang=fr", s.cookie))),
    )
    .await;
    assert!(body.contains("lang=\"fr\"") && body.contains("Vue d’ensemble"));
    // An off-site `back` is not followed.
    let (_, res, _) = submit(&f.app, &s, "/lang", "lang=es&back=%2F%2Fevil.example").await;
    assert_eq!(res.headers()[header::LOCATION], "/");
}

#[tokio::test]
async fn libraries_are_created_edited_and_deleted_from_their_page() {
    let f = fixture();
    let s = session(&f.app).await;
    let docs = enc(&f.root.join("docs").to_string_lossy());
    // Created over the watched folder.
    let create = format!("name=Work&description=Plans&folders={docs}&tags=");
    let (status, res, _) = submit(&f.app, &s, "/libraries/create", &create).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/libraries");
    let config = f.linkly.config();
    assert_eq!(config.libraries.len(), 1);
    assert_eq!(config.libraries[0].name, "Work");
    assert_eq!(config.libraries[0].folders.len(), 1);
    let id = enc(&format!("local://{}", config.libraries[0].id));
    // The same name again is refused on the page with its message, and nothing changes.
    let again = format!("name=work&folders={docs}");
    let (status, _, body) = submit(&f.app, &s, "/libraries/create", &again).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("id=\"library-error\""), "{body}");
    assert_eq!(f.linkly.config().libraries.len(), 1);
    // Edited: a new name, its folder removed, a note tag instead.
    let edit = format!("id={id}&name=Office&description=Plans&folders=&tags=work");
    let (status, res, _) = submit(&f.app, &s, "/libraries/edit", &edit).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/libraries");
    let library = f.linkly.config().libraries[0].clone();
    assert_eq!(library.name, "Office");
    assert!(library.folders.is_empty(), "{:?}", library.folders);
    assert_eq!(library.tags, ["work"]);
    // Deleted; its folder stays watched.
    let (status, _, _) = submit(&f.app, &s, "/libraries/delete", &format!("id={id}")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(f.linkly.config().libraries.is_empty());
    assert_eq!(f.linkly.config().folders.len(), 1);
}

/// A LAN visitor signed in with the LAN token: its session (cookie with the proof, CSRF).
async fn visitor(app: &Router, lang: &str) -> Session {
    visitor_with(app, lang, "s3cret-token").await
}

async fn visitor_with(app: &Router, lang: &str, token: &str) -> Session {
    let req = Request::get("/signin")
        .header(header::HOST, HOST)
        .header(header::ACCEPT_LANGUAGE, lang)
        .body(Body::empty())
        .unwrap();
    let (status, res, body) = send(app, req).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let s = Session {
        cookie: cookie_pair(res.headers()[header::SET_COOKIE].to_str().unwrap()),
        csrf: csrf_of(&body),
        person: false,
    };
    let (status, res, _) = submit(app, &s, "/signin", &format!("token={token}")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let auth = cookie_pair(res.headers()[header::SET_COOKIE].to_str().unwrap());
    Session {
        cookie: format!("{}; {auth}", s.cookie),
        ..s
    }
}

#[tokio::test]
async fn lan_access_is_turned_off_and_on_while_the_server_runs() {
    let f = fixture_switched("s3cret-token");
    let person = session(&f.app).await;
    let v = visitor(&f.app, "en").await;
    let search = || anon("/search?q=budget", Some(&v.cookie));
    let (status, _, body) = send(&f.app, search()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("plan.md"), "{body}");
    let (_, _, page) = send(&f.app, get("/agents", Some(&person.cookie))).await;
    assert!(page.contains("data-state=\"on\""), "{page}");
    assert!(page.contains("http://192.168.1.10:60606/"), "{page}");

    // Off: the visitor is shut out at the next request, signed in or not; the token is gone.
    let (status, res, _) = submit(&f.app, &person, "/agents/lan", "enable=0").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/agents#lan");
    let config = f.linkly.config();
    assert!(!config.lan_enabled && config.lan_token.is_none());
    for req in [search(), anon("/signin", None), anon("/health", None)] {
        let (status, _, body) = send(&f.app, req).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(body.contains("LAN access is off"), "{body}");
    }
    // This computer is served as ever.
    let (status, _, page) = send(&f.app, get("/agents", Some(&person.cookie))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-state=\"off\""), "{page}");

    // On again: a new token; the old one and the sessions made with it stay refused.
    let (status, _, _) = submit(&f.app, &person, "/agents/lan", "enable=1").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let token = f.linkly.config().lan_access().unwrap().to_string();
    assert_ne!(token, "s3cret-token");
    let (status, res, _) = send(&f.app, search()).await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "the old session signs in again"
    );
    assert_eq!(location(&res), "/signin");
    let again = visitor_with(&f.app, "en", &token).await;
    let (status, _, body) = send(&f.app, anon("/search?q=budget", Some(&again.cookie))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_lan_visitor_cannot_add_ssh_nor_change_anything_nor_see_tokens() {
    let f = fixture_with(Some("s3cret-token"));
    // What an attacker wants: a private key in a hidden folder.
    let ssh = f.root.join(".ssh");
    fs_err::create_dir_all(&ssh).unwrap();
    fs_err::write(
        ssh.join("id_ed25519"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n",
    )
    .unwrap();
    let v = visitor(&f.app, "fr").await;
    let docs_before = f.linkly.index().doc_count().unwrap();
    let config_before = f.linkly.config();
    let lang = |r: Request<Body>| {
        let (mut parts, body) = r.into_parts();
        parts
            .headers
            .insert(header::ACCEPT_LANGUAGE, "fr".parse().unwrap());
        Request::from_parts(parts, body)
    };
    let ssh_form = format!("path={}", enc(&ssh.display().to_string()));
    for (path, fields) in [
        ("/folders/add", ssh_form.as_str()),
        ("/folders/remove", "path=%2F"),
        (
            "/libraries/create",
            &format!("name=keys&folders={}", enc(&ssh.display().to_string())),
        ),
        ("/libraries/edit", "name=team&folders=%2F"),
        ("/libraries/delete", "name=team"),
        ("/notes/save", "mode=create&content=x"),
        ("/model/download", ""),
        ("/agents/lan", "enable=0"),
    ] {
        let form = format!("{fields}&_csrf={}", v.csrf);
        let req = lang(post_as(path, &v.cookie, Some(ORIGIN), &form, false));
        let (status, res, body) = send(&f.app, req).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        // The refusal says why, in the visitor's language, with the security headers.
        assert!(body.contains("Non autorisé"), "{path}: {body}");
        assert!(body.contains("id=\"refused\""), "{path}: {body}");
        assert_eq!(res.headers()[header::CONTENT_SECURITY_POLICY], CSP);
    }
    // Nothing changed, nothing indexed (a sync would find the key if the folder had been added).
    assert_eq!(*f.linkly.config(), *config_before);
    f.linkly.index_now(&mut |_| {}).unwrap();
    assert_eq!(f.linkly.index().doc_count().unwrap(), docs_before);
    // The originals and the agents page (with the tokens) are the person's.
    let (_, _, results) = send(&f.app, anon("/search?q=budget", Some(&v.cookie))).await;
    let id = first_doc_id(&results);
    for path in [
        format!("/doc/{id}/file"),
        "/agents".to_string(),
        "/notes/trash".into(),
    ] {
        let (status, _, body) = send(&f.app, anon(&path, Some(&v.cookie))).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert!(!body.contains("s3cret-token"), "{path} shows the LAN token");
        assert!(!body.contains("budget"), "{path} shows the document");
    }
    // Reading what is shared works.
    let (status, _, body) = send(&f.app, anon(&format!("/doc/{id}"), Some(&v.cookie))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_lan_visitor_reads_nothing_while_nothing_is_shared() {
    let f = fixture_with(Some("s3cret-token"));
    f.linkly
        .update_config(|c| {
            c.lan_shared_libraries.clear();
            Ok(())
        })
        .unwrap();
    let v = visitor(&f.app, "es").await;
    for path in ["/", "/search?q=budget", "/api/status"] {
        let req = Request::get(path)
            .header(header::HOST, HOST)
            .header(header::COOKIE, &v.cookie)
            .header(header::ACCEPT_LANGUAGE, "es")
            .body(Body::empty())
            .unwrap();
        let (status, _, body) = send(&f.app, req).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert!(body.contains("No se comparte nada"), "{path}: {body}");
    }
}

/// Every route the window declares, with its parameters filled from the fixture.
async fn every_route(f: &Fixture) -> Vec<String> {
    let (_, _, results) = send(&f.app, get("/search?q=budget", None)).await;
    let doc = first_doc_id(&results);
    let s = session(&f.app).await;
    let (_, res, _) = submit(&f.app, &s, "/notes/save", "mode=create&content=budget+note").await;
    let note = location(&res)
        .trim_start_matches("/notes/edit/")
        .to_string();
    let (_, _, home) = send(&f.app, get("/", None)).await;
    let asset = home
        .split("href=\"/assets/")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    f.table
        .iter()
        .map(|r| {
            r.path
                .replace("{id}", &doc)
                .replace("{note_id}", &note)
                .replace("{name}", &asset)
                .replace("{code}", "1-2-3")
        })
        .collect()
}

#[tokio::test]
async fn without_the_local_secret_no_route_gives_document_text() {
    for lan in [None, Some("s3cret-token")] {
        let f = fixture_with(lan);
        let routes = every_route(&f).await;
        assert!(routes.len() >= 20, "{routes:?}");
        // A stranger's session: a cookie and the CSRF token of the public sign-in page.
        let (_, res, page) = send(&f.app, anon("/signin", None)).await;
        let cookie = cookie_pair(res.headers()[header::SET_COOKIE].to_str().unwrap());
        let csrf = csrf_of(&page);
        let forged = format!("{cookie}; linkly_auth=0123456789abcdef0123456789abcdef01234567");
        for path in &routes {
            for cookie in [None, Some(cookie.as_str()), Some(forged.as_str())] {
                let (status, _, body) = send(&f.app, anon(path, cookie)).await;
                for secret in ["budget", "zebra", "line number", "s3cret-token"] {
                    assert!(
                        !body.contains(secret),
                        "GET {path} ({status}) gave {secret:?}"
                    );
                }
            }
            let form = format!("_csrf={csrf}&path=%2F&mode=create&content=x&name=x&token=nope");
            let (status, _, body) =
                send(&f.app, post_as(path, &cookie, Some(ORIGIN), &form, false)).await;
            assert!(
                !(200..300).contains(&status.as_u16()) || path == "/lang",
                "POST {path} answered {status}"
            );
            for secret in ["budget", "zebra", "line number", "s3cret-token"] {
                assert!(
                    !body.contains(secret),
                    "POST {path} ({status}) gave {secret:?}"
                );
            }
        }
        // Nothing changed.
        assert_eq!(f.linkly.config().folders.len(), 1);
        // A wrong bearer token is 401 with a message.
        let req = Request::get("/search?q=budget")
            .header(header::HOST, HOST)
            .header(header::AUTHORIZATION, "Bearer wrong")
            .body(Body::empty())
            .unwrap();
        let (status, _, body) = send(&f.app, req).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(body.contains("wrong bearer token"), "{body}");
    }
}

#[tokio::test]
async fn the_one_time_link_signs_the_person_in_once() {
    let f = fixture();
    let code = linkly_http::sign_in_link_code(SECRET);
    let (status, res, _) = send(&f.app, anon(&format!("/signin/link/{code}"), None)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/");
    let cookies: Vec<String> = res
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let auth = cookies
        .iter()
        .find(|c| c.starts_with("linkly_auth="))
        .unwrap();
    assert!(auth.contains("HttpOnly") && auth.contains("SameSite=Strict"));
    let sid = cookies
        .iter()
        .find(|c| c.starts_with("linkly_sid="))
        .unwrap();
    let both = format!("{}; {}", cookie_pair(sid), cookie_pair(auth));
    // The cookie alone is the person's now: the originals download.
    let (_, _, results) = send(&f.app, anon("/search?q=budget", Some(&both))).await;
    let id = first_doc_id(&results);
    let (status, _, body) = send(&f.app, anon(&format!("/doc/{id}/file"), Some(&both))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("budget"));
    // Replayed: 401, a clear message, no cookie.
    let (status, res, body) = send(&f.app, anon(&format!("/signin/link/{code}"), None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.contains("already used"), "{body}");
    assert!(
        !res.headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .any(|c| c.to_str().unwrap().starts_with("linkly_auth="))
    );
    // Another start's code: refused as well.
    let other = linkly_http::sign_in_link_code("another-start");
    let (status, _, body) = send(&f.app, anon(&format!("/signin/link/{other}"), None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.contains("not valid"), "{body}");
}

/// The rows of docs/ui.md's security table: route → class.
fn security_table() -> std::collections::BTreeMap<String, String> {
    let doc = fs_err::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ui.md"),
    )
    .unwrap();
    doc.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            // | `route` | methods | class | changes | test |
            let route = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((route.to_string(), cells.get(3)?.to_string()))
        })
        .collect()
}

#[tokio::test]
async fn every_route_has_a_row_in_the_security_table() {
    let f = fixture();
    let bound = linkly_http::bind(linkly_http::HttpOptions {
        port: 0,
        port_attempts: 1,
        ..Default::default()
    })
    .await
    .unwrap();
    let host = bound.host_routes(
        f.linkly.clone(),
        linkly_http::ServerState::new(linkly_http::IndexStatus::Idle),
    );
    let rows = security_table();
    let mcp = [("/mcp", "Read"), ("/mcp/{*rest}", "Read")];
    let mut routes: Vec<(String, String)> = f
        .table
        .iter()
        .chain(host.table())
        .map(|r| (r.path.clone(), r.class.as_str().to_string()))
        .collect();
    routes.extend(mcp.iter().map(|(p, c)| (p.to_string(), c.to_string())));
    for (path, class) in &routes {
        match rows.get(path) {
            None => panic!("{path} has no row in docs/ui.md's security table"),
            Some(c) => assert_eq!(c, class, "{path}: the table says {c}, the router {class}"),
        }
    }
    assert_eq!(rows.len(), routes.len(), "rows for routes no router knows");
}

/// This process's resident memory, in bytes (Linux).
#[cfg(target_os = "linux")]
fn rss() -> u64 {
    let status = fs_err::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

#[cfg(target_os = "linux")]
#[tokio::test]
#[allow(clippy::print_stderr)] // the figure, for the log
async fn an_original_download_is_streamed_not_read_whole() {
    const SIZE: u64 = 2 << 30;
    let f = fixture();
    let docs = f.root.join("docs");
    // A 2 GiB video (sparse: no disk used), catalogued by its name.
    let big = fs_err::File::create(docs.join("holiday-film.mp4")).unwrap();
    big.set_len(SIZE).unwrap();
    drop(big);
    f.linkly.index_now(&mut |_| {}).unwrap();
    let (_, _, results) = send(&f.app, get("/search?q=holiday+film", None)).await;
    let id = first_doc_id(&results);
    let before = rss();
    let res = f
        .app
        .clone()
        .oneshot(get(&format!("/doc/{id}/file"), None))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()[header::CONTENT_LENGTH], SIZE.to_string());
    let mut body = res.into_body();
    let (mut bytes, mut peak) = (0u64, before);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            bytes += data.len() as u64;
        }
        if bytes % (64 << 20) < 65536 {
            peak = peak.max(rss());
        }
    }
    assert_eq!(bytes, SIZE);
    let grown = peak.saturating_sub(before);
    eprintln!(
        "a {} MiB download: the process grew by {} MiB at most",
        SIZE >> 20,
        grown >> 20
    );
    assert!(grown < 150 << 20, "grew by {} MiB", grown >> 20);
}

#[tokio::test]
async fn settings_changes_are_the_persons_own_and_checked() {
    // A visitor signed in over the LAN neither sees the page nor changes anything (403 everywhere).
    let f = fixture_with(Some("s3cret-token"));
    let config_file = f.linkly.data_dir().config_file();
    let before = fs_err::read_to_string(&config_file).unwrap();
    let lan = visitor(&f.app, "en").await;
    for (path, form) in [
        (
            "/settings/change",
            "key=transcription.audio&op=set&value=true&version=",
        ),
        ("/settings/change", "key=exclude&op=add&value=*.md&version="),
        ("/settings/reindex", "what=reextract"),
        ("/settings/model/import", "path=/tmp"),
        ("/settings/model/remove", "kind=speech&name="),
    ] {
        let (status, _, body) = submit(&f.app, &lan, path, form).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path} {form}: {body}");
    }
    assert_eq!(fs_err::read_to_string(&config_file).unwrap(), before);
    // The page itself is the person's (it names folders and models): refused too.
    let (status, _, body) = send(&f.app, anon("/settings", Some(&lan.cookie))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!body.contains("action=\"/settings/change\""), "{body}");

    // The person: a bad value and a stale version are refused, nothing saved; a good change
    // with the page's version is saved.
    let f = fixture();
    let config_file = f.linkly.data_dir().config_file();
    let s = session(&f.app).await;
    let (_, _, page) = send(&f.app, get("/settings", Some(&s.cookie))).await;
    let version = page
        .split("name=\"key\" value=\"transcription.audio\"")
        .nth(1)
        .and_then(|rest| rest.split("name=\"version\" value=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .expect("the switch's version")
        .to_string();
    let before = fs_err::read_to_string(&config_file).unwrap();
    let (status, _, body) = submit(
        &f.app,
        &s,
        "/settings/change",
        "key=ocr.languages&op=set&value=eng%2C+xyz&version=",
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.contains("xyz"), "{body}");
    let (status, _, body) = submit(
        &f.app,
        &s,
        "/settings/change",
        "key=transcription.audio&op=set&value=true&version=0000000000000000",
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(fs_err::read_to_string(&config_file).unwrap(), before);
    let (status, _, body) = submit(
        &f.app,
        &s,
        "/settings/change",
        &format!("key=transcription.audio&op=set&value=true&version={version}"),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let after = fs_err::read_to_string(&config_file).unwrap();
    assert!(after.contains("audio = true"), "{after}");
}

#[tokio::test]
async fn a_lan_visitor_reads_only_the_shared_libraries() {
    let f = fixture_with(Some("s3cret-token"));
    // A watched folder the person does not share.
    let private = f.root.join("private");
    fs_err::create_dir_all(&private).unwrap();
    fs_err::write(
        private.join("salary.md"),
        "# Salary\n\nMy budget, private.\n",
    )
    .unwrap();
    f.linkly.update_config(|c| c.add_folder(&private)).unwrap();
    f.linkly.index_now(&mut |_| {}).unwrap();
    // The person finds it.
    let (_, _, mine) = send(&f.app, get("/search?q=salary", None)).await;
    let id = first_doc_id(&mine);
    let v = visitor(&f.app, "en").await;
    // The visitor: not in search, not by its address; shared documents still read.
    let (status, _, body) = send(&f.app, anon("/search?q=salary", Some(&v.cookie))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !body.contains("salary.md") && !body.contains("My budget"),
        "{body}"
    );
    let (status, _, body) = send(&f.app, anon("/search?q=budget", Some(&v.cookie))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("plan.md") && !body.contains("salary.md"),
        "{body}"
    );
    // Its sidebar names what is shared and links to no page the person keeps.
    assert!(
        body.contains(r#"id="nav-shared""#) && body.contains("<li>team</li>"),
        "{body}"
    );
    for path in [
        "/notes",
        "/libraries",
        "/agents",
        "/settings",
        r#"href="/""#,
    ] {
        let link = if path.starts_with("href") {
            path.to_string()
        } else {
            format!(r#"href="{path}""#)
        };
        assert!(!body.contains(&link), "the visitor's page links to {path}");
    }
    let (_, _, person) = send(&f.app, get("/search?q=budget", None)).await;
    assert!(person.contains(r#"href="/settings""#) && !person.contains("nav-shared"));
    let (status, _, body) = send(&f.app, anon(&format!("/doc/{id}"), Some(&v.cookie))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(!body.contains("My budget"), "{body}");
    // The person's own pages: the overview sends the visitor to search; notes and libraries
    // are refused.
    let (status, res, _) = send(&f.app, anon("/", Some(&v.cookie))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location(&res), "/search");
    for path in ["/notes", "/libraries"] {
        let (status, _, body) = send(&f.app, anon(path, Some(&v.cookie))).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert!(!body.contains("private"), "{path}: {body}");
    }
}

/// The `version` field of the share form of `library` on the Agents page.
fn share_version(page: &str, library: &str) -> String {
    let row = page
        .split(&format!(r#"data-library="{library}""#))
        .nth(1)
        .expect("the library's row");
    row.split(r#"name="version" value=""#)
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string()
}

/// The Agents page's share button for the fixture's library `team`: `op` is `add` or `remove`.
async fn share(
    app: &Router,
    session: &Session,
    op: &str,
    version: &str,
) -> (StatusCode, Response<Body>, String) {
    let form = format!("key=lan_shared_libraries&op={op}&value=team&version={version}");
    submit(app, session, "/settings/change", &form).await
}

#[tokio::test]
async fn the_person_chooses_the_shared_libraries_on_the_agents_page() {
    let f = fixture_with(Some("s3cret-token"));
    let me = session(&f.app).await;
    let v = visitor(&f.app, "en").await;
    let (_, _, page) = send(&f.app, get("/agents", Some(&me.cookie))).await;
    assert!(page.contains(r#"data-library="team""#), "{page}");
    assert!(page.contains("Stop sharing"), "{page}");
    let version = share_version(&page, "team");
    // A visitor cannot share or unshare.
    let (status, _, _) = share(&f.app, &v, "remove", &version).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(f.linkly.config().lan_shared_libraries, ["team"]);
    // The person stops sharing: back on the Agents page; the visitor reads nothing from the
    // next request on.
    let (status, res, body) = share(&f.app, &me, "remove", &version).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(location(&res), "/agents#lan");
    let (status, _, _) = send(&f.app, anon("/search?q=budget", Some(&v.cookie))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A page read before that change cannot undo it.
    let (status, _, body) = share(&f.app, &me, "add", &version).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(f.linkly.config().lan_shared_libraries.is_empty());
    // Shared again from the page as it is now.
    let (_, _, page) = send(&f.app, get("/agents", Some(&me.cookie))).await;
    assert!(page.contains(">Share<"), "{page}");
    let version = share_version(&page, "team");
    let (status, _, body) = share(&f.app, &me, "add", &version).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let (status, _, body) = send(&f.app, anon("/search?q=budget", Some(&v.cookie))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("plan.md"), "{body}");
    let config = fs_err::read_to_string(f.linkly.data_dir().config_file()).unwrap();
    assert!(
        config.contains(r#"lan_shared_libraries = ["team"]"#),
        "{config}"
    );
}

#[tokio::test]
async fn search_pages_show_ten_results_each() {
    let f = fixture();
    let docs = f.root.join("docs");
    for i in 0..14 {
        fs_err::write(
            docs.join(format!("lantern{i:02}.md")),
            format!("# Lantern {i}\n\nThe lantern inventory, part {i}.\n"),
        )
        .unwrap();
    }
    f.linkly.index_now(&mut |_| {}).unwrap();
    let count = |page: &str| page.matches(r#"data-testid="result""#).count();
    let (status, _, first) = send(&f.app, get("/search?q=lantern", None)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(count(&first), 10, "{first}");
    assert!(first.contains(r#"id="next-page""#), "{first}");
    let (_, _, second) = send(&f.app, get("/search?q=lantern&page=2", None)).await;
    assert_eq!(count(&second), 4, "{second}");
    assert!(second.contains(r#"start="11""#) && !second.contains(r#"id="next-page""#));
    assert!(second.contains(r#"id="prev-page""#));
    // No document is on both pages.
    let ids = |page: &str| -> Vec<String> {
        page.split("href=\"/doc/")
            .skip(1)
            .map(|s| s.split(['?', '"']).next().unwrap().to_string())
            .collect()
    };
    let (a, b) = (ids(&first), ids(&second));
    assert!(b.iter().all(|id| !a.contains(id)), "{a:?} {b:?}");
}
