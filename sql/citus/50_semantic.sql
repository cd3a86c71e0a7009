-- dedup-pg on Citus: dedup_ingest_semantic (sql/schema/50_semantic.sql) as a
-- Citus coordinator can plan it; only the statements marked "Citus:" differ
-- (tests/test_citus_schema.py: the checksum is the single-node definition's).

-- from sql/schema/50_semantic.sql dedup_ingest_semantic: sha256 7b57c8a19e50abc2
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
    -- Citus: candidates' vectors and digests, fetched before the coordinator-side checks
    v_nb bigint[];
    v_e_docs bigint[]; v_e_seen timestamptz[]; v_e_cos double precision[];
    v_f_docs bigint[]; v_f_seen timestamptz[]; v_f_sha1 bytea[];
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
    -- Citus: SET LOCAL with citus.propagate_set_commands = 'local', so that
    -- the workers' index scans use it too: set_config() is not propagated
    -- (the shards' searches ran with pgvector's default ef_search, 40)
    PERFORM set_config('citus.propagate_set_commands', 'local', true);
    EXECUTE format('SET LOCAL hnsw.ef_search = %s', dedup_model_ef_search(v_model, v_by_source -> ''));
    BEGIN  -- pgvector >= 0.8: keep scanning when the window filter drops rows
        EXECUTE 'SET LOCAL hnsw.iterative_scan = relaxed_order';  -- Citus: SET LOCAL, propagated
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
                                           'facts_disagreement_share', v_settings -> 'facts_disagreement_share',
                                           'window_days', v_settings -> 'window_days');

        IF jsonb_typeof(v_json -> 'neighbours') = 'array' THEN
            -- gated: the hash layers' candidates, looked up by key: their ids as
            -- an array for each partition's primary key (doc_id, ...), and each
            -- one's document row through a subquery per candidate. As joins, the
            -- planner read every stored vector and every document (and ran the
            -- whitelist test on each document row): 30-35 ms a call at 10k.
            -- Citus: the candidates' vectors compared on their shards and
            -- their digests fetched (both by doc_id, pruned), then the
            -- whitelist checked and the best taken here on the coordinator
            v_nb := ARRAY(SELECT x::bigint FROM jsonb_array_elements_text(v_json -> 'neighbours') x);
            SELECT array_agg(e.doc_id), array_agg(e.seen_at), array_agg(1 - (e.embedding <=> v_vec))
              INTO v_e_docs, v_e_seen, v_e_cos
              FROM document_embeddings e
             WHERE e.model_id = p_model_id AND e.doc_id = ANY (v_nb);
            SELECT array_agg(d.doc_id), array_agg(d.seen_at), array_agg(d.content_sha1)
              INTO v_f_docs, v_f_seen, v_f_sha1
              FROM documents d WHERE d.doc_id = ANY (v_nb);
            SELECT n.doc_id, n.seen_at, n.cos INTO v_best
              FROM (SELECT e.doc_id, e.seen_at, e.cos FROM unnest(v_e_docs, v_e_seen, v_e_cos) e(doc_id, seen_at, cos)
                    UNION ALL
                    SELECT (s ->> 'doc_id')::bigint, (s ->> 'seen_at')::timestamptz,
                           1 - ((s ->> 'embedding')::halfvec <=> v_vec)
                      FROM jsonb_array_elements(coalesce(p_stored, '[]')) s
                     WHERE p_dry_run AND s -> 'doc_id' IN (SELECT jsonb_array_elements(v_json -> 'neighbours'))) n
             WHERE n.doc_id IS DISTINCT FROM v_doc_id
               -- null (left out) when the document is gone, as the join was
               AND (SELECT NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
                      FROM unnest(v_f_docs, v_f_seen, v_f_sha1) d(doc_id, seen_at, content_sha1)
                     WHERE d.doc_id = n.doc_id AND d.seen_at = n.seen_at)
             ORDER BY cos DESC, n.seen_at, n.doc_id
             LIMIT 1;
        ELSE
            -- always: the nearest stored embeddings in the window (HNSW; Citus:
            -- each shard's index returns its nearest, the coordinator merges)
            EXECUTE format(
                'SELECT array_agg(n.doc_id), array_agg(n.seen_at), array_agg(n.cos) FROM (%s) n',
                dedup_model_knn_sql(p_model_id, '$1', 'e.seen_at BETWEEN $2 AND $3 AND e.doc_id IS DISTINCT FROM $4',
                                    '$5', '$6'))
               INTO v_e_docs, v_e_seen, v_e_cos
              USING v_vec, v_lo, v_hi, v_doc_id, (v_settings ->> 'semantic_neighbours')::integer,
                    (v_settings ->> 'semantic_rerank')::integer;
            SELECT array_agg(d.doc_id), array_agg(d.seen_at), array_agg(d.content_sha1)
              INTO v_f_docs, v_f_seen, v_f_sha1
              FROM documents d WHERE d.doc_id = ANY (v_e_docs);
            SELECT n.doc_id, n.seen_at, n.cos INTO v_best
              FROM unnest(v_e_docs, v_e_seen, v_e_cos) n(doc_id, seen_at, cos)
              JOIN unnest(v_f_docs, v_f_seen, v_f_sha1) d(doc_id, seen_at, content_sha1)
                ON d.doc_id = n.doc_id AND d.seen_at = n.seen_at
             WHERE NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
             ORDER BY n.cos DESC, n.seen_at, n.doc_id
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

