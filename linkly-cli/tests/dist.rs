//! What `cargo xtask dist` ships besides the binary: the man page (`linkly __man`) and the MCP
//! registry entry (`server.json` at the repository root).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn linkly(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_linkly"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "linkly {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn man_page_is_roff_naming_the_subcommands() {
    let page = linkly(&["__man"]);
    assert!(page.contains(".TH linkly 1"), "{page}");
    assert!(page.contains(".SH NAME") && page.contains(".SH SYNOPSIS"));
    assert!(page.contains(env!("CARGO_PKG_VERSION")));
    // roff escapes hyphens.
    let text = page.replace("\\-", "-");
    assert!(text.contains(".SH SUBCOMMANDS"), "{page}");
    for sub in [
        "index",
        "search",
        "outline",
        "grep",
        "read",
        "list-libraries",
        "explore",
        "find-paths",
        "note-save",
        "serve",
        "mcp",
        "model",
        "status",
        "doctor",
        "completions",
    ] {
        assert!(
            text.contains(&format!("linkly-{sub}(1)")) || text.contains(&format!("\n{sub}\n")),
            "the man page does not name `{sub}`"
        );
    }
    assert!(!text.contains("__extract-worker") && !text.contains("__man"));
    assert!(text.contains("--json") && text.contains("--home"));

    // With --dir: the page and one per subcommand, so the SEE ALSO-style references resolve.
    let tmp = tempfile::tempdir().unwrap();
    linkly(&["__man", "--dir", tmp.path().to_str().unwrap()]);
    for page in [
        "linkly.1",
        "linkly-search.1",
        "linkly-model.1",
        "linkly-model-download.1",
        "linkly-completions.1",
    ] {
        let text = fs_err::read_to_string(tmp.path().join(page)).unwrap();
        assert!(text.contains(".TH linkly"), "{page}");
    }
    let search = fs_err::read_to_string(tmp.path().join("linkly-search.1")).unwrap();
    assert!(search.contains("path\\-glob"), "{search}");
    assert!(!tmp.path().join("linkly-__man.1").exists());
}

#[test]
fn server_json_describes_this_version() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../server.json");
    let v: Value = serde_json::from_str(&fs_err::read_to_string(path).unwrap()).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        v["$schema"]
            .as_str()
            .unwrap()
            .starts_with("https://static.modelcontextprotocol.io/schemas/")
    );
    let name = v["name"].as_str().unwrap();
    let (namespace, server) = name.split_once('/').unwrap();
    let allowed = |s: &str, extra: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c) || extra.contains(c))
    };
    assert!(allowed(namespace, "") && allowed(server, "_"), "{name}");
    assert!(namespace.starts_with("io.github."), "{name}");
    let description = v["description"].as_str().unwrap();
    assert!((1..=100).contains(&description.chars().count()));
    assert_eq!(v["version"], version, "server.json's version");
    assert_eq!(v["repository"]["url"], env!("CARGO_PKG_REPOSITORY"));
    let packages = v["packages"].as_array().unwrap();
    let mut transports = Vec::new();
    for p in packages {
        match p["registryType"].as_str().unwrap() {
            "cargo" => assert_eq!(p["identifier"], env!("CARGO_PKG_NAME")),
            // The wheel (pyproject.toml's project name), run by uv.
            "pypi" => {
                let pyproject = fs_err::read_to_string(
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pyproject.toml"),
                )
                .unwrap();
                let name = p["identifier"].as_str().unwrap();
                assert!(pyproject.contains(&format!("name = \"{name}\"")), "{name}");
                assert_eq!(p["runtimeHint"], "uvx");
            }
            other => panic!("registry type {other}"),
        }
        assert_eq!(p["version"], version, "a package's version");
        // The arguments a client would pass, checked against the real command line.
        let mut argv: Vec<String> = Vec::new();
        for a in p["packageArguments"].as_array().unwrap() {
            match a["type"].as_str().unwrap() {
                "positional" => argv.push(a["value"].as_str().unwrap().into()),
                "named" => {
                    argv.push(a["name"].as_str().unwrap().into());
                    let value = a.get("value").or(a.get("default")).unwrap();
                    argv.push(value.as_str().unwrap().into());
                }
                other => panic!("argument type {other}"),
            }
        }
        let mut args: Vec<&str> = argv.iter().map(String::as_str).collect();
        args.push("--help");
        linkly(&args);
        let transport = p["transport"]["type"].as_str().unwrap();
        match transport {
            "stdio" => assert_eq!(argv, ["mcp"]),
            "streamable-http" => {
                assert_eq!(argv[0], "serve");
                assert_eq!(p["transport"]["url"], "http://127.0.0.1:{port}/mcp");
                assert!(
                    p["packageArguments"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|a| a["valueHint"] == "port" && a["name"] == "--port")
                );
            }
            other => panic!("transport {other}"),
        }
        transports.push(transport);
    }
    assert_eq!(transports, ["stdio", "streamable-http", "stdio"]);
}
