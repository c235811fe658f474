//! An evidence file that shrinks while it is mapped. Reading a mapped page past the file's
//! new end raises SIGBUS, which would end the process with no message. While a map is
//! watched, a handler catches that fault: when it lies in a watched map, the rest of the
//! map is replaced by zero pages and the map is marked as shrunk, so that the read goes on
//! (over zeros) and the run ends in the ordinary error for a source that changed under it
//! (the second hash differs; `inspect` checks the mark). A fault anywhere else gets the
//! default action.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// Maps watched at once, at most (a source, its log and its journal, in a few runs).
const SLOTS: usize = 32;

/// Each slot: the map's start address (0: free) and length, and whether it shrank.
static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static LENS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static SHRANK: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// A slot being filled: an address in the first page, where no map lies.
const CLAIMED: usize = 1;
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();

/// A watched map; the watch ends when it is dropped (before the map is unmapped).
#[derive(Debug)]
pub struct Watch {
    slot: Option<usize>,
}

impl Watch {
    /// Watches the map at `bytes`. When every slot is taken the map is not watched (a
    /// shrinking file then ends the process as before).
    pub fn new(bytes: &[u8]) -> Watch {
        install();
        let start = bytes.as_ptr() as usize;
        for (i, slot) in STARTS.iter().enumerate() {
            // Claimed with an address no map has, then filled, then made live.
            if slot
                .compare_exchange(0, CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                continue;
            }
            if let (Some(len), Some(shrank)) = (LENS.get(i), SHRANK.get(i)) {
                len.store(bytes.len(), Ordering::SeqCst);
                shrank.store(false, Ordering::SeqCst);
                slot.store(start, Ordering::SeqCst);
                return Watch { slot: Some(i) };
            }
        }
        Watch { slot: None }
    }

    /// Whether a read found the file shorter than its map.
    pub fn shrank(&self) -> bool {
        self.slot
            .and_then(|i| SHRANK.get(i))
            .is_some_and(|s| s.load(Ordering::SeqCst))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(start) = self.slot.and_then(|i| STARTS.get(i)) {
            start.store(0, Ordering::SeqCst);
        }
    }
}

/// Installs the handler once per process.
fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sysconf and sigaction are called with valid arguments; the handler only
        // touches atomics and calls mmap and sigaction (see `on_fault`).
        #[allow(unsafe_code)]
        // reason: a signal handler is the only way to survive a fault on a mapped file that shrank
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if let Ok(page) = usize::try_from(page) {
                if page > 0 {
                    PAGE.store(page, Ordering::SeqCst);
                }
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fault as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

/// The SIGBUS handler: a fault in a watched map maps zero pages from the faulting page to
/// the map's end and returns (the read is retried and finds zeros); any other fault
/// restores the default action and returns, so that it ends the process as it would have.
#[allow(unsafe_code)]
// reason: reading the fault address and remapping are raw system calls in a signal handler
extern "C" fn on_fault(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers; mmap with
    // MAP_FIXED replaces pages only inside a watched map, which its owner keeps mapped
    // while the watch lives (the watch is dropped before the map).
    unsafe {
        let addr = if info.is_null() {
            0
        } else {
            (*info).si_addr() as usize
        };
        let page = PAGE.load(Ordering::SeqCst).max(1);
        for i in 0..SLOTS {
            let (Some(s), Some(l), Some(flag)) = (STARTS.get(i), LENS.get(i), SHRANK.get(i)) else {
                continue;
            };
            let (start, len) = (s.load(Ordering::SeqCst), l.load(Ordering::SeqCst));
            if start <= CLAIMED || addr < start || addr >= start.saturating_add(len) {
                continue;
            }
            let from = addr - addr % page;
            let end = start
                .saturating_add(len)
                .div_ceil(page)
                .saturating_mul(page);
            let mapped = libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            );
            if mapped != libc::MAP_FAILED {
                flag.store(true, Ordering::SeqCst);
                return;
            }
        }
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
    }
}
