//! `fuzz TARGET [--runs N] [--seed S] [--limit-ms MS] [--from-round K] [--minutes M]`: runs a target on
//! mutations of the fixtures and writes each input that panics, fails or runs past the limit to
//! `fuzz/found/TARGET-SEED-ROUND-N.bin` as soon as it has (add it to `fuzz/regressions/` with its
//! fix), and says every five minutes how many inputs have run. Exit 1 when any was found. A run goes in rounds of 100,000 inputs, each from its own seed; `--from-round`
//! goes on with a run that was stopped, so that one long run can be done in parts;
//! `--minutes` stops it after that long, and says how many inputs it ran.
//! `fuzz TARGET --replay FILE…` runs the target once on each file and says how long it took.

use std::time::Duration;

fn main() {
    // Inputs run one at a time on this thread: the differential target's databases are
    // then the same at every replay of their seed.
    fixtures::random::replay_exactly();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!(
            "usage: fuzz TARGET [--runs N] [--seed S] [--limit-ms MS] [--from-round K] [--minutes M]\ntargets: {}",
            fuzz::TARGETS.map(|t| t.name).join(", ")
        );
        std::process::exit(2);
    };
    let Some(target) = fuzz::target(name) else {
        eprintln!("unknown target `{name}`");
        std::process::exit(2);
    };
    // `--replay FILE…`: each file run once, with its time, as a found input is checked.
    if let Some(at) = args.iter().position(|a| a == "--replay") {
        std::panic::set_hook(Box::new(|_| {}));
        let mut failed = false;
        for file in args.iter().skip(at + 1) {
            let Ok(input) = std::fs::read(file) else {
                eprintln!("{file}: cannot read");
                failed = true;
                continue;
            };
            let started = std::time::Instant::now();
            let result = std::panic::catch_unwind(|| (target.run)(&input));
            let took = started.elapsed();
            let how = match result {
                Ok(Ok(())) => "ran".to_string(),
                Ok(Err(why)) => format!("FAILED ({why})"),
                Err(_) => "PANICKED".to_string(),
            };
            failed |= how != "ran";
            eprintln!("{file}: {how} in {took:.2?}");
        }
        std::process::exit(i32::from(failed));
    }
    let value = |flag: &str, default: u64| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (runs, seed, limit, first) = (
        value("--runs", 100_000),
        value("--seed", 1),
        value("--limit-ms", 10_000),
        value("--from-round", 0),
    );
    let minutes = value("--minutes", 0);
    // The first 64 KiB of each seed file: every structure, and a mutation is cheap.
    let seeds = target.seeds(64 << 10);
    let started = std::time::Instant::now();
    let until = (minutes > 0).then(|| started + Duration::from_secs(minutes.saturating_mul(60)));
    eprintln!(
        "{name}: {} seed inputs, {} bytes in all",
        seeds.len(),
        seeds.iter().map(Vec::len).sum::<usize>()
    );
    // Panics are expected and caught: their messages would only flood the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    let found = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("found");
    // Run in rounds, each from its own seed, so that a long run killed before its end
    // has said how far it got and kept what it found.
    // Rounds before `first` ran in an earlier part of the same run: they count as done.
    let (mut done, mut crashes, mut failures, mut slow, mut n) = (
        first.saturating_mul(ROUND).min(runs),
        0usize,
        0usize,
        0usize,
        0usize,
    );
    let resumed = done;
    for round in first.. {
        let count = ROUND.min(runs - done);
        if count == 0 {
            break;
        }
        let round_seed = if round == 0 {
            seed
        } else {
            seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        };
        // Each input found is written at once, and the count said now and then: a run
        // killed before its end has kept what it found and said how far it got.
        let out = fuzz::run_until(
            target,
            &seeds,
            count,
            round_seed,
            Duration::from_millis(limit),
            until,
            &mut |event| match event {
                fuzz::Event::Found(input, why) => {
                    let _ = std::fs::create_dir_all(&found);
                    let path = found.join(format!("{name}-{seed}-{round}-{n}.bin"));
                    let _ = std::fs::write(&path, input);
                    eprintln!("  {why}: {}", path.display());
                    n += 1;
                }
                fuzz::Event::Ran(runs) => eprintln!(
                    "{name}: round {round}, {runs} inputs run so far ({:.0?} in this part)",
                    started.elapsed()
                ),
            },
        );
        done += out.runs;
        crashes += out.crashes.len();
        failures += out.failures.len();
        slow += out.slow.len();
        let stopped = out.runs < count;
        let round_end = if stopped {
            format!(
                "stopped after {minutes} minutes in round {round}, after its first {} inputs",
                out.runs
            )
        } else {
            format!("round {round} done")
        };
        eprintln!(
            "{name}: {round_end}, {done} runs (this part {:.1?}, {:.0}/s), {crashes} panics, {failures} failures, {slow} past {limit} ms",
            started.elapsed(),
            (done - resumed) as f64 / started.elapsed().as_secs_f64().max(1e-9),
        );
        if stopped {
            break;
        }
    }
    let _ = std::panic::take_hook();
    if n > 0 {
        eprintln!("inputs written to {}", found.display());
        std::process::exit(1);
    }
}

/// Inputs per round: the runner reports after each.
const ROUND: u64 = 100_000;
