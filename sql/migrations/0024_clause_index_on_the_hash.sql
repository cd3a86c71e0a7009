-- dedup-pg revision 0024: Clause index on the hash alone; no content_sha1 index on documents (applied by
-- migrations/versions/0024_clause_index_on_the_hash.py).
--
-- Why: issue 19, bytes a document. The clause index carried seen_at and doc_id
-- (INCLUDE) so that a probe read the index alone: 52 bytes an entry, ~30
-- entries a document, 1,621 bytes a kept document on sina2018 (bench/bytes.py),
-- the largest index of the schema and the largest part of the hot set at scale.
-- Most clauses of an incoming text have no holder, and for those that have, the
-- heap row (doc_id, seen_at) is read instead: same holders, same order (a key's
-- entries are in heap order either way), so the same verdicts.
-- documents_content_sha1_idx served only the rebuild's whitelist query (a pass
-- over every document anyway): 65 bytes a document and an insert each.
--
-- Now: document_clauses_hash_idx on clause_hash alone; no content_sha1 index
-- on documents (a text's digest is looked up in document_digests). On a large
-- database both statements take a while (the index is rebuilt on every week
-- partition).

DROP INDEX IF EXISTS documents_content_sha1_idx;

-- index:document_clauses_hash_idx, from sql/schema/40_hash_layers.sql
DROP INDEX IF EXISTS document_clauses_hash_idx;
CREATE INDEX document_clauses_hash_idx ON document_clauses (clause_hash);
COMMENT ON INDEX document_clauses_hash_idx IS NULL;
