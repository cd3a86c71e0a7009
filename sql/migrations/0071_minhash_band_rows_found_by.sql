-- dedup-pg revision 0071: MinHash band rows found by doc_id in 8-page BRIN ranges (applied by
-- migrations/versions/0071_minhash_band_rows_found_by.py).
--
-- Why: issue 19, revision 0070's read. dedup_ingest reads one band row by
-- doc_id and seen_at for a text with a SimHash or containment review and no
-- duplicate, and document_minhash_bands is found by doc_id through a BRIN
-- index: with the default 128 pages a range, one row cost a range of 128
-- pages, ~3,300 rows rechecked (0.07-0.31 ms on an 11,000-document store,
-- cached; at 10M documents, uncached, a 1 MB read). 8 pages a range, as
-- document_clauses has had since revision 0004, read ~200 rows. The BRIN
-- index grows from one entry per 128 pages to one per 8: still a few bytes a
-- document. The upgrade rebuilds the index (one scan of the band rows).
-- Measured numbers: BENCHMARKS.md, revision 0071.
--
-- On Citus the definitions after a statement over every shard are refused in
-- the transaction (the Citus forms the upgrade applies after the revisions)
-- unless the shards were written one connection at a time (a setting of no
-- effect on one node), as in revision 0049.
SET LOCAL citus.multi_shard_modify_mode = 'sequential';

-- index:document_minhash_bands_doc_id_idx, from sql/schema/40_hash_layers.sql
DROP INDEX IF EXISTS document_minhash_bands_doc_id_idx;
CREATE INDEX document_minhash_bands_doc_id_idx ON document_minhash_bands USING brin (doc_id) WITH (pages_per_range = 8);
COMMENT ON INDEX document_minhash_bands_doc_id_idx IS NULL;
