//! `salvage report --format html`: one self-contained page, loaded in a real headless
//! browser (Chromium, which `.ci/run` installs from Debian's packages): the page map is
//! drawn, a cell per page in the colours of the classes, and the tables are there.

use std::path::{Path, PathBuf};
use std::process::Command;

use fixtures::{Damage, Kind, Options};

use recovery::report::map::Orphan;

use crate::{run_salvage, Scratch, TestResult};

/// The headless browser: `SALVAGE_CHROMIUM`, else `chromium` on the `PATH`.
fn chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("SALVAGE_CHROMIUM") {
        return Ok(p.into());
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "no chromium on the PATH: `.ci/run` installs it (Debian's package `chromium`), \
             or set SALVAGE_CHROMIUM"
                .to_string()
        })
}

/// Chromium, headless, with nothing of its own on the network, on `page`.
fn browse(
    page: &Path,
    profile: &Path,
    action: &[&str],
) -> Result<std::process::Output, Box<dyn std::error::Error>> {
    let url = format!("file://{}", page.display());
    Ok(Command::new(chromium()?)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(action)
        .arg(url)
        .output()?)
}

/// The colours of the screenshot's pixels, as RGB.
fn pixels(
    png_file: &Path,
) -> Result<std::collections::HashSet<[u8; 3]>, Box<dyn std::error::Error>> {
    let decoder = png::Decoder::new(std::fs::File::open(png_file)?);
    let mut reader = decoder.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf)?;
    let step = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        other => return Err(format!("screenshot in {other:?}").into()),
    };
    Ok(buf[..info.buffer_size()]
        .chunks_exact(step)
        .map(|p| [p[0], p[1], p[2]])
        .collect())
}

#[test]
fn the_html_report_draws_the_page_map_in_a_real_browser() -> TestResult {
    // An agent store whose parent table's page is zeroed and whose child table lost its
    // root: zeroed pages, and orphan leaves given back to `messages` by evidence.
    let f = fixtures::build(Kind::AgentStore, &Options::default());
    let mut bytes = f.bytes.clone();
    for d in [
        Damage::ZeroPage(f.roots["sessions"]),
        Damage::ZeroPage(f.roots["messages"]),
    ] {
        fixtures::apply(&mut bytes, &d)?;
    }
    let dir = Scratch::new("report-html");
    let src = dir.path("state.db");
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        recovery::Outcome::PartialCommitted,
    )?;
    let report = &done.report;
    let map = &report.pages.map;
    let pages = u64::from(report.geometry.page_count);
    assert_eq!(map.pages_per_cell, 1);
    let runs = &map.runs;
    let covered: u64 = runs
        .iter()
        .map(|r| u64::from(r.last) + 1 - u64::from(r.first))
        .sum();
    assert_eq!(covered, pages, "the map's runs cover every page once");
    assert!(runs.iter().any(|r| r.class == "zeroed"));
    assert!(
        runs.iter().any(
            |r| r.orphan == Some(Orphan::Attributed) && r.object.as_deref() == Some("messages")
        ),
        "{runs:?}"
    );

    let out = run_salvage(&[
        "report".as_ref(),
        dir.path("out.db.report.json").as_os_str(),
        "--format".as_ref(),
        "html".as_ref(),
    ])?;
    assert_eq!(out.status.code(), Some(3));
    let html = String::from_utf8(out.stdout)?;
    // Self-contained: nothing to fetch, no script, and a policy that forbids both.
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    for banned in ["<script", "src=", "href=", "http:", "https:", "url("] {
        assert!(!html.contains(banned), "the page holds `{banned}`");
    }
    let page = dir.path("report.html");
    std::fs::write(&page, &html)?;

    // The browser's reading of the page: the map with a cell per page, the tables.
    let dom = browse(&page, &dir.path("profile-dom"), &["--dump-dom"])?;
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8(dom.stdout)?;
    let drawn = dom
        .split("id=\"map\"")
        .nth(1)
        .and_then(|m| m.split("</div>").next())
        .ok_or("no map in the page the browser read")?;
    assert_eq!(drawn.matches("<i class=\"c ").count() as u64, pages);
    let tables = dom
        .split("id=\"tables\"")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .ok_or("no table of tables")?;
    for name in ["sessions", "messages", "state_meta"] {
        assert!(tables.contains(&format!("<code>{name}</code>")), "{name}");
    }
    assert!(dom.contains(&report.source.sha256_before));

    // The page as drawn: the zeroed pages' black, the outline of orphan pages given to a
    // table, and the verdict's red border are on the screen.
    let shot = dir.path("shot.png");
    let drawn = browse(
        &page,
        &dir.path("profile-shot"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,1000",
        ],
    )?;
    assert!(shot.is_file(), "{}", String::from_utf8_lossy(&drawn.stderr));
    let colours = pixels(&shot)?;
    for (what, rgb) in [
        ("zeroed page", [0x11, 0x11, 0x11]),
        ("orphan outline", [0xff, 0x8c, 0x00]),
        ("verdict border", [0xd7, 0x19, 0x1c]),
    ] {
        assert!(
            colours.contains(&rgb),
            "no {what} colour {rgb:?} on the screen"
        );
    }
    Ok(())
}

