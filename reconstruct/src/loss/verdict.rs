//! The verdict over a whole salvage: the one place `loss_detected` is decided.

use serde::{Deserialize, Serialize};

use super::LossSignal;

/// The verdict over a whole salvage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every source of evidence agrees nothing is missing, and the output was verified.
    pub complete: bool,
    /// Some rows were recovered, but not provably all.
    pub partial: bool,
    /// Some row may be missing or damaged.
    pub loss_detected: bool,
    /// The output passed its checks.
    pub verified: bool,
}

impl Verdict {
    /// The verdict from the run's signals and its verification: the one place
    /// `loss_detected` is decided.
    pub fn of(signals: &[LossSignal], verified: bool) -> Verdict {
        let loss_detected = !signals.is_empty();
        Verdict {
            complete: !loss_detected && verified,
            partial: loss_detected,
            loss_detected,
            verified,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_is_complete_only_without_signals_and_verified() {
        let signal = [LossSignal::PagesUnreadable { pages: 1 }];
        assert_eq!(
            Verdict::of(&[], true),
            Verdict {
                complete: true,
                partial: false,
                loss_detected: false,
                verified: true,
            }
        );
        assert_eq!(
            Verdict::of(&[], false),
            Verdict {
                complete: false,
                partial: false,
                loss_detected: false,
                verified: false,
            }
        );
        assert_eq!(
            Verdict::of(&signal, true),
            Verdict {
                complete: false,
                partial: true,
                loss_detected: true,
                verified: true,
            }
        );
        assert_eq!(
            Verdict::of(&signal, false),
            Verdict {
                complete: false,
                partial: true,
                loss_detected: true,
                verified: false,
            }
        );
    }
}
