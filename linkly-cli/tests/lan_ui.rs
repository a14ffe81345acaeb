//! Sharing on the LAN (issue 42) in Chromium against the real `linkly serve --lan`: the person,
//! in French, shares a library with one button on the Agents page, no restart and no terminal;
//! a visitor, in Spanish, signs in with the LAN token, finds the shared library's document and
//! not the unshared folder's, sees only Search and the shared library's name in the sidebar,
//! and gets a page in Spanish saying why when they open the person's settings. Screenshots go
//! to `target/ui-screenshots/fr/agents-lan.png` and `target/ui-screenshots/es/visitor-*.png`.

use crate::browser;
use crate::common;
use crate::ui::{Step, WAIT, browser_or_skip, fail_with_log, serve_with, shot};

use browser::Session;
use common::Env;

/// A word only the shared library holds, and one only the unshared folder holds.
const SHARED: &str = "quetzalplan";
const PRIVATE: &str = "zorbasalary";

#[test]
fn lan_sharing_in_chromium() {
    let Some((chromium, chromedriver)) = browser_or_skip() else {
        return;
    };
    let env = Env::new(&[(
        "plan.md",
        &format!("# Team plan\n\nThe {SHARED} budget for the team.\n"),
    )]);
    let private = env.tmp.path().join("private");
    fs_err::create_dir_all(&private).unwrap();
    fs_err::write(
        private.join("salary.md"),
        format!("# Salary\n\nMy {PRIVATE} figures.\n"),
    )
    .unwrap();
    env.run_ok(&["library", "add", "team", env.docs.to_str().unwrap()]);
    env.run_ok(&["folders", "add", private.to_str().unwrap()]);
    env.index();
    let (_server, port) = serve_with(&env, &["--lan"]);
    let base = format!("http://127.0.0.1:{port}");
    let token = String::from_utf8_lossy(&env.run_ok(&["config", "get", "lan_token"]).stdout)
        .trim()
        .to_string();
    assert_eq!(token.len(), 32, "{token}");
    let mut driver = browser::Driver::start(&chromedriver).at("start chromedriver");
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut s = driver.session(&chromium, "fr-FR").at("open Chromium");
        person_shares(&mut s, &env, &base);
        s.close().at("close the person's browser");
        let mut s = driver.session(&chromium, "es-ES").at("open Chromium");
        visitor_reads(&mut s, &base, &token);
        s.close().at("close the visitor's browser");
    }));
    if let Err(panic) = run {
        fail_with_log(&env, panic.as_ref(), "the LAN scenario failed");
    }
}

/// The state the Agents page shows for `library` (`partagée`, `non partagée`).
fn share_state(s: &mut Session<'_>, library: &str) -> browser::Result<String> {
    s.text_of(&format!(
        "[data-testid=lan-library][data-library='{library}'] td.muted"
    ))
}

fn person_shares(s: &mut Session<'_>, env: &Env, base: &str) {
    let open = env.run_ok(&["open", "--no-browser"]);
    let link = String::from_utf8_lossy(&open.stdout).trim().to_string();
    s.goto(&link).at("sign in through linkly open");
    s.goto(&format!("{base}/agents")).at("open the agents page");
    assert_eq!(share_state(s, "team").at("state"), "non partagée");
    let button = s
        .find("[data-testid=lan-library][data-library='team'] [data-testid=lan-share]")
        .at("the share button");
    assert_eq!(s.text(&button).at("button"), "Partager");
    s.click(&button).at("share");
    s.wait_until("the library shared", WAIT, |s| {
        Ok(share_state(s, "team")? == "partagée")
    })
    .at("shared");
    let listed = s.text_of("#lan-shared").at("the shared list");
    assert!(listed.contains("team"), "{listed}");
    let config = fs_err::read_to_string(env.home.join("config.toml")).unwrap();
    assert!(
        config.contains(r#"lan_shared_libraries = ["team"]"#),
        "{config}"
    );
    s.exec(
        "document.getElementById('lan').scrollIntoView({block: 'start'});",
        &[],
    )
    .at("scroll to the LAN section");
    shot(s, "fr", "agents-lan");
}

fn visitor_reads(s: &mut Session<'_>, base: &str, token: &str) {
    s.goto(&format!("{base}/search?q={SHARED}")).at("search");
    // Not signed in: the sign-in page, where the LAN token is typed.
    let field = s.wait_for("#signin-token", WAIT).at("the sign-in page");
    s.send_keys(&field, token).at("type the token");
    let submit = s.find("#signin-submit").at("submit");
    s.click(&submit).at("sign in");
    s.wait_for("#nav-shared", WAIT).at("signed in as a visitor");
    s.goto(&format!("{base}/search?q={SHARED}")).at("search");
    let results = s.find_all("[data-testid=result]").at("results");
    assert_eq!(results.len(), 1, "the shared library's document");
    let shared = s.text_of("#nav-shared").at("the shared list");
    assert!(shared.contains("team"), "{shared}");
    for hidden in [
        "#nav-settings",
        "#nav-agents",
        "#nav-notes",
        "#nav-libraries",
        "#nav-overview",
    ] {
        assert!(
            s.find_all(hidden).at(hidden).is_empty(),
            "the visitor's sidebar shows {hidden}"
        );
    }
    shot(s, "es", "visitor-search");
    s.goto(&format!("{base}/search?q={PRIVATE}")).at("search");
    assert!(
        s.find_all("[data-testid=result]").at("results").is_empty(),
        "the unshared folder's document was found by a visitor"
    );
    // The person's pages: refused, in Spanish, saying why.
    s.goto(&format!("{base}/settings")).at("settings");
    let refused = s.text_of("#refused").at("the refusal");
    assert_eq!(
        s.exec("return document.documentElement.lang;", &[])
            .at("lang"),
        serde_json::json!("es")
    );
    assert!(!refused.is_empty());
    shot(s, "es", "visitor-refused");
}
