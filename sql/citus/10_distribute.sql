-- dedup-pg on a Citus cluster: how the schema of sql/schema/ is distributed.
-- Applied by dedup_pg.database.create_schema(citus=True) (dedup-pg init
-- --citus) on the coordinator, after sql/schema/*.sql, in the same transaction:
-- the tables are still empty, so distributing them copies nothing. The later
-- files of this folder replace, by their complete definitions, the few
-- functions whose single-node form Citus cannot plan (each says why).
-- DISTRIBUTION.md explains the choices and what was measured.
--
-- Every table keeps the primary key it has on one node: each is distributed by
-- the column its key (or its main lookup) starts with, so a lookup by that key
-- is a router query on one shard, and no key has to change (Citus wants the
-- distribution column in every unique key).

-- The placement is by content; unrelated tables get their own co-location
-- group (colocate_with => 'none'), so moving one table's shards does not move
-- the others'; only document_embeddings joins documents' group (below).
SELECT create_distributed_table('documents', 'doc_id', colocate_with => 'none');
-- the exact layer: the digest is the key, ON CONFLICT is a router statement
SELECT create_distributed_table('document_digests', 'content_sha1', colocate_with => 'none');
-- the lookup tables, each by the key a check probes: a probe of k keys reads
-- at most k shards
SELECT create_distributed_table('document_clauses', 'clause_hash', colocate_with => 'none');
SELECT create_distributed_table('document_simhash_bands', 'band_key', colocate_with => 'none');
-- by their own ids (the first column of their keys): the review verbs lock a
-- candidate by candidate_id (a router FOR UPDATE) and move sightings to
-- another doc_id (an UPDATE Citus allows only off the distribution column)
SELECT create_distributed_table('document_sightings', 'sighting_id', colocate_with => 'none');
SELECT create_distributed_table('duplicate_candidates', 'candidate_id', colocate_with => 'none');
-- The embeddings beside their documents (co-located by doc_id): "documents
-- without a vector of this model" is then a join on the distribution column,
-- pushed down whole, and each shard holds one HNSW index a model and day; a
-- nearest-neighbour query runs on every shard, each returns its LIMIT, the
-- coordinator merges. The foreign key to embedding_models goes (a distributed
-- table can reference only a reference table, and the models stay on the
-- coordinator): a model's vectors are deleted before the model
-- (dedup_pg.semantic), which the key only double-checked.
ALTER TABLE document_embeddings DROP CONSTRAINT document_embeddings_model_id_fkey;
SELECT create_distributed_table('document_embeddings', 'doc_id', colocate_with => 'documents');
-- The MinHash bands are one row a document (12 keys under a GIN index), so
-- by doc_id beside their documents: a probe asks every shard's index once (4
-- shards: 4 index scans, where 12 band values by value read up to 12 shards),
-- and each row holds its document's signature (revision 0041), so the
-- candidates are ranked where they are found.
SELECT create_distributed_table('document_minhash_bands', 'doc_id', colocate_with => 'documents');

-- Everything else stays a plain table on the coordinator, where dedup_ingest
-- runs: the settings, sources, whitelist, templates, audit trail, review log,
-- rebuild runs and errors (small, read and written by the coordinator only:
-- the whitelist is checked on the coordinator, after the candidates' rows are
-- fetched; as a reference table it was read inside the workers' part of a
-- query, a nested distributed query that Citus refuses), the embedding
-- models, and the lock stripes. The stripes are the
-- concurrency guarantee: a row lock on the coordinator is released only after
-- Citus has committed the transaction on every worker (its COMMIT PREPARED
-- runs in the commit callback, before PostgreSQL releases the locks), so a
-- waiter sees everything the holder wrote, on every node.
