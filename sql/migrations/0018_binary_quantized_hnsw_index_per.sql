-- dedup-pg revision 0018: Binary-quantized HNSW index per model, re-ranked by the halfvec (applied by
-- migrations/versions/0018_binary_quantized_hnsw_index_per.py).
--
-- Why: at 10M documents a 512-d halfvec HNSW costs ~1,370 index bytes an
-- embedded text, more than the whole budget of a document (issue 19). An HNSW
-- over binary_quantize(halfvec)::bit(512) costs ~370 (bench/hnsw.py --binary);
-- its nearest semantic_rerank by Hamming distance, re-ranked by the halfvec's
-- cosine from the heap, find the exact nearest as often as the halfvec index
-- at ef_search 64 from a re-rank of 80. Per model (embedding_models.index_kind,
-- default halfvec: nothing changes until a model is switched with
-- dedup-pg models index NAME binary); one nearest-neighbour statement for
-- ingest and rebuild (dedup_model_knn_sql).

ALTER TABLE embedding_models
    ADD COLUMN index_kind text NOT NULL DEFAULT 'halfvec' CHECK (index_kind IN ('halfvec', 'binary'));

INSERT INTO dedup_settings (name, value, description) VALUES
 ('semantic_rerank', '80',
  'a model with a binary index (embedding_models.index_kind): how many nearest by Hamming distance are re-ranked by the halfvec cosine in always mode and rebuilds; more = better recall, slower (bench/hnsw.py --binary)');

-- function:dedup_model_index_sql, from sql/schema/50_semantic.sql
CREATE OR REPLACE FUNCTION dedup_model_index_sql(p_model_id smallint, p_table regclass, p_index text,
                                      p_concurrently boolean DEFAULT false, p_only boolean DEFAULT false)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT format('CREATE INDEX %s IF NOT EXISTS %I ON %s %s USING hnsw (%s) '
                  'WITH (m = 16, ef_construction = 64) WHERE model_id = %s',
                  CASE WHEN p_concurrently THEN 'CONCURRENTLY' ELSE '' END, p_index,
                  CASE WHEN p_only THEN 'ONLY' ELSE '' END, p_table,
                  CASE m.index_kind
                      WHEN 'binary' THEN format('(binary_quantize(embedding::halfvec(%1$s))::bit(%1$s)) bit_hamming_ops', m.dimensions)
                      ELSE format('(embedding::halfvec(%s)) halfvec_cosine_ops', m.dimensions)
                  END, m.model_id)
      FROM embedding_models m WHERE m.model_id = p_model_id
$$;
COMMENT ON FUNCTION dedup_model_index_sql(smallint, regclass, text, boolean, boolean) IS NULL;

-- function:dedup_model_knn_sql, from sql/schema/50_semantic.sql
CREATE OR REPLACE FUNCTION dedup_model_knn_sql(p_model_id smallint, p_query text, p_filter text,
                                    p_limit text, p_rerank text)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE m.index_kind
        WHEN 'binary' THEN format(
            'SELECT c.doc_id, c.seen_at, 1 - (c.embedding <=> %2$s::halfvec(%1$s)) AS cos'
            ' FROM (SELECT e.doc_id, e.seen_at, e.embedding::halfvec(%1$s) AS embedding'
            ' FROM document_embeddings e WHERE e.model_id = %3$s AND %4$s'
            ' ORDER BY binary_quantize(e.embedding::halfvec(%1$s))::bit(%1$s) <~> binary_quantize(%2$s::halfvec(%1$s))'
            ' LIMIT greatest(%6$s, %5$s)) c'
            ' ORDER BY c.embedding <=> %2$s::halfvec(%1$s) LIMIT %5$s',
            m.dimensions, p_query, m.model_id, p_filter, p_limit, p_rerank)
        ELSE format(
            'SELECT e.doc_id, e.seen_at, 1 - (e.embedding::halfvec(%1$s) <=> %2$s::halfvec(%1$s)) AS cos'
            ' FROM document_embeddings e WHERE e.model_id = %3$s AND %4$s'
            ' ORDER BY e.embedding::halfvec(%1$s) <=> %2$s::halfvec(%1$s) LIMIT %5$s',
            m.dimensions, p_query, m.model_id, p_filter, p_limit)
    END
      FROM embedding_models m WHERE m.model_id = p_model_id
