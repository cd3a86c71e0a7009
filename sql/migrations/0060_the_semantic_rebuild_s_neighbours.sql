-- dedup-pg revision 0060: The semantic rebuild's neighbours and documents through two functions (applied by
-- migrations/versions/0060_the_semantic_rebuild_s_neighbours.py).
--
-- Why: dedup_rebuild_vector_pairs had a whole-function copy in sql/citus/
-- (104 lines) that differed in two reads: the nearest-neighbour search of
-- every stored vector (one CROSS JOIN LATERAL statement here, one search a
-- vector on Citus) and the pairs' documents (joined here, read by doc_id into
-- a temporary table on Citus). Each is a function now:
-- dedup_rebuild_neighbours (with a Citus form) and dedup_documents_by_id (one
-- definition), and dedup_rebuild_vector_pairs is one definition for one node
-- and Citus. The pairs and their verdicts are the same.
--
-- No hand-written changes: the definitions below are the whole revision.

-- function:dedup_rebuild_neighbours, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_rebuild_neighbours(p_model embedding_models, p_from timestamptz,
                                         p_window interval, p_k integer, p_rerank integer)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, other_id bigint, other_seen_at timestamptz,
               cos double precision)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT x.doc_id, x.seen_at, n.doc_id, n.seen_at, n.cos::double precision
          FROM document_embeddings x
          CROSS JOIN LATERAL (%s) n
         WHERE x.model_id = %s AND x.seen_at >= $1
        $q$,
        dedup_model_knn_sql(p_model.model_id, 'x.embedding',
                            'e.seen_at BETWEEN x.seen_at - $2 AND x.seen_at + $2 AND e.doc_id <> x.doc_id',
                            '$3', '$4'),
        p_model.model_id)
    USING p_from, p_window, p_k, p_rerank;
END $$;
COMMENT ON FUNCTION dedup_rebuild_neighbours(embedding_models, timestamptz, interval, integer, integer) IS NULL;

-- function:dedup_documents_by_id, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_documents_by_id(p_ids bigint[], p_from timestamptz)
RETURNS SETOF documents
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT d.* FROM documents d WHERE d.doc_id = ANY (p_ids) AND d.seen_at >= p_from;
END $$;
COMMENT ON FUNCTION dedup_documents_by_id(bigint[], timestamptz) IS NULL;

-- function:dedup_rebuild_vector_pairs, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_rebuild_vector_pairs(p_since timestamptz DEFAULT NULL, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (doc_id bigint, seen_at timestamptz, matched_doc_id bigint, matched_seen_at timestamptz,
               verdict text, layer text, score double precision, distance integer, thresholds jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s jsonb := dedup_effective_settings(NULL, p_overrides);
    v_model embedding_models;
    v_window interval := make_interval(days => (s ->> 'window_days')::integer);
    v_from timestamptz;
BEGIN
    SELECT * INTO v_model FROM embedding_models m WHERE m.status = 'active';
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_window = interval '0' THEN
        v_window := interval '100000 days';
    END IF;
    v_from := CASE WHEN p_since IS NULL THEN '-infinity' ELSE p_since - v_window END;
    PERFORM dedup_hnsw_search_settings(dedup_model_ef_search(v_model, s));
    RETURN QUERY EXECUTE $q$
        WITH near AS MATERIALIZED (
            SELECT * FROM dedup_rebuild_neighbours($9, $1, $2, $3, $8)
        ), pairs AS (
            -- the later document of each pair is the one checked
            SELECT DISTINCT ON (a_id, b_id) a_id, a_seen, b_id, b_seen, cos
              FROM (SELECT CASE WHEN (n.seen_at, n.doc_id) > (n.other_seen_at, n.other_id) THEN n.doc_id ELSE n.other_id END AS a_id,
                           CASE WHEN (n.seen_at, n.doc_id) > (n.other_seen_at, n.other_id) THEN n.seen_at ELSE n.other_seen_at END AS a_seen,
                           CASE WHEN (n.seen_at, n.doc_id) > (n.other_seen_at, n.other_id) THEN n.other_id ELSE n.doc_id END AS b_id,
                           CASE WHEN (n.seen_at, n.doc_id) > (n.other_seen_at, n.other_id) THEN n.other_seen_at ELSE n.seen_at END AS b_seen,
                           n.cos
                      FROM near n) o
             WHERE a_seen >= $4 AND b_seen >= $1
        ), docs AS MATERIALIZED (
            SELECT * FROM dedup_documents_by_id(ARRAY(SELECT p.a_id FROM pairs p UNION SELECT p.b_id FROM pairs p), $1)
        ), judged AS (
            SELECT p.*, a.content_sha1 AS a_sha1, b.content_sha1 AS b_sha1,
                   coalesce(src.content_type, $5 ->> 'content_type') AS ct,
                   concat_ws(E'\n', a.title, a.body) AS a_text, concat_ws(E'\n', b.title, b.body) AS b_text,
                   a.body AS a_body, b.body AS b_body, a.facts AS a_facts, b.facts AS b_facts
              FROM pairs p
              JOIN docs a ON a.doc_id = p.a_id AND a.seen_at = p.a_seen
              JOIN docs b ON b.doc_id = p.b_id AND b.seen_at = p.b_seen
              LEFT JOIN dedup_sources src ON src.source = a.source
        ), thr AS (
            SELECT j.*,
                   coalesce(($5 ->> 'semantic_duplicate')::double precision,
                            ($6::jsonb -> j.ct ->> 'duplicate')::double precision) AS dup,
                   coalesce(($5 ->> 'semantic_review')::double precision,
                            ($6::jsonb -> j.ct ->> 'review')::double precision,
                            ($6::jsonb -> j.ct ->> 'duplicate')::double precision) AS review
              FROM judged j
             WHERE NOT dedup_pair_whitelisted(j.a_sha1, j.b_sha1)
               AND NOT EXISTS (SELECT 1 FROM dedup_whitelist w WHERE w.kind = 'text' AND w.content_sha1 = j.a_sha1)
        )
        SELECT t.a_id, t.a_seen, t.b_id, t.b_seen,
               CASE WHEN t.cos >= t.dup
                     AND dedup_semantic_agrees(t.a_text, t.b_text, t.a_body, t.b_body, t.a_facts, t.b_facts, $5)
                    THEN 'duplicate' ELSE 'review' END,
               'semantic', t.cos::double precision, NULL::integer,
               jsonb_build_object('model', $7::text, 'content_type', t.ct, 'semantic_duplicate', t.dup,
                                  'semantic_review', t.review,
                                  'semantic_min_number_overlap', $5 -> 'semantic_min_number_overlap',
                                  'facts_disagreement_share', $5 -> 'facts_disagreement_share',
                                  'window_days', $5 -> 'window_days')
          FROM thr t
         WHERE t.cos >= t.review
        $q$
    USING v_from, v_window, (s ->> 'semantic_neighbours')::integer, coalesce(p_since, '-infinity'),
          s, v_model.thresholds, v_model.name, (s ->> 'semantic_rerank')::integer, v_model;
END $$;
COMMENT ON FUNCTION dedup_rebuild_vector_pairs(timestamptz, jsonb) IS
    'Semantic candidate pairs of a rebuild: nearest stored vectors of the active model (HNSW), judged by dedup_ingest_semantic''s thresholds. Called by dedup-pg rebuild.';
