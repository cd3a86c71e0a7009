-- dedup-pg on Citus: the rebuild's functions (sql/schema/90_rebuild.sql)
-- that Citus cannot plan as they are, each with the error that forced it. The
-- logic and the results are the single-node functions'; tests/test_citus.py
-- compares a rebuild on the cluster with one on a single node. Above each
-- function, the checksum of the single-node definition it was made from
-- (tests/test_citus_schema.py).
--
-- A rebuild reads the window's fingerprints into temporary tables on the
-- coordinator (as on a single node): on a cluster it runs on the coordinator,
-- it does not scale out. The rebuild's functions are one definition each
-- (revisions 0060-0062); what a cluster runs differently is here.

-- from sql/schema/90_rebuild.sql dedup_rebuild_lookup_rows: sha256 13fb1a620cfd6e95
-- Citus: dedup_rebuild_pairs reads these rows in a correlated count of a
-- clause's holders (refused on a distributed table) and in self-joins on a
-- clause hash or a band value (the MinHash table is distributed by doc_id:
-- "complex joins are only supported when all distributed tables are
-- co-located and joined on their distribution columns"). So the window's rows
-- are copied into temporary tables on the coordinator, where those
-- statements run as on one node.
CREATE OR REPLACE FUNCTION dedup_rebuild_lookup_rows(p_from timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS dedup_rb_rows, dedup_rb_mh;
    IF p_from IS NULL THEN
        RETURN;
    END IF;
    CREATE TEMP TABLE dedup_rb_rows ON COMMIT DROP AS
    SELECT c.clause_hash, c.doc_id, c.seen_at FROM document_clauses c WHERE c.seen_at >= p_from;
    CREATE INDEX ON dedup_rb_rows (clause_hash);
    ANALYZE dedup_rb_rows;
    CREATE TEMP TABLE dedup_rb_mh ON COMMIT DROP AS
    SELECT m.doc_id, m.seen_at, unnest(dedup_minhash_bands(m.signature)) AS band_key
      FROM document_minhash_bands m WHERE m.seen_at >= p_from;
    ANALYZE dedup_rb_mh;
END $$;

-- from sql/schema/90_rebuild.sql dedup_rebuild_neighbours: sha256 cd8a8f6dc89db4fd
-- Citus: the single-node statement's CROSS JOIN LATERAL (the model's
-- nearest-neighbour search for every stored vector) cannot be planned
-- ("complex joins are only supported when all distributed tables are
-- co-located and joined on their distribution columns"): the vectors are read
-- into a temporary table, and each one's search (the same statement,
-- dedup_model_knn_sql, each shard's index, merged here) runs on its own.
CREATE OR REPLACE FUNCTION dedup_rebuild_neighbours(p_model embedding_models, p_from timestamptz,
                                                    p_window interval, p_k integer, p_rerank integer)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, other_id bigint, other_seen_at timestamptz,
               cos double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_x record;
    v_knn text;
    v_docs bigint[]; v_seen timestamptz[]; v_cos double precision[];
BEGIN
    DROP TABLE IF EXISTS dedup_rb_vx;
    CREATE TEMP TABLE dedup_rb_vx ON COMMIT DROP AS
    SELECT x.doc_id, x.seen_at, x.embedding FROM document_embeddings x
     WHERE x.model_id = p_model.model_id AND x.seen_at >= p_from;
    v_knn := format('SELECT array_agg(n.doc_id), array_agg(n.seen_at), array_agg(n.cos) FROM (%s) n',
                    dedup_model_knn_sql(p_model.model_id, '$1',
                                        'e.seen_at BETWEEN $2 - $3 AND $2 + $3 AND e.doc_id <> $4',
                                        '$5', '$6'));
    FOR v_x IN SELECT * FROM dedup_rb_vx LOOP
        EXECUTE v_knn INTO v_docs, v_seen, v_cos
          USING v_x.embedding, v_x.seen_at, p_window, v_x.doc_id, p_k, p_rerank;
        RETURN QUERY
        SELECT v_x.doc_id, v_x.seen_at, n.doc_id, n.seen_at, n.cos
          FROM unnest(v_docs, v_seen, v_cos) n(doc_id, seen_at, cos);
    END LOOP;
END $$;