$$;
COMMENT ON FUNCTION dedup_model_knn_sql(smallint, text, text, text, text) IS NULL;

-- function:dedup_model_ef_search, from sql/schema/50_semantic.sql
CREATE OR REPLACE FUNCTION dedup_model_ef_search(p_model embedding_models, p_settings jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_model.index_kind
        WHEN 'binary' THEN greatest((p_settings ->> 'semantic_ef_search')::integer,
                                    (p_settings ->> 'semantic_rerank')::integer)::text
        ELSE p_settings ->> 'semantic_ef_search'
    END
$$;
COMMENT ON FUNCTION dedup_model_ef_search(embedding_models, jsonb) IS NULL;

-- function:dedup_ingest_semantic, from sql/schema/50_semantic.sql
CREATE OR REPLACE FUNCTION dedup_ingest_semantic(p_items jsonb, p_stored jsonb, p_model_id smallint,
                                      p_dry_run boolean DEFAULT false, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (pos integer, verdict text, layer text, doc_id bigint,
               matched_doc_id bigint, matched_external_id text,
               score double precision, distance integer, candidate_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_again bigint;
    v_review_id bigint;
    v_model embedding_models;
    v_by_source jsonb := '{}';
    v_settings jsonb;
    v_json jsonb;
    v_ct text;
    v_dup double precision;
    v_review double precision;
    v_window interval;
    v_lo timestamptz;
    v_hi timestamptz;
    v_doc_id bigint;
    v_seen_at timestamptz;
    v_vec halfvec;
    v_sha1 bytea;
    v_best record;
    v_thresholds jsonb;
    v_numbers double precision;
BEGIN
    SELECT * INTO v_model FROM embedding_models m WHERE m.status = 'active';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no active embedding model (see: dedup-pg models)'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF v_model.model_id <> p_model_id THEN
        RAISE EXCEPTION 'the active embedding model is now % (id %), not id %: reload',
            v_model.name, v_model.model_id, p_model_id USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NOT p_dry_run THEN
        -- One semantic check at a time: a writer's texts are compared with
        -- everything committed before it, so two writers' paraphrases of one
        -- story cannot both be kept. Taken after the stripe locks, and held
        -- only to the commit that follows this statement.
        PERFORM pg_advisory_xact_lock(hashtext('dedup_ingest_semantic'));
        INSERT INTO document_embeddings AS e (doc_id, seen_at, model_id, embedding)
        SELECT (s ->> 'doc_id')::bigint, (s ->> 'seen_at')::timestamptz, p_model_id, (s ->> 'embedding')::halfvec
          FROM jsonb_array_elements(coalesce(p_stored, '[]')) s
        ON CONFLICT DO NOTHING;
    END IF;
    -- settings per source, resolved once each ('' = no source)
    v_by_source := jsonb_build_object('', dedup_effective_settings(NULL, p_overrides));
    PERFORM set_config('hnsw.ef_search', dedup_model_ef_search(v_model, v_by_source -> ''), true);
    BEGIN  -- pgvector >= 0.8: keep scanning when the window filter drops rows
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;

    FOR v_json IN SELECT e FROM jsonb_array_elements(p_items) e ORDER BY (e ->> 'pos')::integer
    LOOP
        pos := (v_json ->> 'pos')::integer;
        verdict := v_json ->> 'verdict'; layer := v_json ->> 'layer';
        doc_id := (v_json ->> 'doc_id')::bigint;
        matched_doc_id := (v_json ->> 'matched_doc_id')::bigint;
        matched_external_id := v_json ->> 'matched_external_id';
        score := (v_json ->> 'score')::double precision; distance := (v_json ->> 'distance')::integer;
        candidate_id := (v_json ->> 'candidate_id')::bigint;
        v_doc_id := doc_id;
        v_seen_at := (v_json ->> 'seen_at')::timestamptz;
        v_vec := (v_json ->> 'embedding')::halfvec;
        v_sha1 := decode(v_json ->> 'sha1', 'hex');
        IF NOT v_by_source ? coalesce(v_json ->> 'source', '') THEN
            v_by_source := v_by_source || jsonb_build_object(
                coalesce(v_json ->> 'source', ''), dedup_effective_settings(v_json ->> 'source', p_overrides));
        END IF;
        v_settings := v_by_source -> coalesce(v_json ->> 'source', '');
        v_ct := coalesce(v_json ->> 'content_type', v_settings ->> 'content_type');
        v_dup := coalesce((v_settings ->> 'semantic_duplicate')::double precision,
                          (v_model.thresholds -> v_ct ->> 'duplicate')::double precision);
        v_review := coalesce((v_settings ->> 'semantic_review')::double precision,
                             (v_model.thresholds -> v_ct ->> 'review')::double precision, v_dup);
        IF v_dup IS NULL THEN
            RAISE EXCEPTION 'embedding model % has no thresholds for content type "%" (embedding_models.thresholds)',
                v_model.name, v_ct USING ERRCODE = 'invalid_parameter_value';
        END IF;
        v_window := make_interval(days => (v_settings ->> 'window_days')::integer);
        IF v_window = interval '0' THEN
            v_lo := '-infinity'; v_hi := 'infinity';
        ELSE
            v_lo := v_seen_at - v_window; v_hi := v_seen_at + v_window;
        END IF;
        v_thresholds := jsonb_build_object('model', v_model.name, 'content_type', v_ct,
                                           'semantic_duplicate', v_dup, 'semantic_review', v_review,
                                           'semantic_min_number_overlap', v_settings -> 'semantic_min_number_overlap',
                                           'window_days', v_settings -> 'window_days');

        IF jsonb_typeof(v_json -> 'neighbours') = 'array' THEN
            -- gated: the hash layers' candidates, looked up by key: their ids as
            -- an array for each partition's primary key (doc_id, ...), and each
            -- one's document row through a subquery per candidate. As joins, the
            -- planner read every stored vector and every document (and ran the
            -- whitelist test on each document row): 30-35 ms a call at 10k.
            SELECT n.doc_id, n.seen_at, 1 - (n.embedding <=> v_vec) AS cos INTO v_best
              FROM (SELECT e.doc_id, e.seen_at, e.embedding
                      FROM document_embeddings e
                     WHERE e.model_id = p_model_id
                       AND e.doc_id = ANY (ARRAY(SELECT x::bigint
                                                   FROM jsonb_array_elements_text(v_json -> 'neighbours') x))
                    UNION ALL
                    SELECT (s ->> 'doc_id')::bigint, (s ->> 'seen_at')::timestamptz, (s ->> 'embedding')::halfvec
                      FROM jsonb_array_elements(coalesce(p_stored, '[]')) s
                     WHERE p_dry_run AND s -> 'doc_id' IN (SELECT jsonb_array_elements(v_json -> 'neighbours'))) n
             WHERE n.doc_id IS DISTINCT FROM v_doc_id
               -- null (left out) when the document is gone, as the join was
               AND (SELECT NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
                      FROM documents d WHERE d.doc_id = n.doc_id AND d.seen_at = n.seen_at)
             ORDER BY cos DESC, n.seen_at, n.doc_id
             LIMIT 1;
        ELSE
            -- always: the nearest stored embeddings in the window (HNSW)
            EXECUTE format(
                'SELECT n.doc_id, n.seen_at, n.cos
                   FROM (%s) n
                   JOIN documents d ON d.doc_id = n.doc_id AND d.seen_at = n.seen_at
                  WHERE NOT dedup_pair_whitelisted($6, d.content_sha1)
                  ORDER BY n.cos DESC, n.seen_at, n.doc_id
                  LIMIT 1',
                dedup_model_knn_sql(p_model_id, '$1', 'e.seen_at BETWEEN $2 AND $3 AND e.doc_id IS DISTINCT FROM $4',
                                    '$5', '$7'))
               INTO v_best
              USING v_vec, v_lo, v_hi, v_doc_id, (v_settings ->> 'semantic_neighbours')::integer, v_sha1,
                    (v_settings ->> 'semantic_rerank')::integer;
        END IF;

        IF v_best.doc_id IS NOT NULL AND v_best.cos >= v_dup THEN
            SELECT dedup_number_overlap(dedup_numbers(v_json ->> 'text'), dedup_numbers(concat_ws(E'\n', d.title, d.body)))
              INTO v_numbers
              FROM documents d WHERE d.doc_id = v_best.doc_id AND d.seen_at = v_best.seen_at;
        END IF;
        IF v_best.doc_id IS NOT NULL AND v_best.cos >= v_dup
           AND v_numbers >= (v_settings ->> 'semantic_min_number_overlap')::double precision THEN
            verdict := 'duplicate'; layer := 'semantic'; score := v_best.cos; distance := NULL;
            matched_doc_id := v_best.doc_id; doc_id := NULL;
            SELECT d.external_id INTO matched_external_id
              FROM documents d WHERE d.doc_id = v_best.doc_id AND d.seen_at = v_best.seen_at;
            v_again := dedup_redelivered(v_json ->> 'external_id', v_json ->> 'source', v_sha1,
                                         v_best.doc_id, v_lo, v_hi);
            IF v_again IS NOT NULL THEN
                -- a re-delivery (60_ingest.sql): recorded as this duplicate
                -- before; what the hash layers stored of it just now goes
                layer := 'redelivery';
                IF NOT p_dry_run THEN
                    v_review_id := candidate_id;  -- the hash layers' review of it, if any
                    DELETE FROM document_sightings s WHERE s.doc_id = v_doc_id AND s.seen_at = v_seen_at;
                    DELETE FROM duplicate_candidates c WHERE c.candidate_id = v_review_id;
                    PERFORM dedup_remove_document(v_doc_id, v_seen_at);
                END IF;
                candidate_id := v_again;
            ELSIF NOT p_dry_run THEN
                candidate_id := dedup_demote_document(v_doc_id, v_seen_at, candidate_id, v_best.doc_id,
                                                      v_best.seen_at, 'semantic', v_best.cos, v_thresholds);
            END IF;
        ELSIF v_best.doc_id IS NOT NULL AND v_best.cos >= v_review AND verdict = 'new' THEN
            -- (or a duplicate by cosine whose numbers differ)
            verdict := 'review'; layer := 'semantic'; score := v_best.cos; distance := NULL;
            matched_doc_id := v_best.doc_id;
            SELECT d.external_id INTO matched_external_id
              FROM documents d WHERE d.doc_id = v_best.doc_id AND d.seen_at = v_best.seen_at;
            IF NOT p_dry_run THEN
                DELETE FROM document_sightings s
                 WHERE s.doc_id = v_doc_id AND s.seen_at = v_seen_at AND s.verdict = 'new';
                candidate_id := dedup_record_candidate(
                    dedup_document_item(v_doc_id, v_seen_at), 'pending', 'semantic', v_doc_id,
                    v_best.doc_id, v_best.seen_at, NULL, v_best.cos, NULL, v_thresholds);
            END IF;
        END IF;
        IF NOT p_dry_run AND verdict <> 'duplicate' THEN
            INSERT INTO document_embeddings AS e (doc_id, seen_at, model_id, embedding)
            VALUES (v_doc_id, v_seen_at, p_model_id, v_vec)
            ON CONFLICT DO NOTHING;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
COMMENT ON FUNCTION dedup_ingest_semantic(jsonb, jsonb, smallint, boolean, jsonb) IS
    'The semantic layer of an ingest transaction, after dedup_ingest: embeddings compared with the gate''s candidates or the HNSW index. Called by dedup_pg.Deduper.';

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
    PERFORM set_config('hnsw.ef_search', dedup_model_ef_search(v_model, s), true);
    BEGIN
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
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
                   concat_ws(E'\n', a.title, a.body) AS a_text, concat_ws(E'\n', b.title, b.body) AS b_text
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
                     AND dedup_number_overlap(dedup_numbers(t.a_text), dedup_numbers(t.b_text))
                         >= ($5 ->> 'semantic_min_number_overlap')::double precision
                    THEN 'duplicate' ELSE 'review' END,
               'semantic', t.cos::double precision, NULL::integer,
               jsonb_build_object('model', $7::text, 'content_type', t.ct, 'semantic_duplicate', t.dup,
                                  'semantic_review', t.review,
                                  'semantic_min_number_overlap', $5 -> 'semantic_min_number_overlap',
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
