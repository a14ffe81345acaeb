//! The window (issue 32) in a real browser: Debian's Chromium driven through chromedriver
//! (WebDriver, `tests/browser/`) against the real `linkly serve` on a temporary data directory.
//!
//! One scenario, as a person would use the app: add a folder and watch the count rise, read a
//! skipped file's reason, search with the keyboard, open a result and land on its lines, find
//! in the document, create, edit (losing a race to a second window) and delete a note, copy an
//! agent's configuration, switch to Japanese. Screenshots of every page, in English and in
//! Japanese, are written under `target/ui-screenshots/` (`docs/ui.md` shows a committed set).
//!
//! Without Chromium the test fails when `CI` or `LINKLY_REQUIRE_BROWSER` is set (`.ci/run`
//! installs both and sets the latter), and is skipped with a printed reason otherwise.

use crate::browser;
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use browser::{Session, keys};
use common::{Env, Proc as Server};
use serde_json::{Value, json};

/// What a wait may take at most (the whole scenario runs in well under a minute).
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// The long document's lines: the hit sits far below the first screen.
const LONG_LINES: usize = 600;
/// The hit's lines in the long document (1-based, inclusive).
const HIT: (usize, usize) = (420, 421);
/// Files in the scenario's folder (six from the corpus, the hostile name, the long handbook).
const FILES: u64 = 8;
/// The file name that must show as text, never as markup.
const HOSTILE: &str = "<img src=x onerror=alert(1)>.md";

/// Chromium and chromedriver, or `None` (with the reason printed) where the test may skip.
#[allow(clippy::print_stderr)] // the note that says the test was skipped
pub(crate) fn browser_or_skip() -> Option<(PathBuf, PathBuf)> {
    match browser::find() {
        Ok(found) => Some(found),
        Err(why) => {
            let required = ["CI", "LINKLY_REQUIRE_BROWSER"]
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty() && s != "0"));
            assert!(
                !required,
                "the browser scenario cannot run: {why} (CI or LINKLY_REQUIRE_BROWSER is set, so this is a failure, not a skip)"
            );
            eprintln!("skipped: the browser scenario needs Chromium: {why}");
            None
        }
    }
}

/// Where the screenshots go: `target/ui-screenshots/<lang>/<page>.png`.
pub(crate) fn shots_dir() -> PathBuf {
    // The binary is `target/<profile>/linkly`.
    common::bin()
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
        .join("ui-screenshots")
}

/// The documents of the scenario: real files of `testdata/corpus/`, an empty PDF and a broken
/// spreadsheet (each gets a skip reason), the hostile file name, and a long Markdown file whose
/// hit lies far below the first screen.
fn documents(env: &Env) {
    let corpus = common::corpus_dir();
    for rel in [
        "md/vuedocs-ja-component-basics.md",
        "md/reactdocs-es-thinking-in-react.md",
        "pdf/tika-testPDF_bookmarks.pdf",
        "txt/textract-raw_text.txt",
        "edge/pdfplumber-empty-zero-bytes.pdf",
        "edge/calamine-too_small.xls",
    ] {
        let from = corpus.join(rel);
        fs_err::copy(&from, env.docs.join(from.file_name().unwrap())).unwrap();
    }
    fs_err::write(
        env.docs.join(HOSTILE),
        "# Hostile name\n\nThis file's name is markup: zanzibarite must show it as text.\n",
    )
    .unwrap();
    let mut long = String::from("# Field handbook\n\n");
    let mut n = 2;
    while n < LONG_LINES {
        n += 1;
        let line = if n == HIT.0 {
            "The quetzal migration starts at dawn.".to_string()
        } else if n == HIT.1 {
            "Every quetzal is counted twice.".to_string()
        } else if n % 50 == 0 {
            format!("## Part {}", n / 50)
        } else if n % 37 == 0 {
            format!("Checkpoint {n}: write down the time.")
        } else {
            format!("Line {n} of the handbook, about walking and weather.")
        };
        long.push_str(&line);
        long.push('\n');
    }
    fs_err::write(env.docs.join("field-handbook.md"), long).unwrap();
}

