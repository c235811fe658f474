//! The command line as people meet it: help with examples, shell completions and manual
//! pages generated from the same definition the binary parses.

use std::process::Command;

use crate::{run_salvage, TestResult};

/// Every command `salvage --help` lists.
fn commands() -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let out = run_salvage(&["--help".as_ref()])?;
    let help = String::from_utf8(out.stdout)?;
    let listed = help
        .split("Commands:")
        .nth(1)
        .ok_or("no command list in --help")?
        .split("Options:")
        .next()
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("  ").filter(|c| !c.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert!(listed.len() >= 10, "{listed:?}");
    Ok(listed)
}

#[test]
fn every_command_shows_examples_of_itself() -> TestResult {
    for command in commands()? {
        let out = run_salvage(&[command.as_ref(), "--help".as_ref()])?;
        assert_eq!(out.status.code(), Some(0), "{command}");
        let help = String::from_utf8(out.stdout)?;
        let examples = help
            .split("Examples:")
            .nth(1)
            .ok_or_else(|| format!("`salvage {command} --help` shows no examples"))?;
        assert!(
            examples.contains(&format!("salvage {command}")),
            "`salvage {command} --help` examples do not run it:\n{examples}"
        );
    }
    Ok(())
}

/// What bash offers on a Tab after `words` (the last of them the word being completed,
/// `""` for a new one), with the script `salvage completions bash` prints loaded.
fn bash_offers(words: &str) -> Result<String, Box<dyn std::error::Error>> {
    let out = run_salvage(&["completions".as_ref(), "bash".as_ref()])?;
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout)?;
    // Loaded into a real bash and asked, as the shell asks on a Tab.
    let program = format!(
        "{script}\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
         COMP_LINE=\"{words}\"; COMP_POINT=${{#COMP_LINE}}; _salvage salvage \
         \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let out = Command::new("bash").arg("-c").arg(program).output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

#[test]
fn bash_completion_completes_commands_and_flags() -> TestResult {
    let ask = bash_offers;
    let commands = ask("salvage re")?;
    for expected in ["recover", "report", "repair", "restore"] {
        assert!(
            commands.lines().any(|l| l == expected),
            "`salvage re<Tab>` does not offer {expected}: {commands}"
        );
    }
    let flags = ask("salvage recover --allow")?;
    assert!(
        flags.lines().any(|l| l == "--allow-partial"),
        "`salvage recover --allow<Tab>`: {flags}"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = run_salvage(&["completions".as_ref(), shell.as_ref()])?;
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(
            String::from_utf8(out.stdout)?.contains("recover"),
            "{shell}"
        );
    }
    Ok(())
}

#[test]
fn manual_pages_render_for_salvage_and_each_command() -> TestResult {
    let mut pages = vec![(None, String::from("salvage"))];
    pages.extend(
        commands()?
            .into_iter()
            .map(|c| (Some(c.clone()), format!("salvage-{c}"))),
    );
    for (command, title) in pages {
        let mut args: Vec<&std::ffi::OsStr> = vec!["man".as_ref()];
        args.extend(command.as_deref().map(std::ffi::OsStr::new));
        let out = run_salvage(&args)?;
        assert_eq!(out.status.code(), Some(0), "{title}");
        let roff = String::from_utf8(out.stdout)?;
        assert!(roff.contains(&format!(".TH {title} 1")), "{title}:\n{roff}");
        assert!(roff.contains(".SH SYNOPSIS"), "{title}");
        // Rendered the way `man` renders it, when groff is here: the page is well-formed
        // and says what its command does.
        if let Ok(rendered) = Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                if let Some(mut stdin) = child.stdin.take() {
                    stdin.write_all(roff.as_bytes())?;
                }
                child.wait_with_output()
            })
        {
            assert!(
                rendered.status.success() && rendered.stderr.is_empty(),
                "{title}: groff: {}",
                String::from_utf8_lossy(&rendered.stderr)
            );
        }
    }
    let recover = String::from_utf8(run_salvage(&["man".as_ref(), "recover".as_ref()])?.stdout)?;
    assert!(recover.contains(r"\-\-allow\-partial"), "{recover}");
    let out = run_salvage(&["man".as_ref(), "nonsense".as_ref()])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)?.contains("recover"));
    Ok(())
}

/// `salvage man <Tab>` offers the commands whose pages it prints.
#[test]
fn completing_man_offers_the_commands() -> TestResult {
    let offered = bash_offers("salvage man \"\"")?;
    let offered: Vec<&str> = offered.lines().collect();
    for command in commands()? {
        assert!(
            offered.contains(&command.as_str()),
            "`salvage man <Tab>` does not offer {command}: {offered:?}"
        );
    }
    let offered = bash_offers("salvage man re")?;
    let mut offered: Vec<&str> = offered.lines().collect();
    offered.sort_unstable();
    assert_eq!(offered, ["recover", "repair", "report", "restore"]);
    Ok(())
}

/// Every manual page says what each exit status means, as the CLI reference does: a
/// section EXIT STATUS after the examples, with 0 to 4.
#[test]
fn manual_pages_say_what_each_exit_status_means() -> TestResult {
    let mut pages: Vec<Option<String>> = vec![None];
    pages.extend(commands()?.into_iter().map(Some));
    for command in pages {
        let mut args: Vec<&std::ffi::OsStr> = vec!["man".as_ref()];
        args.extend(command.as_deref().map(std::ffi::OsStr::new));
        let roff = String::from_utf8(run_salvage(&args)?.stdout)?;
        let (before, section) = roff
            .split_once(".SH \"EXIT STATUS\"\n")
            .ok_or_else(|| format!("{command:?}: no EXIT STATUS:\n{roff}"))?;
        // After the description, the options and the examples; before the version.
        assert!(before.contains(".SH DESCRIPTION"), "{command:?}");
        assert!(!before.contains(".SH VERSION"), "{command:?}");
        let section = section.split("\n.SH ").next().unwrap_or_default();
        for code in ["0", "1", "2", "3", "4"] {
            assert!(
                section.contains(&format!(".TP\n\\fB{code}\\fR\n")),
                "{command:?}: exit status {code}:\n{section}"
            );
        }
        assert!(section.contains("Refused"), "{section}");
        assert!(section.contains("withheld"), "{section}");
    }
    Ok(())
}

/// `salvage report` given a database (or anything else that is not a loss report's JSON)
/// refuses it (exit 2), saying what it is, and points to `salvage inspect`.
#[test]
fn report_refuses_a_database_and_points_to_inspect() -> TestResult {
    let dir = crate::Scratch::new("report-a-database");
    let db = dir.path("some.db");
    rusqlite::Connection::open(&db)?
        .execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (x'ff00fe');")?;
    let binary = dir.path("random.bin");
    std::fs::write(
        &binary,
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect::<Vec<u8>>(),
    )?;
    for (path, what) in [
        (&db, "is a SQLite database, not a loss report"),
        (&binary, "is not a loss report: it is not text"),
    ] {
        let out = run_salvage(&["report".as_ref(), path.as_os_str()])?;
        let said = String::from_utf8(out.stderr)?;
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(out.stdout.is_empty());
        assert!(said.starts_with("error: `"), "{said}");
        assert!(said.contains(what), "{said}");
        let hint = said
            .split_once("\n\nhint: ")
            .map(|(_, h)| h)
            .unwrap_or_default();
        assert!(
            hint.starts_with(&format!(
                "this is not a loss report; `salvage inspect {}` reads a database",
                path.display()
            )),
            "{said}"
        );
    }
    Ok(())
}
