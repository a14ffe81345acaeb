//! The Settings page (issue 44) in Chromium against the real `linkly serve`, in French and in
//! Spanish: a folder added there is watched and indexed at once (its words come up in search);
//! an exclusion takes its documents out of search and removing it brings them back; a bad
//! folder, a bad pattern and an OCR language Tesseract lacks are refused with what to do and
//! nothing saved; the audio transcription switch (off by default) makes the waiting media file
//! move on to the next step; a setting changed by another program under an open page is
//! refused with the value now; a foreign file given as a model is refused; the person's note
//! takes a heading and a link and carries the "you" badge. Screenshots of the page in French, Spanish and English go to
//! `target/ui-screenshots/<lang>/settings.png`.

use crate::browser;
use crate::common;
use crate::ui::{Step, WAIT, browser_or_skip, fail_with_page, number, serve, shot, shots_dir};

use browser::Session;
use common::Env;
use serde_json::json;

/// A word only the kept document holds, and one only the draft holds.
const KEPT: &str = "zanzibarite";
const DRAFT: &str = "quokkaflux";

#[test]
fn settings_in_chromium() {
    let Some((chromium, chromedriver)) = browser_or_skip() else {
        return;
    };
    let env = Env::new(&[
        (
            "keep/alpha.md",
            &format!("# Alpha\n\nThe {KEPT} mineral report.\n"),
        ),
        (
            "drafts/beta.md",
            &format!("# Beta\n\nA {DRAFT} draft, not ready.\n"),
        ),
    ]);
    // A second of a tone: audio waiting for transcription.
    let tone: Vec<i16> = (0..16_000)
        .map(|i| ((i as f32 * 0.05).sin() * 8000.0) as i16)
        .collect();
    fs_err::write(
        env.docs.join("memo.wav"),
        linkly_extract::hand_made_wav::mono_16k(&tone),
    )
    .unwrap();
    let (_server, port) = serve(&env);
    let base = format!("http://127.0.0.1:{port}");
    let mut driver = browser::Driver::start(&chromedriver).at("start chromedriver");
    let mut s = driver.session(&chromium, "fr-FR").at("open Chromium");
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scenario(&mut s, &env, &base);
    }));
    if let Err(panic) = run {
        fail_with_page(&mut s, &env, panic.as_ref(), "settings-failure.png");
    }
    s.close().at("close the browser");
}

/// How many results a search gives, as the page shows them.
fn hits(s: &mut Session<'_>, base: &str, q: &str) -> browser::Result<usize> {
    s.goto(&format!("{base}/search?q={q}"))?;
    Ok(s.find_all("[data-testid=result]")?.len())
}

/// Types into a field and submits its form with the button.
fn submit(s: &mut Session<'_>, field: &str, text: &str, button: &str) {
    let input = s.find(field).at(field);
    s.clear(&input).at("clear");
    s.send_keys(&input, text).at("type");
    let b = s.find(button).at(button);
    s.click(&b).at(button);
}

/// The refusal shown for a key, once the page shows one.
fn refusal(s: &mut Session<'_>, key: &str) -> String {
    let css = format!("[data-testid=setting-error][data-key='{key}']");
    let e = s.wait_for(&css, WAIT).at(&css);
    s.text(&e).at("refusal text")
}

fn config(env: &Env) -> String {
    fs_err::read_to_string(env.home.join("config.toml")).unwrap_or_default()
}