/// Starts `linkly serve` on a free port without folders and waits until it watches.
pub(crate) fn serve(env: &Env) -> (Server, u16) {
    serve_with(env, &[])
}

/// `linkly serve` with `extra` arguments (`--lan`), once it answers.
pub(crate) fn serve_with(env: &Env, extra: &[&str]) -> (Server, u16) {
    let port = common::free_port();
    fs_err::create_dir_all(&env.home).unwrap();
    let log = std::fs::File::create(env.home.join("serve.log")).unwrap();
    let child = env
        .cmd()
        .args(["serve", "--no-model-download", "--port", &port.to_string()])
        .args(extra)
        .env_remove("LINKLY_MODEL_DIR")
        .env("LINKLY_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let server = Server(child);
    let start = Instant::now();
    loop {
        if browser::http_get(&format!("http://127.0.0.1:{port}/health"))
            .is_ok_and(|a| a.status == 200)
        {
            break;
        }
        assert!(
            start.elapsed() < WAIT,
            "the server did not answer /health; its log: {}",
            fs_err::read_to_string(env.home.join("serve.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, port)
}

/// Unwraps a WebDriver result, naming the step.
pub(crate) trait Step<T> {
    fn at(self, step: &str) -> T;
}

impl<T> Step<T> for browser::Result<T> {
    fn at(self, step: &str) -> T {
        self.unwrap_or_else(|e| panic!("{step}: {e}"))
    }
}

/// A number as the page shows it (`1,234`, `1 234`, `1.234`): its digits.
pub(crate) fn number(text: &str) -> u64 {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

/// Fails a browser scenario with what it said, the page it was on (text and a screenshot
/// named `shot`, when a page is open) and the last lines of the server's log.
pub(crate) fn fail_with_page(
    s: &mut Session<'_>,
    env: &Env,
    panic: &(dyn std::any::Any + Send),
    shot: &str,
) -> ! {
    let path = shots_dir().join(shot);
    let _ = s.screenshot(&path);
    let page = format!(
        "the page at {} (screenshot: {}):\n{}",
        s.url().unwrap_or_default(),
        path.display(),
        s.text_of("body").unwrap_or_default()
    );
    fail_with_log(env, panic, &page)
}

/// Fails a scenario with what it said, `context`, and the last 30 lines of the server's log.
pub(crate) fn fail_with_log(env: &Env, panic: &(dyn std::any::Any + Send), context: &str) -> ! {
    let said = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    let log = fs_err::read_to_string(env.home.join("serve.log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(30)..].join("\n");
    panic!("{said}\n\n{context}\n\nthe server's log (last lines):\n{tail}")
}

pub(crate) fn shot(s: &mut Session<'_>, lang: &str, name: &str) {
    let path = shots_dir().join(lang).join(format!("{name}.png"));
    s.screenshot(&path).at(&format!("screenshot {name}"));
}

/// Whether the element lies wholly inside the viewport.
fn in_view(s: &mut Session<'_>, css: &str) -> bool {
    s.exec(
        "const e = document.querySelector(arguments[0]); if (!e) return false;
         const r = e.getBoundingClientRect();
         return r.top >= 0 && r.bottom <= window.innerHeight;",
        &[json!(css)],
    )
    .at("in view")
        == json!(true)
}

/// Nothing the page holds came from markup in a file name: no element with an `onerror`
/// attribute, no `img` pointing at `x`, and no dialog opened by a script.
fn no_injected_markup(s: &mut Session<'_>, page: &str) {
    let v = s
        .exec(
            "return [document.querySelectorAll('[onerror]').length,
                     document.querySelectorAll('img[src=x]').length];",
            &[],
        )
        .at("count injected elements");
    assert_eq!(v, json!([0, 0]), "{page}: markup from a file name ran");
    assert_eq!(s.dialog_text(), None, "{page}: a script opened a dialog");
}

#[test]
fn the_window_in_chromium() {
    let Some((chromium, chromedriver)) = browser_or_skip() else {
        return;
    };
    let env = Env::new(&[]);
    documents(&env);
    let (_server, port) = serve(&env);
    let base = format!("http://127.0.0.1:{port}");

    // Without the local secret, the window is the sign-in page, never the data.
    let stranger = browser::http_get(&format!("{base}/search?q=zanzibarite")).unwrap();
    let text = String::from_utf8_lossy(&stranger.body).to_string();
    assert!(text.contains("signin-form"), "{text}");
    assert!(!text.contains("data-testid=\"result\""), "{text}");
    // The headers of every page: a strict CSP, no framing.
    let port_file: Value =
        serde_json::from_str(&fs_err::read_to_string(env.home.join("port")).unwrap()).unwrap();
    let secret = port_file["secret"]
        .as_str()
        .expect("the port file's secret");
    let home = browser::http_get_as(&format!("{base}/"), Some(secret)).unwrap();
    assert_eq!(home.status, 200, "{}", String::from_utf8_lossy(&home.body));
    let csp = home
        .header("content-security-policy")
        .expect("a Content-Security-Policy header on /")
        .to_string();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let directive = |name: &str| {
        csp.split(';')
            .map(str::trim)
            .find(|d| d.split_whitespace().next() == Some(name))
            .map(str::to_string)
    };
    let scripts = directive("script-src")
        .or_else(|| directive("default-src"))
        .expect("a script-src or default-src directive");
    assert!(
        !scripts.contains("'unsafe-inline'") && !scripts.contains("'unsafe-eval'"),
        "inline scripts allowed: {csp}"
    );

    let _ = fs_err::remove_file(shots_dir().join("failure.png"));
    let mut driver = browser::Driver::start(&chromedriver).at("start chromedriver");
    let mut s = driver.session(&chromium, "en-US").at("open Chromium");
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scenario(&mut s, &env, &base);
    }));
    if let Err(panic) = run {
        fail_with_page(&mut s, &env, panic.as_ref(), "failure.png");
    }
    s.close().at("close the browser");
}

/// The person's steps, in one window (and a second tab for the note conflict).
fn scenario(s: &mut Session<'_>, env: &Env, base: &str) {
    let en = "en";

    // `linkly open`'s one-time address signs the browser in and lands on the overview.
    let open = env.run_ok(&["open", "--no-browser"]);
    let link = String::from_utf8_lossy(&open.stdout).trim().to_string();
    assert!(link.starts_with(&format!("{base}/signin/link/")), "{link}");
    s.goto(&link).at("sign in through linkly open");
    // Overview: nothing yet; add the folder and watch the count rise.
    s.goto(&format!("{base}/")).at("open the app");
    let count = s.text_of("[data-testid=doc-count]").at("document count");
    assert_eq!(number(&count), 0, "an empty data directory: {count}");
    let input = s.find("#folder-path").at("folder field");
    s.send_keys(&input, env.docs.to_str().unwrap())
        .at("type the folder");
    let add = s.find("#folder-add").at("add button");
    s.click(&add).at("add the folder");
    // The count rises on the page itself (the script polls the server), without a reload.
    let mut seen = Vec::new();
    s.wait_until("the count to reach every file", WAIT, |s| {
        let n = number(&s.text_of("[data-testid=doc-count]")?);
        if seen.last() != Some(&n) {
            seen.push(n);
        }
        Ok(n >= FILES)
    })
    .at("watch the count rise");
    assert_eq!(*seen.last().unwrap(), FILES, "every file counted: {seen:?}");
    // The skipped files are listed once the sync is done (a reload shows them).
    s.wait_until("the skipped files", WAIT, |s| {
        s.goto(&format!("{base}/"))?;
        Ok(s.find_all("[data-testid=skipped-file]")?.len() >= 2)
    })
    .at("skipped files listed");
    let folders = s.find_all("[data-testid=folder]").at("folders");
    assert_eq!(folders.len(), 1, "one watched folder");
    let folder = s.text(&folders[0]).at("folder text");
    assert!(folder.contains(env.docs.to_str().unwrap()), "{folder}");

    // A skipped file's reason and what to do.
    let skipped = s.text_of("#skipped").at("skipped files");
    assert!(
        skipped.contains("pdfplumber-empty-zero-bytes.pdf"),
        "the empty PDF is listed: {skipped}"
    );
    let empty = s
        .find("[data-testid=skip-group][data-code=empty]")
        .at("the `empty` group");
    let empty_text = s.text(&empty).at("empty group text");
    assert!(
        empty_text.contains("pdfplumber-empty-zero-bytes.pdf"),
        "{empty_text}"
    );
    let advice = s.text_of("[data-testid=skip-advice]").at("advice");
    assert!(!advice.trim().is_empty(), "a skip group says what to do");
    no_injected_markup(s, "overview");
    let inline = s
        .exec(
            "return document.querySelectorAll('script:not([src])').length;",
            &[],
        )
        .at("inline scripts");
    assert_eq!(inline, json!(0), "no inline script on the page");
    shot(s, en, "overview");
    s.screenshot_full(&shots_dir().join(en).join("overview-full.png"), 2400)
        .at("full overview");

    // A folder that does not exist: a clear message, nothing added.
    let input = s.find("#folder-path").at("folder field");
    s.clear(&input).at("clear");
    s.send_keys(&input, "/no/such/folder/anywhere")
        .at("type a missing folder");
    let add = s.find("#folder-add").at("add button");
    s.click(&add).at("add a missing folder");
    let error = s
        .wait_for("#folder-error:not(:empty)", WAIT)
        .at("folder error");
    let error = s.text(&error).at("folder error text");
    assert!(!error.trim().is_empty(), "a missing folder is refused");
    assert_eq!(
        s.find_all("[data-testid=folder]").at("folders").len(),
        1,
        "nothing added"
    );

    // Search with the keyboard: `/` focuses the box, arrows move, Enter opens.
    let nav = s.find("#nav-search").at("search link");
    s.click(&nav).at("go to search");
    s.wait_for("#q", WAIT).at("search box");
    s.exec(
        "document.activeElement && document.activeElement.blur();",
        &[],
    )
    .at("blur");
    s.press("/").at("press /");
    let focused = s
        .exec(
            "return document.activeElement && document.activeElement.id;",
            &[],
        )
        .at("focus");
    assert_eq!(focused, json!("q"), "`/` focuses the search box");
    s.press(&format!("quetzal migration{}", keys::ENTER))
        .at("type the query");
    s.wait_for("[data-testid=result]", WAIT).at("results");
    let results = s.text_of("[data-testid=result]").at("first result");
    assert!(results.contains("field-handbook.md"), "{results}");
    assert!(
        results.contains(&format!("{}", HIT.0)),
        "the snippet's line range: {results}"
    );
    shot(s, en, "search");
    s.press(keys::ARROW_DOWN).at("arrow down");
    s.press(keys::ENTER).at("enter opens");
    s.wait_until("the document page", WAIT, |s| {
        Ok(s.url()?.contains("/doc/"))
    })
    .at("open the result");

    // The document: landed on the hit's lines, highlighted and scrolled into view.
    let url = s.url().at("url");
    let first = format!("L{}", HIT.0);
    assert!(
        url.contains(&format!("#{first}")),
        "a deep link to the hit: {url}"
    );
    let hit_css = format!("#{first}");
    s.wait_for(&hit_css, WAIT).at("the hit's line");
    let highlighted: Vec<String> = s
        .exec(
            "return [...document.querySelectorAll('.hl')].map(e => e.id);",
            &[],
        )
        .at("highlighted")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    assert!(
        highlighted.contains(&first) && highlighted.contains(&format!("L{}", HIT.1)),
        "the hit's lines are highlighted: {highlighted:?}"
    );
    s.wait_until("the hit scrolled into view", WAIT, |s| {
        Ok(in_view(s, &hit_css))
    })
    .at("scroll");
    let scrolled = s.exec("return window.scrollY || document.scrollingElement.scrollTop || [...document.querySelectorAll('*')].some(e => e.scrollTop > 0);", &[])
        .at("scroll position");
    assert!(
        scrolled != json!(0) && scrolled != json!(false),
        "the page scrolled to the hit"
    );
    let title = s.text_of("#doc-title").at("title");
    assert!(!title.is_empty());
    let download = s.find("#doc-download").at("download link");
    let href = s
        .attr(&download, "href")
        .at("download href")
        .unwrap_or_default();
    assert!(
        !href.starts_with("file:") && href.contains("/doc/"),
        "the server offers the file: {href}"
    );
    shot(s, en, "document");

    // Find in the document: a count, next and previous.
    let find = s.find("#find").at("find field");
    s.send_keys(&find, "checkpoint").at("type find");
    let go = s.find("#find-submit").at("find button");
    s.click(&go).at("find");
    let count = s.wait_for("#find-count:not(:empty)", WAIT).at("find count");
    let count = s.text(&count).at("find count text");
    let expected = (3..LONG_LINES)
        .filter(|n| n % 37 == 0 && n % 50 != 0)
        .count() as u64;
    assert!(
        count.contains(&expected.to_string()),
        "{expected} matches of `checkpoint` (case-insensitive): {count}"
    );
    // The current match: its line carries `cur` (and is scrolled into view).
    let current = |s: &mut Session<'_>| -> String {
        s.exec(
            "const e = document.querySelector('#doc-lines .cur'); return e ? e.id : '';",
            &[],
        )
        .at("current match")
        .as_str()
        .unwrap_or_default()
        .to_string()
    };
    let at_first = current(s);
    let next = s.find("#find-next").at("next");
    s.click(&next).at("next match");
    s.wait_until("the next match", WAIT, |s| Ok(current(s) != at_first))
        .at("next");
    let at_second = current(s);
    let prev = s.find("#find-prev").at("previous");
    s.click(&prev).at("previous match");
    s.wait_until("the previous match", WAIT, |s| Ok(current(s) == at_first))
        .at("previous");
    assert_ne!(at_first, at_second);
    assert_eq!(at_first, "L37", "the first `checkpoint` is on line 37");
    assert_eq!(at_second, "L74", "the second is on line 74");
    assert!(in_view(s, "#L37"), "the current match is in view");
    shot(s, en, "document-find");

    // The hostile name: shown as text in search results and on its page.
    s.goto(&format!("{base}/search?q=zanzibarite"))
        .at("search the hostile file");
    s.wait_for("[data-testid=result]", WAIT)
        .at("hostile result");
    let shown = s.text_of("[data-testid=result]").at("hostile result text");
    assert!(shown.contains("<img src=x onerror=alert(1)>"), "{shown}");
    no_injected_markup(s, "search results");
    let link = s.find("a[data-testid=result-link]").at("hostile link");
    s.click(&link).at("open the hostile file");
    s.wait_for("#doc-title", WAIT).at("hostile document");
    let body = s.text_of("body").at("body");
    assert!(body.contains("<img src=x onerror=alert(1)>"), "{body}");
    no_injected_markup(s, "document page");

    // Notes: create.
    let nav = s.find("#nav-notes").at("notes link");
    s.click(&nav).at("go to notes");
    let new = s.wait_for("#note-new", WAIT).at("new note");
    s.click(&new).at("new note");
    let body = s.wait_for("#note-body", WAIT).at("note editor");
    s.send_keys(
        &body,
        "Shopping list\n\nBuy **oat milk** and bread.\n\n#errands",
    )
    .at("type the note");
    let save = s.find("#note-save").at("save");
    s.click(&save).at("save the note");
    s.wait_for("#note-saved", WAIT).at("saved");
    shot(s, en, "note-editor");
    let edit_url = s.url().at("editor url");
    assert!(edit_url.contains("/notes/edit/"), "{edit_url}");
    // The editor's address without the `?done=saved` that says it was just saved.
    let edit_url = edit_url.split(['?', '#']).next().unwrap().to_string();
    s.goto(&edit_url).at("reopen the editor");

    // Edit with a conflict: a second window saves first; the first loses the race and sees
    // both texts.
    let first_tab = s.new_tab().at("second window");
    s.goto(&edit_url).at("open the note again");
    let body = s.wait_for("#note-body", WAIT).at("editor 2");
    s.clear(&body).at("clear 2");
    s.send_keys(&body, "Shopping list\n\nBuy **rice** instead.\n\n#errands")
        .at("edit 2");
    let save = s.find("#note-save").at("save 2");
    s.click(&save).at("save 2");
    s.wait_until("the second window's save", WAIT, |s| {
        Ok(s.url()?.contains("done=saved") && !s.find_all("#note-saved")?.is_empty())
    })
    .at("saved 2");
    let second_tab = s.handle().at("handle");
    s.switch_to(&first_tab).at("back to the first window");
    let body = s.find("#note-body").at("editor 1");
    s.clear(&body).at("clear 1");
    s.send_keys(&body, "Shopping list\n\nBuy **tea** too.\n\n#errands")
        .at("edit 1");
    let save = s.find("#note-save").at("save 1");
    s.click(&save).at("save 1");
    s.wait_for("#conflict", WAIT).at("the conflict");
    let value = |s: &mut Session<'_>, css: &str| -> String {
        s.exec(
            "return document.querySelector(arguments[0]).value;",
            &[json!(css)],
        )
        .at(css)
        .as_str()
        .unwrap_or_default()
        .to_string()
    };
    let theirs = value(s, "#conflict-theirs");
    let mine = value(s, "#conflict-mine");
    assert!(theirs.contains("rice"), "the saved text: {theirs}");
    assert!(mine.contains("tea"), "the text that lost the race: {mine}");
    shot(s, en, "note-conflict");
    let _ = second_tab;

    // Delete, confirmed; the note goes to the trash.
    s.goto(&edit_url).at("reopen the note");
    let delete = s.wait_for("#note-delete", WAIT).at("delete");
    s.click(&delete).at("delete");
    let confirm = s.wait_for("#note-delete-confirm", WAIT).at("confirm");
    s.exec(
        "arguments[0].scrollIntoView({block: 'center'});",
        &[Session::arg(&confirm)],
    )
    .at("scroll to the confirmation");
    shot(s, en, "note-delete");
    s.click(&confirm).at("confirm delete");
    s.wait_until("the notes list", WAIT, |s| Ok(!s.url()?.contains("/edit/")))
        .at("after delete");
    s.wait_for("#note-deleted", WAIT)
        .at("the deleted notice with its undo");
    let notes = s.find_all("[data-testid=note]").at("notes");
    for n in &notes {
        let t = s.text(n).at("note text");
        assert!(
            !t.contains("Shopping list"),
            "deleted note still listed: {t}"
        );
    }
    shot(s, en, "note-deleted");
    let trash = s.find("#notes-trash-link").at("trash link");
    s.click(&trash).at("open the trash");
    s.wait_for("[data-testid=trashed-note]", WAIT)
        .at("trashed note");
    let trashed = s.text_of("[data-testid=trashed-note]").at("trashed");
    assert!(trashed.contains("Shopping list"), "{trashed}");
    shot(s, en, "trash");

    // The way back: restored from the trash, the note is listed again, with its last text.
    let restore = s
        .find("[data-testid=trashed-note] [data-testid=note-restore]")
        .at("restore button");
    s.click(&restore).at("restore");
    s.wait_until("the restored note", WAIT, |s| {
        Ok(s.url()?.contains("/notes/edit/"))
    })
    .at("restored");
    let body = s
        .exec("return document.querySelector('#note-body').value;", &[])
        .at("restored text");
    assert!(
        body.as_str().unwrap_or_default().contains("rice"),
        "the note comes back as it was deleted: {body}"
    );
    let nav = s.find("#nav-notes").at("notes link");
    s.click(&nav).at("back to the notes");
    s.wait_until("the note listed again", WAIT, |s| {
        let notes = s.find_all("[data-testid=note]")?;
        let mut found = false;
        for n in &notes {
            found |= s.text(n)?.contains("Shopping list");
        }
        Ok(found)
    })
    .at("listed again");
    shot(s, en, "notes");

    // Libraries.
    let nav = s.find("#nav-libraries").at("libraries link");
    s.click(&nav).at("go to libraries");
    s.wait_for("#library-new-form", WAIT).at("library form");
    shot(s, en, "libraries");

    // Agents: the configuration a copy button copies holds this server's URL.
    let nav = s.find("#nav-agents").at("agents link");
    s.click(&nav).at("go to agents");
    s.wait_for("[data-testid=agent-config]", WAIT)
        .at("agent configs");
    let endpoint = format!("{base}/mcp");
    s.exec(
        "window.__copied = [];
         const keep = t => { window.__copied.push(String(t)); return Promise.resolve(); };
         if (navigator.clipboard) { navigator.clipboard.writeText = keep; }
         else { Object.defineProperty(navigator, 'clipboard', {value: {writeText: keep}}); }",
        &[],
    )
    .at("clipboard substitute");
    // What the copy button of a configuration puts on the clipboard.
    let copy = |s: &mut Session<'_>, client: &str| -> String {
        let v = s
            .exec(
                "window.__copied = [];
                 const c = document.querySelector(
                   '[data-testid=agent-config][data-client=' + arguments[0] + ']');
                 c.querySelector('[data-testid=copy]').click();
                 return window.__copied;",
                &[json!(client)],
            )
            .at("copy");
        v[0].as_str()
            .unwrap_or_else(|| panic!("the {client} copy button copied nothing: {v}"))
            .to_string()
    };
    let cursor = copy(s, "cursor");
    let cursor_json: Value = serde_json::from_str(&cursor)
        .unwrap_or_else(|e| panic!("the Cursor configuration is JSON ({e}): {cursor}"));
    assert_eq!(
        cursor_json["mcpServers"]["linkly"]["url"], endpoint,
        "this server's real URL: {cursor}"
    );
    let shown = s
        .text_of("[data-testid=agent-config][data-client=cursor] pre")
        .at("Cursor config text");
    assert_eq!(
        shown.trim(),
        cursor.trim(),
        "the copy is what the page shows"
    );
    let desktop = copy(s, "claude-desktop");
    let desktop_json: Value = serde_json::from_str(&desktop)
        .unwrap_or_else(|e| panic!("the Claude Desktop configuration is JSON ({e}): {desktop}"));
    assert_eq!(
        desktop_json["mcpServers"]["linkly"],
        json!({"command": "linkly", "args": ["mcp"]}),
        "{desktop}"
    );
    let vscode = copy(s, "vscode");
    assert!(vscode.contains(&endpoint), "{vscode}");
    let stdio = s
        .text_of("[data-testid=agent-config][data-client=stdio]")
        .at("stdio config");
    assert!(
        stdio.contains("\"command\": \"linkly\"") && stdio.contains("\"mcp\""),
        "{stdio}"
    );
    // The same without installing anything: uv runs the wheel.
    let uvx: Value = serde_json::from_str(&copy(s, "uvx")).expect("the uvx configuration is JSON");
    assert_eq!(uvx, json!({"command": "uvx", "args": ["linkly", "mcp"]}));
    shot(s, en, "agents");

    // Japanese: the switch, remembered on every page; a screenshot of each.
    let select = s.find("#lang-select").at("language switch");
    let ja = s
        .find("#lang-select option[value=ja]")
        .at("Japanese option");
    s.click(&select).at("open the switch");
    s.click(&ja).at("pick Japanese");
    // The script sends the switch's form on change.
    s.wait_until("the page in Japanese", WAIT, |s| {
        Ok(s.exec("return document.documentElement.lang;", &[])? == json!("ja"))
    })
    .at("switch to Japanese");
    let nav_text = s.text_of("#nav-search").at("nav in Japanese");
    assert!(
        nav_text
            .chars()
            .any(|c| ('\u{3040}'..='\u{30ff}').contains(&c)
                || ('\u{4e00}'..='\u{9fff}').contains(&c)),
        "the menu in Japanese: {nav_text}"
    );
    let ja_lang = "ja";
    for (name, path) in [
        ("overview", "/".to_string()),
        ("search", "/search?q=quetzal".to_string()),
        ("notes", "/notes".to_string()),
        ("libraries", "/libraries".to_string()),
        ("agents", "/agents".to_string()),
    ] {
        s.goto(&format!("{base}{path}")).at(name);
        let lang = s
            .exec("return document.documentElement.lang;", &[])
            .at("lang");
        assert_eq!(lang, json!("ja"), "{name}: the language is remembered");
        shot(s, ja_lang, name);
        if name == "overview" {
            s.screenshot_full(&shots_dir().join(ja_lang).join("overview-full.png"), 2400)
                .at("full overview (ja)");
        }
    }
    s.goto(&format!("{base}/search?q=quetzal+migration"))
        .at("search in Japanese");
    let link = s.wait_for("a[data-testid=result-link]", WAIT).at("result");
    s.click(&link).at("open in Japanese");
    s.wait_for(&hit_css, WAIT).at("document in Japanese");
    s.wait_until("the hit scrolled into view", WAIT, |s| {
        Ok(in_view(s, &hit_css))
    })
    .at("scroll (ja)");
    shot(s, ja_lang, "document");
    s.goto(&format!("{base}/notes/new"))
        .at("editor in Japanese");
    s.wait_for("#note-body", WAIT).at("editor (ja)");
    shot(s, ja_lang, "note-editor");

    // A phone's width: the same page, still usable (no horizontal scroll).
    s.resize(390, 844).at("phone width");
    s.goto(&format!("{base}/")).at("overview on a phone");
    let overflow = s
        .exec(
            "return document.documentElement.scrollWidth - window.innerWidth;",
            &[],
        )
        .at("overflow");
    assert!(
        overflow.as_i64().unwrap_or(0) <= 1,
        "the overview scrolls sideways at a phone's width: {overflow}"
    );
    shot(s, ja_lang, "overview-phone");

    // French, Spanish and simplified Chinese: the switch again, the menu translated, the
    // overview and a search pictured in each (the pictures are read, not compared).
    s.resize(1280, 800).at("desktop width");
    // The switch's value, and the page's `lang` (BCP 47: simplified Chinese is `zh-Hans`).
    for (lang, tag) in [("fr", "fr"), ("es", "es"), ("zh", "zh-Hans")] {
        s.goto(&format!("{base}/")).at(lang);
        let select = s.find("#lang-select").at("language switch");
        let option = s
            .find(&format!("#lang-select option[value={lang}]"))
            .at("language option");
        s.click(&select).at("open the switch");
        s.click(&option).at("pick the language");
        s.wait_until("the page in the language picked", WAIT, |s| {
            Ok(s.exec("return document.documentElement.lang;", &[])? == json!(tag))
        })
        .at(lang);
        let nav_text = s.text_of("#nav-search").at("the menu's search entry");
        assert!(
            !nav_text.contains("Search"),
            "{lang}: the menu is still in English ({nav_text})"
        );
        shot(s, lang, "overview");
        s.goto(&format!("{base}/search?q=quetzal")).at("search");
        assert_eq!(
            s.exec("return document.documentElement.lang;", &[])
                .at("lang"),
            json!(tag),
            "{lang}: the language is remembered"
        );
        shot(s, lang, "search");
    }
}
