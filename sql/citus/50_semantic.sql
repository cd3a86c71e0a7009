-- dedup-pg on Citus: the semantic layer's reads that a Citus coordinator
-- cannot plan in their single-node form (sql/schema/50_semantic.sql), each in
-- a form it can. dedup_ingest_semantic itself is the single-node function
-- (since revision 0057; this file held a copy of it). Above each function,
-- the checksum of the single-node definition it was made from
-- (tests/test_citus_schema.py).

-- from sql/schema/50_semantic.sql dedup_hnsw_search_settings: sha256 228e84a4537f6deb
-- Citus: SET LOCAL with citus.propagate_set_commands = 'local', so that the
-- workers' index scans use the settings too: set_config() is not propagated
-- (the shards' searches ran with pgvector's default ef_search, 40)
CREATE OR REPLACE FUNCTION dedup_hnsw_search_settings(p_ef_search text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('citus.propagate_set_commands', 'local', true);
    EXECUTE format('SET LOCAL hnsw.ef_search = %s', p_ef_search);
    BEGIN  -- pgvector >= 0.8: keep scanning when the window filter drops rows
        EXECUTE 'SET LOCAL hnsw.iterative_scan = relaxed_order';
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
END $$;

-- from sql/schema/50_semantic.sql dedup_gate_candidates: sha256 e72183c28e111209
-- Citus: PL/pgSQL; the candidates' vectors compared on their shards and their
-- documents' digests fetched (both by doc_id, pruned), then put together and
-- whitelist-checked here on the coordinator, where dedup_whitelist is (a
-- subquery a candidate on documents, correlated with the embeddings, is not
-- planned across shards)
CREATE OR REPLACE FUNCTION dedup_gate_candidates(p_model_id smallint, p_vec halfvec, p_ids bigint[], p_stored jsonb,
                                                 p_sha1 bytea)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, cos double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_e_docs bigint[]; v_e_seen timestamptz[]; v_e_cos double precision[];
    v_f_docs bigint[]; v_f_seen timestamptz[]; v_f_sha1 bytea[];
BEGIN
    SELECT array_agg(e.doc_id), array_agg(e.seen_at), array_agg(1 - (e.embedding <=> p_vec))
      INTO v_e_docs, v_e_seen, v_e_cos
      FROM document_embeddings e
     WHERE e.model_id = p_model_id AND e.doc_id = ANY (p_ids);
    SELECT array_agg(d.doc_id), array_agg(d.seen_at), array_agg(d.content_sha1)
      INTO v_f_docs, v_f_seen, v_f_sha1
      FROM documents d WHERE d.doc_id = ANY (p_ids);
    RETURN QUERY
    SELECT n.doc_id, n.seen_at, n.cos
      FROM (SELECT e.doc_id, e.seen_at, e.cos FROM unnest(v_e_docs, v_e_seen, v_e_cos) e(doc_id, seen_at, cos)
            UNION ALL
            SELECT (s ->> 'doc_id')::bigint, (s ->> 'seen_at')::timestamptz,
                   1 - ((s ->> 'embedding')::halfvec <=> p_vec)
              FROM jsonb_array_elements(coalesce(p_stored, '[]')) s
             WHERE (s ->> 'doc_id')::bigint = ANY (p_ids)) n
     -- null (left out) when the document is gone
     WHERE (SELECT NOT dedup_pair_whitelisted(p_sha1, d.content_sha1)
              FROM unnest(v_f_docs, v_f_seen, v_f_sha1) d(doc_id, seen_at, content_sha1)
             WHERE d.doc_id = n.doc_id AND d.seen_at = n.seen_at);
END $$;

-- from sql/schema/50_semantic.sql dedup_nearest_candidates: sha256 33ac1c4a4c39564d
-- Citus: the nearest neighbours first (each shard's index returns its
-- nearest, the coordinator merges), then their documents' digests by doc_id
-- (pruned), put together and whitelist-checked here, where dedup_whitelist
-- is: documents joined in the same statement is a join Citus cannot push down
-- with the nearest-neighbour subquery
CREATE OR REPLACE FUNCTION dedup_nearest_candidates(p_model_id smallint, p_vec halfvec, p_lo timestamptz,
                                                    p_hi timestamptz, p_exclude bigint, p_k integer,
                                                    p_rerank integer, p_sha1 bytea)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, cos double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_e_docs bigint[]; v_e_seen timestamptz[]; v_e_cos double precision[];
    v_f_docs bigint[]; v_f_seen timestamptz[]; v_f_sha1 bytea[];
BEGIN
    EXECUTE format(
        'SELECT array_agg(n.doc_id), array_agg(n.seen_at), array_agg(n.cos) FROM (%s) n',
        dedup_model_knn_sql(p_model_id, '$1', 'e.seen_at BETWEEN $2 AND $3 AND e.doc_id IS DISTINCT FROM $4',
                            '$5', '$6'))
       INTO v_e_docs, v_e_seen, v_e_cos
      USING p_vec, p_lo, p_hi, p_exclude, p_k, p_rerank;
    SELECT array_agg(d.doc_id), array_agg(d.seen_at), array_agg(d.content_sha1)
      INTO v_f_docs, v_f_seen, v_f_sha1
      FROM documents d WHERE d.doc_id = ANY (v_e_docs);
    RETURN QUERY
    SELECT n.doc_id, n.seen_at, n.cos
      FROM unnest(v_e_docs, v_e_seen, v_e_cos) n(doc_id, seen_at, cos)
      JOIN unnest(v_f_docs, v_f_seen, v_f_sha1) d(doc_id, seen_at, content_sha1)
        ON d.doc_id = n.doc_id AND d.seen_at = n.seen_at
     WHERE NOT dedup_pair_whitelisted(p_sha1, d.content_sha1);
END $$;