fn scenario(s: &mut Session<'_>, env: &Env, base: &str) {
    let docs = env.docs.to_str().unwrap();
    // The person signs the browser in as `linkly open` does: its one-time address.
    let open = env.run_ok(&["open", "--no-browser"]);
    let link = String::from_utf8_lossy(&open.stdout).trim().to_string();
    assert!(link.starts_with(&format!("{base}/signin/link/")), "{link}");
    s.goto(&link).at("sign in through linkly open");
    s.goto(&format!("{base}/settings")).at("open the settings");
    assert_eq!(
        s.exec("return document.documentElement.lang;", &[])
            .at("lang"),
        json!("fr"),
        "the browser's language is French"
    );
    let heading = s.text_of("h1").at("title");
    assert_eq!(heading, "Réglages");

    // A folder that does not exist: refused in French, nothing saved.
    submit(
        s,
        "#settings-folder-path",
        "/pas/de/tel/dossier",
        "#settings-folder-add",
    );
    let why = refusal(s, "folders");
    assert!(why.contains("n’existe pas"), "{why}");
    assert!(!config(env).contains("pas/de/tel"), "nothing saved");

    // Add the folder: watched and indexed at once, its words searchable without a restart.
    submit(s, "#settings-folder-path", docs, "#settings-folder-add");
    s.wait_for("[data-testid=setting-folder]", WAIT)
        .at("the folder listed");
    s.wait_until("the draft searchable", WAIT, |s| {
        Ok(hits(s, base, DRAFT)? == 1)
    })
    .at("indexed at once");
    assert_eq!(hits(s, base, KEPT).at("kept"), 1);
    // The count's plural is French's (0 takes the singular), and the tools' notice and the
    // empty answer's guidance are in French too.
    let count = s.text_of("[data-testid=result-count]").at("count");
    assert!(count.starts_with("1 document trouvé"), "{count}");
    assert_eq!(hits(s, base, "introuvablemot").at("nothing"), 0);
    let count = s.text_of("[data-testid=result-count]").at("count");
    assert!(count.starts_with("0 document trouvé"), "{count}");
    let notice = s
        .text_of("[data-testid=search-notice][data-key='keyword_only.missing']")
        .at("keyword-only notice");
    assert!(notice.starts_with("Recherche par mots-clés"), "{notice}");
    assert!(
        !s.find_all("[data-testid=notice-download]")
            .at("button")
            .is_empty(),
        "the notice offers the download button"
    );
    let guidance = s.text_of("[data-testid=search-guidance]").at("guidance");
    assert!(guidance.contains("orthographe"), "{guidance}");

    // A pattern that does not parse: refused, nothing saved.
    s.goto(&format!("{base}/settings")).at("settings");
    submit(s, "#exclude-pattern", "drafts/[", "#exclude-add");
    let why = refusal(s, "exclude");
    assert!(why.contains("drafts/["), "{why}");
    assert!(!config(env).contains("drafts/["), "nothing saved");

    // Exclude the drafts: their document leaves search, the other stays.
    submit(s, "#exclude-pattern", "drafts/**", "#exclude-add");
    s.wait_for("[data-testid=exclusion]", WAIT)
        .at("the exclusion listed");
    s.wait_until("the draft gone from search", WAIT, |s| {
        Ok(hits(s, base, DRAFT)? == 0)
    })
    .at("excluded");
    assert_eq!(hits(s, base, KEPT).at("kept"), 1, "the rest stays");

    // An OCR language Tesseract does not have: refused, saying which and what is installed.
    s.goto(&format!("{base}/settings")).at("settings");
    submit(s, "#ocr-languages", "eng, xyz", "#ocr-languages-save");
    let why = refusal(s, "ocr.languages");
    assert!(why.contains("xyz"), "{why}");
    assert!(!config(env).contains("xyz"), "nothing saved");

    // Transcription: off by default, the tone waits for the switch; turned on, it moves on to
    // waiting for a speech model (none is installed here).
    s.goto(&format!("{base}/settings")).at("settings");
    let waiting = s.find("[data-testid=media-waiting]").at("waiting");
    let n = s
        .attr(&waiting, "data-count")
        .at("count")
        .unwrap_or_default();
    assert_eq!(n, "1", "the tone waits");
    let audio = s.find("#transcribe-audio").at("audio switch");
    assert_eq!(
        s.attr(&audio, "data-on").at("state").as_deref(),
        Some("false"),
        "off by default"
    );
    shot(s, "fr", "settings");
    s.screenshot_full(&shots_dir().join("fr").join("settings-full.png"), 2400)
        .at("full settings");
    s.click(&audio).at("turn audio transcription on");
    s.wait_until("the switch on", WAIT, |s| {
        let b = s.find("#transcribe-audio")?;
        Ok(s.attr(&b, "data-on")?.as_deref() == Some("true"))
    })
    .at("switched");
    assert!(config(env).contains("audio = true"), "{}", config(env));
    s.wait_until("the tone read again", WAIT, |s| {
        s.goto(&format!("{base}/"))?;
        Ok(!s
            .find_all("[data-testid=skip-group][data-code=transcription_unavailable]")?
            .is_empty())
    })
    .at("transcription started");
    assert!(
        s.find_all("[data-testid=skip-group][data-code=transcription_off]")
            .at("groups")
            .is_empty(),
        "nothing waits for the switch any more"
    );
    let media = s
        .text_of("[data-testid=skip-media-heading]")
        .at("media group");
    assert_eq!(media, "Audio et vidéo");

    // Another program changes a setting under the open page: the page's save is refused and
    // shows the value now.
    s.goto(&format!("{base}/settings")).at("settings");
    let out = env.run(&["config", "set", "transcription.video", "on"]);
    assert!(out.status.success(), "{out:?}");
    let video = s.find("#transcribe-video").at("video switch");
    s.click(&video).at("turn video on, late");
    let why = refusal(s, "transcription.video");
    assert!(why.contains("autre fenêtre"), "{why}");
    let video = s.find("#transcribe-video").at("video switch");
    assert_eq!(
        s.attr(&video, "data-on").at("state").as_deref(),
        Some("true"),
        "the value now"
    );

    // Spanish: remove the exclusion; the draft comes back.
    s.goto(&format!("{base}/settings")).at("settings");
    let select = s.find("#lang-select").at("language switch");
    let option = s.find("#lang-select option[value=es]").at("es");
    s.click(&select).at("open the switch");
    s.click(&option).at("pick Spanish");
    s.wait_until("the page in Spanish", WAIT, |s| {
        Ok(s.exec("return document.documentElement.lang;", &[])? == json!("es"))
    })
    .at("es");
    assert_eq!(s.text_of("h1").at("title"), "Ajustes");
    shot(s, "es", "settings");
    let remove = s
        .find("[data-testid=exclusion-remove]")
        .at("remove the exclusion");
    s.click(&remove).at("remove");
    s.wait_until("the draft back in search", WAIT, |s| {
        Ok(hits(s, base, DRAFT)? == 1)
    })
    .at("back");
    // A bad folder in Spanish.
    s.goto(&format!("{base}/settings")).at("settings");
    submit(
        s,
        "#settings-folder-path",
        "/no/existe/esta",
        "#settings-folder-add",
    );
    let why = refusal(s, "folders");
    assert!(why.contains("no existe"), "{why}");

    // A foreign file given as a model: refused, saying what a model folder holds.
    let foreign = env.docs.join("keep").join("alpha.md");
    submit(
        s,
        "#model-import-path",
        foreign.to_str().unwrap(),
        "#model-import",
    );
    let why = refusal(s, "model");
    assert!(
        why.starts_with("No se importó") && why.contains("Whisper"),
        "{why}"
    );
    assert!(
        s.find_all("[data-testid=model-on-disk]")
            .at("models")
            .is_empty(),
        "nothing installed"
    );

    // The person's note: a heading and a link (refused to agents), saved, with the "you" badge.
    s.goto(&format!("{base}/notes/new")).at("new note");
    let body = s.wait_for("#note-body", WAIT).at("editor");
    s.send_keys(
        &body,
        "# Plan de viaje\n\nVer [el mapa](https://example.org/mapa) antes.\n\n#viaje",
    )
    .at("write");
    let save = s.find("#note-save").at("save");
    s.click(&save).at("save");
    s.wait_until("saved", WAIT, |s| Ok(s.url()?.contains("done=saved")))
        .at("the note saved");
    let text = s
        .exec("return document.querySelector('#note-body').value;", &[])
        .at("body");
    assert!(
        text.as_str()
            .unwrap_or_default()
            .contains("# Plan de viaje")
            && text
                .as_str()
                .unwrap_or_default()
                .contains("(https://example.org/mapa)"),
        "{text}"
    );
    s.goto(&format!("{base}/notes")).at("notes");
    let badge = s
        .wait_for("[data-testid=note-source][data-source=you]", WAIT)
        .at("badge");
    assert_eq!(s.text(&badge).at("badge text"), "usted");

    // English, for the record.
    s.goto(&format!("{base}/settings")).at("settings");
    let select = s.find("#lang-select").at("language switch");
    let option = s.find("#lang-select option[value=en]").at("en");
    s.click(&select).at("open the switch");
    s.click(&option).at("pick English");
    s.wait_until("the page in English", WAIT, |s| {
        Ok(s.exec("return document.documentElement.lang;", &[])? == json!("en"))
    })
    .at("en");
    let n = number(&s.text_of("[data-testid=media-waiting]").at("waiting"));
    assert_eq!(n, 1, "one media file still waits (for a speech model)");
    shot(s, "en", "settings");
    s.screenshot_full(&shots_dir().join("en").join("settings-full.png"), 2400)
        .at("full settings");
}
