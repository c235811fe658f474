//! The history of logs SQLite wrote, against what SQLite read after each commit.

use history::{wal_history, Op};

#[test]
fn the_agent_logs_three_commits() {
    let f = fixtures::build_agent_with_wal();
    let wal = pager::read_wal(&f.wal).unwrap();
    let h = wal_history(&f.main, None, &wal);
    // Three commits, then the frame of a transaction that never committed.
    assert_eq!(h.steps.len(), 4);
    assert!(matches!(
        h.steps[3].kind,
        history::StepKind::Uncommitted { .. }
    ));
    let ops: Vec<Vec<(String, Op)>> = h
        .steps
        .iter()
        .map(|s| {
            let mut v: Vec<(String, Op)> = s
                .changes
                .iter()
                .map(|c| (c.table.clone(), c.op()))
                .collect();
            v.dedup();
            v
        })
        .collect();
    eprintln!("{ops:?}");
    assert!(ops[0]
        .iter()
        .all(|(t, o)| t == "messages" && *o == Op::Insert));
    assert_eq!(ops[1], vec![("sessions".to_string(), Op::Update)]);
    assert_eq!(ops[2], vec![("state_meta".to_string(), Op::Delete)]);
    assert!(h.checkpointed.is_empty());
}
