//! docs/interface.md is the contract scripts rely on: every flag the binary's `--help` lists for
//! a command must be written there, so the document cannot fall behind the program.

mod common;

fn flags_of(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix("-")
                .filter(|rest| !rest.starts_with('-'))
                .map(|rest| rest.split_once(", ").map(|(_, long)| long).unwrap_or(rest))
                .unwrap_or(line);
            let flag = line.strip_prefix("--")?.split([' ', '=']).next()?;
            (!matches!(flag, "help" | "version")).then(|| format!("--{flag}"))
        })
        .collect()
}

#[test]
fn every_flag_of_every_command_is_in_the_interface_document() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/interface.md"))
        .expect("docs/interface.md");
    let dir = tempfile::tempdir().expect("tempdir");
    let top = common::run(dir.path(), &["--help"]);
    let top = String::from_utf8_lossy(&top.stdout).into_owned();
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 8, "commands found: {commands:?}");
    let mut missing = Vec::new();
    for command in commands
        .iter()
        .map(|c| vec![c.as_str()])
        .chain([vec!["jobs", "show"]])
    {
        assert!(
            doc.contains(&format!("`hookscope {}", command.join(" "))),
            "docs/interface.md has no section for `hookscope {}`",
            command.join(" ")
        );
        let mut args = command.clone();
        args.push("--help");
        let out = common::run(dir.path(), &args);
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        let flags = flags_of(&help);
        assert!(
            !flags.is_empty() || command == ["import"],
            "{command:?}: {help}"
        );
        for flag in flags {
            if !doc.contains(&format!("`{flag}")) && !doc.contains(&format!(" {flag}")) {
                missing.push(format!("hookscope {} {flag}", command.join(" ")));
            }
        }
    }
    assert!(missing.is_empty(), "not in docs/interface.md: {missing:?}");
}

/// A fresh machine has no data folder yet: reading the history says there is nothing to read and
/// how to capture, exits 0, and creates nothing. An empty store reads the same way.
#[test]
fn reading_a_history_that_was_never_captured_says_how_to_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join("never").join("made");
    let out_file = dir.path().join("out.har");
    let out_arg = out_file.to_str().expect("utf-8 path");
    let commands: [&[&str]; 4] = [
        &["list"],
        &["list", "--json"],
        &["jobs"],
        &[
            "export", "--format", "har", "--filter", "", "--out", out_arg,
        ],
    ];
    for args in commands {
        let out = common::run(&fresh, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
        let store = fresh.join("hookscope.sqlite");
        assert!(
            stderr.contains(&format!("no deliveries yet (store: {})", store.display()))
                && stderr.contains("start `hookscope` or `hookscope listen` to capture"),
            "{args:?}: {stderr}"
        );
        assert!(!fresh.exists(), "{args:?} created the data folder");
        assert!(!out_file.exists(), "{args:?} wrote an export of nothing");
    }
    // A store that exists but holds nothing: made by `import` of an empty HAR, it reads the same.
    std::fs::create_dir_all(&fresh).expect("data dir");
    let har = dir.path().join("empty.har");
    std::fs::write(
        &har,
        r#"{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[]}}"#,
    )
    .expect("har");
    let imported = common::run(&fresh, &["import", har.to_str().expect("utf-8")]);
    assert!(
        fresh.join("hookscope.sqlite").exists(),
        "import made the store: {}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let out = common::run(&fresh, &["list"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no deliveries yet"));
}
