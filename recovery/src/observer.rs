//! How a caller follows a run: the pipeline tells an [`Observer`] what it is doing and
//! never prints. The `salvage` binary shows it on a terminal; a program embedding the
//! library may log it, or pass [`Quiet`].

/// Told what the run is doing. Called from the run's threads, so it is `Sync`.
pub trait Observer: Sync {
    /// A step starts on the run's main thread.
    fn say(&self, _what: &str) {}
    /// Work on another thread ended.
    fn note(&self, _what: &str) {}
    /// The run is over.
    fn done(&self) {}
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}
