-- dedup-pg revision 0072: document_sightings without a primary key (applied by
-- migrations/versions/0072_document_sightings_without_a_primary.py).
--
-- Why: issue 19 (bytes a document). Every kept document and every duplicate
-- has a row in document_sightings, and its primary key (sighting_id, seen_at)
-- was an index nothing reads: a document's sightings are found by doc_id
-- (document_sightings_doc_id_idx), and sighting_id is unique by construction
-- (an identity column), as documents.doc_id is (a sequence; documents has no
-- primary key either). The index cost ~47 bytes a kept document on sina2018
-- and an entry an insert. Dropping the constraint drops its index on every
-- partition. Measured numbers: BENCHMARKS.md, revision 0072.
--
-- On Citus the table stays distributed by sighting_id (a distribution column
-- needs no key); the shards are written one connection at a time as in
-- revision 0063 (a setting of no effect on one node).
SET LOCAL citus.multi_shard_modify_mode = 'sequential';
ALTER TABLE document_sightings DROP CONSTRAINT document_sightings_pkey;
