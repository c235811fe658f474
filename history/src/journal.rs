//! The step a rollback journal holds: from its images to the main file's.

use std::collections::BTreeSet;

use pager::{Database, Journal, Observe, PageNo};

use crate::state::State;
use crate::{Step, StepKind};

/// The step a rollback journal holds: from its images (the pages before its transaction)
/// to the main file's. `None` when the journal holds no page. `observe` is told of each
/// page image read, from the main file or the journal (see [`crate::wal_history`]).
pub fn journal_history<'a>(
    main: &'a [u8],
    journal: &Journal<'a>,
    observe: &'a Observe<'a>,
) -> Option<Step> {
    if journal.pages.is_empty() {
        return None;
    }
    let after = Database::open(main).ok()?.observed(observe);
    let images: Vec<(PageNo, &'a [u8])> = journal.pages.iter().map(|(p, i)| (*p, *i)).collect();
    let before = State::new(after.with_images(&images, journal.original_pages()));
    let pages: BTreeSet<PageNo> = journal.pages.keys().copied().collect();
    let kind = StepKind::Journal {
        hot: journal.header.is_some(),
    };
    Some(before.step(kind, after, pages).0)
}

#[cfg(test)]
mod tests {
    use pager::{read_journal, read_persisted_journal, PageSize};

    use super::*;
    use crate::testing::{change, journal, leaf, main_ab, main_file, p, row, summary};
    use crate::Op;

    #[test]
    fn hot_journal_gives_the_step_from_its_images_to_the_main_file() {
        // The transaction changed page 2 of the main file, and crashed: the journal holds
        // the page as it was before.
        let before = leaf(&[&row(1, b'a'), &row(2, b'b')]);
        let main = main_file(&leaf(&[&row(1, b'A'), &row(3, b'c')]));
        let bytes = journal(2, &[(2, &before)]);
        let step = journal_history(&main, &read_journal(&bytes), &|_| {}).unwrap();
        assert_eq!(step.kind, StepKind::Journal { hot: true });
        assert_eq!(step.pages, [p(2)]);
        assert_eq!(
            summary(&step),
            vec![
                change(1, Op::Update, Some(b'a'), Some(b'A')),
                change(2, Op::Delete, Some(b'b'), None),
                change(3, Op::Insert, None, Some(b'c')),
            ]
        );
    }

    #[test]
    fn persisted_journal_of_a_committed_transaction_is_not_hot() {
        // journal_mode=PERSIST commits by zeroing the header; the records stay.
        let before = leaf(&[&row(1, b'a')]);
        let main = main_file(&leaf(&[&row(1, b'A')]));
        let mut bytes = journal(2, &[(2, &before)]);
        bytes[..28].fill(0);
        let persisted = read_persisted_journal(&bytes, PageSize::new(512).unwrap(), 2);
        let step = journal_history(&main, &persisted, &|_| {}).unwrap();
        assert_eq!(step.kind, StepKind::Journal { hot: false });
        assert_eq!(
            summary(&step),
            vec![change(1, Op::Update, Some(b'a'), Some(b'A'))]
        );
    }

    #[test]
    fn journal_holding_no_page_gives_no_step() {
        let main = main_ab();
        assert_eq!(
            journal_history(&main, &read_journal(&journal(2, &[])), &|_| {}),
            None
        );
        assert_eq!(journal_history(&main, &read_journal(&[]), &|_| {}), None);
    }
}