/// A file of more pages than the map has cells: each cell stands for several pages, and a
/// single zeroed page among thousands of healthy ones still shows.
#[test]
fn on_a_big_file_the_map_keeps_one_zeroed_page_in_sight() -> TestResult {
    let dir = Scratch::new("report-html-big");
    let src = dir.path("big.db");
    let conn = rusqlite::Connection::open(&src)?;
    conn.execute_batch(
        "PRAGMA page_size = 512;
         CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 30000)
         INSERT INTO notes SELECT x, printf('%.150c', 'n') FROM i;",
    )?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    let pages = (bytes.len() / 512) as u32;
    assert!(pages > 2 * recovery::report::map::MAP_CELLS, "{pages}");
    let leaves = fixtures::table_pages(&bytes, 2).leaves;
    let victim = leaves[leaves.len() / 2];
    fixtures::apply(&mut bytes, &Damage::ZeroPage(victim))?;
    std::fs::write(&src, &bytes)?;
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dir.path("out.db")),
        recovery::Outcome::PartialCommitted,
    )?;
    let map = &done.report.pages.map;
    let per = map.pages_per_cell;
    assert_eq!(per, pages.div_ceil(recovery::report::map::MAP_CELLS));
    let runs = &map.runs;
    let zeroed: Vec<_> = runs.iter().filter(|r| r.class == "zeroed").collect();
    assert_eq!(zeroed.len(), 1, "{zeroed:?}");
    let (first, last) = (zeroed[0].first, zeroed[0].last);
    assert!(
        first <= victim && victim <= last && last - first < per,
        "{first}..{last} for {victim}"
    );
    let cells: u32 = runs.iter().map(|r| (r.last - r.first) / per + 1).sum();
    assert!(cells <= recovery::report::map::MAP_CELLS, "{cells} cells");
    // The cell says how many of its pages are zeroed (one), and what the others are.
    let mix = &zeroed[0].mix;
    assert_eq!(
        mix.first().map(|m| (m.class.as_str(), m.pages)),
        Some(("zeroed", 1)),
        "{mix:?}"
    );
    assert_eq!(
        mix.iter().map(|m| m.pages).sum::<u32>(),
        last - first + 1,
        "{mix:?}"
    );
    let out = run_salvage(&[
        "report".as_ref(),
        dir.path("out.db.report.json").as_os_str(),
        "--format".as_ref(),
        "html".as_ref(),
    ])?;
    let html = String::from_utf8(out.stdout)?;
    let title = html
        .split(" title=\"")
        .skip(1)
        .filter_map(|t| t.split('"').next())
        .find(|t| t.contains("zeroed"))
        .ok_or("no zeroed cell")?;
    assert!(
        title.starts_with(&format!("pages {first}–{last}: 1 zeroed page, ")),
        "{title}"
    );
    assert!(
        title.contains("table leaf page") && title.contains(" of notes"),
        "{title}"
    );
    Ok(())
}
