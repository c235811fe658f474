//! A switch for the crash tests: `SALVAGE_FAULT_AT=PHASE` ends the process at once (exit
//! 99: no unwinding, no cleanup, nothing flushed) at the named boundary between two phases
//! of `repair`, `backup` or `restore`, so that a test can look at what a crash there leaves
//! on disk.
//! Unset, or naming another phase, it does nothing.

/// The environment variable that names the phase to stop at.
pub const VAR: &str = "SALVAGE_FAULT_AT";

/// The exit status of a process the switch stopped.
pub const EXIT: i32 = 99;

/// The boundaries of `repair` (each right after its journal records the phase), in the
/// order it reaches them.
pub const REPAIR_PHASES: [&str; 7] = [
    "repair:validated",
    "repair:archived",
    "repair:recovered",
    "repair:verified",
    "repair:fenced",
    "repair:swapped",
    "repair:done",
];

/// The boundaries of `backup`, in the order it reaches them.
pub const BACKUP_PHASES: [&str; 8] = [
    // `NAME.incomplete/` created, empty.
    "backup:created",
    // The first file copied (of a folder, the others not yet).
    "backup:copying",
    // Every file copied, nothing checked.
    "backup:copied",
    // Every copy checked (quick_check, row counts) and hashed; no manifest yet.
    "backup:verified",
    // The manifest written and every file synced and read-only; not renamed yet.
    "backup:manifest",
    // Renamed into place; older backups not pruned yet.
    "backup:renamed",
    // The first backup to prune renamed to `NAME.pruned`, not removed yet.
    "backup:pruning",
    // Every backup beyond `--keep` removed.
    "backup:pruned",
];

/// The boundaries of `restore`, in the order it reaches them.
pub const RESTORE_PHASES: [&str; 6] = [
    // The backup verified and the target checked; nothing created or moved.
    "restore:checked",
    // The first file copied into `TARGET.incomplete`.
    "restore:staging",
    // Every file copied into `TARGET.incomplete`, hashed and checked.
    "restore:staged",
    // The target moved aside, its sidecars not yet (a database file only).
    "restore:moving-aside",
    // The target and its sidecars moved aside; nothing at TARGET.
    "restore:moved-aside",
    // `TARGET.incomplete` renamed to TARGET; the result not verified yet.
    "restore:placed",
];

/// The environment variable that pauses at a phase (test-only): `PHASE=FILE` makes FILE
/// at `PHASE` and waits until it is removed (a minute at most), so that a test can act
/// between two steps, as another process would.
pub const PAUSE_VAR: &str = "SALVAGE_PAUSE_AT";

/// Ends the process with [`EXIT`] when [`VAR`] names `phase`; waits there when
/// [`PAUSE_VAR`] names it.
pub fn point(phase: &str) {
    if std::env::var_os(VAR).is_some_and(|v| v == phase) {
        std::process::exit(EXIT);
    }
    let paused = std::env::var(PAUSE_VAR).ok();
    if let Some(file) = paused
        .as_deref()
        .and_then(|v| v.strip_prefix(phase)?.strip_prefix('='))
    {
        let file = std::path::Path::new(file);
        if std::fs::write(file, phase).is_ok() {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while file.exists() && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}
