//! `fuzz TARGET [--runs N] [--seed S] [--limit-ms MS]`: runs a target on mutations of the
//! fixtures and writes each input that panics or runs past the limit to
//! `fuzz/found/TARGET-N.bin` (add it to `fuzz/regressions/` with its fix). Exit 1 when any
//! was found.

use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!(
            "usage: fuzz TARGET [--runs N] [--seed S] [--limit-ms MS]\ntargets: {}",
            fuzz::TARGETS.map(|(n, _)| n).join(", ")
        );
        std::process::exit(2);
    };
    let Some(target) = fuzz::target(name) else {
        eprintln!("unknown target `{name}`");
        std::process::exit(2);
    };
    let value = |flag: &str, default: u64| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (runs, seed, limit) = (
        value("--runs", 100_000),
        value("--seed", 1),
        value("--limit-ms", 10_000),
    );
    // The first 64 KiB of each seed file: every structure, and a mutation is cheap.
    let seeds = fuzz::seeds(64 << 10);
    let started = std::time::Instant::now();
    // Panics are expected and caught: their messages would only flood the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    let out = fuzz::run(target, &seeds, runs, seed, Duration::from_millis(limit));
    let _ = std::panic::take_hook();
    let found = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("found");
    let mut n = 0;
    for (input, _) in out
        .crashes
        .iter()
        .map(|(i, w)| (i, w.clone()))
        .chain(out.slow.iter().map(|(i, d)| (i, format!("took {d:?}"))))
    {
        let _ = std::fs::create_dir_all(&found);
        let _ = std::fs::write(found.join(format!("{name}-{n}.bin")), input);
        n += 1;
    }
    eprintln!(
        "{name}: {} runs in {:.1?} ({:.0}/s), {} panics, {} past {limit} ms",
        out.runs,
        started.elapsed(),
        out.runs as f64 / started.elapsed().as_secs_f64().max(1e-9),
        out.crashes.len(),
        out.slow.len()
    );
    for (_, why) in &out.crashes {
        eprintln!("  panic: {why}");
    }
    if n > 0 {
        eprintln!("inputs written to {}", found.display());
        std::process::exit(1);
    }
}
