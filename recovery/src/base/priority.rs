//! Which of the run's threads the processor serves first when there are more than cores.

/// Steps of `nice` a background thread gives up.
#[cfg(target_os = "linux")]
const LOWER_BY: i32 = 10;

/// Lowers the calling thread's priority (its own `nice`, 10 steps more, at most 19): its
/// work is only waited for at the commit, and the threads the main thread waits for
/// before that (the loss bounds) get a core first. Where the priority cannot be read or
/// changed the thread runs as it was; nothing depends on it but the time taken.
pub fn background() {
    // Linux gives each thread its own `nice`; elsewhere `setpriority` is the process's.
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let me = Some(rustix::thread::gettid());
        if let Ok(now) = getpriority_process(me) {
            let _ = setpriority_process(me, (now + LOWER_BY).min(19));
        }
    }
}
