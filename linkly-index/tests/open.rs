//! Opening one new index from several processes at once (`linkly serve` and the `linkly status`
//! calls that wait for it, on a new data directory): every opener gets the index.

use std::sync::{Arc, Barrier};

use linkly_index::Index;

#[test]
fn many_openers_of_a_new_index_all_succeed() {
    // The store's schema, the catalog's indexes and the vector store are all made by the
    // first opener; the others meet its locks.
    for round in 0..12 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let start = Arc::new(Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let (dir, start) = (dir.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Index::open(&dir).map(|index| index.doc_count())
                })
            })
            .collect();
        for o in openers {
            let opened = o.join().unwrap();
            assert!(matches!(opened, Ok(Ok(0))), "round {round}: {opened:?}");
        }
    }
}
