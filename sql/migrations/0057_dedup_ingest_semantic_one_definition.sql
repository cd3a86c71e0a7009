-- dedup-pg revision 0057: dedup_ingest_semantic one definition for one node and Citus (applied by
-- migrations/versions/0057_dedup_ingest_semantic_one_definition.py).
--
-- Why: as revision 0056 did for dedup_ingest: dedup_ingest_semantic had a
-- Citus copy (sql/citus/50_semantic.sql, ~220 lines) that differed in three
-- places. It is one definition now. What a Citus coordinator runs differently
-- is a function of its own, each with its Citus form in sql/citus/: the HNSW
-- search settings (dedup_hnsw_search_settings: set_config on one node, SET
-- LOCAL propagated to the workers on Citus), a gated check's candidates
-- (dedup_gate_candidates: their similarity, those whose document is gone or
-- whose pair is whitelisted left out) and an always-mode check's nearest
-- neighbours (dedup_nearest_candidates, the same way). dedup_gate_candidates
-- is PL/pgSQL on one node too: inlined SQL was parsed again at every call
-- (dedup_ingest_semantic plans its statements at each call). The verdicts are
-- the same by construction; measured: BENCHMARKS.md, revision 0057.
--
-- No hand-written changes: the definitions below are the whole revision.

-- function:dedup_hnsw_search_settings, from sql/schema/50_semantic.sql
CREATE OR REPLACE FUNCTION dedup_hnsw_search_settings(p_ef_search text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('hnsw.ef_search', p_ef_search, true);
    BEGIN  -- pgvector >= 0.8: keep scanning when the window filter drops rows
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
END $$;
COMMENT ON FUNCTION dedup_hnsw_search_settings(text) IS NULL;

-- function:dedup_gate_candidates, from sql/schema/50_semantic.sql
CREATE OR REPLACE FUNCTION dedup_gate_candidates(p_model_id smallint, p_vec halfvec, p_ids bigint[], p_stored jsonb,
                                      p_sha1 bytea)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, cos double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT n.doc_id, n.seen_at, 1 - (n.embedding <=> p_vec)
      FROM (SELECT e.doc_id, e.seen_at, e.embedding
              FROM document_embeddings e
             WHERE e.model_id = p_model_id AND e.doc_id = ANY (p_ids)
            UNION ALL
            SELECT (s ->> 'doc_id')::bigint, (s ->> 'seen_at')::timestamptz, (s ->> 'embedding')::halfvec
              FROM jsonb_array_elements(p_stored) s
             WHERE p_stored IS NOT NULL AND (s ->> 'doc_id')::bigint = ANY (p_ids)) n
     -- null (left out) when the document is gone
     WHERE (SELECT NOT dedup_pair_whitelisted(p_sha1, d.content_sha1)
              FROM documents d WHERE d.doc_id = n.doc_id AND d.seen_at = n.seen_at);
END $$;
COMMENT ON FUNCTION dedup_gate_candidates(smallint, halfvec, bigint[], jsonb, bytea) IS NULL;

-- function:dedup_nearest_candidates, from sql/schema/50_semantic.sql
CREATE OR REPLACE FUNCTION dedup_nearest_candidates(p_model_id smallint, p_vec halfvec, p_lo timestamptz,
                                         p_hi timestamptz, p_exclude bigint, p_k integer,
                                         p_rerank integer, p_sha1 bytea)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, cos double precision)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT n.doc_id, n.seen_at, n.cos
           FROM (%s) n
           JOIN documents d ON d.doc_id = n.doc_id AND d.seen_at = n.seen_at
          WHERE NOT dedup_pair_whitelisted($7, d.content_sha1)',
        dedup_model_knn_sql(p_model_id, '$1', 'e.seen_at BETWEEN $2 AND $3 AND e.doc_id IS DISTINCT FROM $4',
                            '$5', '$6'))
      USING p_vec, p_lo, p_hi, p_exclude, p_k, p_rerank, p_sha1;
END $$;
COMMENT ON FUNCTION dedup_nearest_candidates(smallint, halfvec, timestamptz, timestamptz, bigint, integer, integer, bytea) IS NULL;

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
    v_agrees boolean;
    v_ids bigint[];
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
    PERFORM dedup_hnsw_search_settings(dedup_model_ef_search(v_model, v_by_source -> ''));

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
                                           'facts_disagreement_share', v_settings -> 'facts_disagreement_share',
                                           'window_days', v_settings -> 'window_days');

        IF jsonb_typeof(v_json -> 'neighbours') = 'array' THEN
            -- gated: the hash layers' candidates (dedup_gate_candidates; a dry
            -- run's stored embeddings too)
            v_ids := ARRAY(SELECT x::bigint FROM jsonb_array_elements_text(v_json -> 'neighbours') x);
            SELECT c.doc_id, c.seen_at, c.cos INTO v_best
              FROM dedup_gate_candidates(p_model_id, v_vec, v_ids, CASE WHEN p_dry_run THEN p_stored END,
                                         v_sha1) c
             WHERE c.doc_id IS DISTINCT FROM v_doc_id
             ORDER BY c.cos DESC, c.seen_at, c.doc_id
             LIMIT 1;
        ELSE
            -- always: the nearest stored embeddings in the window (HNSW;
            -- dedup_nearest_candidates)
            SELECT c.doc_id, c.seen_at, c.cos INTO v_best
              FROM dedup_nearest_candidates(p_model_id, v_vec, v_lo, v_hi, v_doc_id,
                                            (v_settings ->> 'semantic_neighbours')::integer,
                                            (v_settings ->> 'semantic_rerank')::integer, v_sha1) c
             ORDER BY c.cos DESC, c.seen_at, c.doc_id
             LIMIT 1;
        END IF;

        v_agrees := false;
        IF v_best.doc_id IS NOT NULL AND v_best.cos >= v_dup THEN
            SELECT dedup_semantic_agrees(v_json ->> 'text', concat_ws(E'\n', d.title, d.body),
                                         v_json ->> 'body', d.body, (v_json ->> 'facts')::integer[], d.facts,
                                         v_settings)
              INTO v_agrees
              FROM documents d WHERE d.doc_id = v_best.doc_id AND d.seen_at = v_best.seen_at;
        END IF;
        IF v_best.doc_id IS NOT NULL AND v_best.cos >= v_dup AND v_agrees THEN
            verdict := 'duplicate'; layer := 'semantic'; score := v_best.cos; distance := NULL;
            matched_doc_id := v_best.doc_id; doc_id := NULL;
            SELECT d.external_id INTO matched_external_id
              FROM documents d WHERE d.doc_id = v_best.doc_id AND d.seen_at = v_best.seen_at;
            v_again := dedup_redelivered(v_json ->> 'external_id', v_json ->> 'source', v_sha1,
                                         v_best.doc_id, v_lo, v_hi);
            IF v_again = candidate_id THEN
                -- the hash layers' review of this very item, recorded by
                -- dedup_ingest a statement ago against the same document: not
                -- an earlier delivery (before revision 0036 it was taken for
                -- one, and the item's document and review were deleted)
                v_again := NULL;
            END IF;
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
            -- (or a duplicate by cosine that dedup_semantic_agrees turned down)
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
