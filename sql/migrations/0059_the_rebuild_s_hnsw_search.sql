-- dedup-pg revision 0059: The rebuild's HNSW search settings through dedup_hnsw_search_settings (applied by
-- migrations/versions/0059_the_rebuild_s_hnsw_search.py).
--
-- Why: revision 0057 made dedup_hnsw_search_settings the one place that sets
-- a transaction's HNSW search settings (set_config on one node, SET LOCAL
-- propagated to the workers on Citus), but dedup_rebuild_vector_pairs kept
-- its own copy of that block, on one node and in its Citus form. It calls the
-- function now; the settings are the same.
--
-- No hand-written changes: the definitions below are the whole revision.

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
    RETURN QUERY EXECUTE format($q$
        WITH near AS (
            SELECT x.doc_id, x.seen_at, n.doc_id AS other_id, n.seen_at AS other_seen_at, n.cos
              FROM document_embeddings x
              CROSS JOIN LATERAL (%3$s) n
             WHERE x.model_id = %2$s AND x.seen_at >= $1
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
        ), judged AS (
            SELECT p.*, a.content_sha1 AS a_sha1, b.content_sha1 AS b_sha1,
                   coalesce(src.content_type, $5 ->> 'content_type') AS ct,
                   concat_ws(E'\n', a.title, a.body) AS a_text, concat_ws(E'\n', b.title, b.body) AS b_text,
                   a.body AS a_body, b.body AS b_body, a.facts AS a_facts, b.facts AS b_facts
              FROM pairs p
              JOIN documents a ON a.doc_id = p.a_id AND a.seen_at = p.a_seen
              JOIN documents b ON b.doc_id = p.b_id AND b.seen_at = p.b_seen
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
        $q$, v_model.dimensions, v_model.model_id,
        dedup_model_knn_sql(v_model.model_id, 'x.embedding',
                            'e.seen_at BETWEEN x.seen_at - $2 AND x.seen_at + $2 AND e.doc_id <> x.doc_id',
                            '$3', '$8'))
    USING v_from, v_window, (s ->> 'semantic_neighbours')::integer, coalesce(p_since, '-infinity'),
          s, v_model.thresholds, v_model.name, (s ->> 'semantic_rerank')::integer;
END $$;
COMMENT ON FUNCTION dedup_rebuild_vector_pairs(timestamptz, jsonb) IS
    'Semantic candidate pairs of a rebuild: nearest stored vectors of the active model (HNSW), judged by dedup_ingest_semantic''s thresholds. Called by dedup-pg rebuild.';
