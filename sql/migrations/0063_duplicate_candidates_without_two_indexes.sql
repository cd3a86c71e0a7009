-- dedup-pg revision 0063: duplicate_candidates without two indexes that repeat others (applied by
-- migrations/versions/0063_duplicate_candidates_without_two_indexes.py).
--
-- Why: issue 19 (bytes a document) and issue 20 (CPU a stored duplicate).
-- Every duplicate and review is a duplicate_candidates row, and it had six
-- indexes. Two repeated others: duplicate_candidates_candidate_id_idx
-- (candidate_id), which the primary key (candidate_id, seen_at) already
-- serves, and duplicate_candidates_pending_idx (created_at of the pending
-- rows), which duplicate_candidates_queue_idx (status, created_at,
-- candidate_id) serves in the same order for review_queue and the review page.
-- Without them a candidate row costs 30 index bytes and 1-2 us of backend CPU
-- less (200,000 rows, a third pending). Measured numbers: BENCHMARKS.md,
-- revision 0063.

-- On Citus the definitions after a statement over every shard are refused in
-- the transaction unless the shards were written one connection at a time (a
-- setting of no effect on one node).
SET LOCAL citus.multi_shard_modify_mode = 'sequential';
DROP INDEX duplicate_candidates_candidate_id_idx;
DROP INDEX duplicate_candidates_pending_idx;
