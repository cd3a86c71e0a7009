-- dedup-pg schema: the semantic layer. Embeddings in pgvector halfvec
-- columns, one HNSW index per model over every day partition; models are
-- versioned and switched in one step; thresholds per model and content type
-- (settings in 10_settings.sql; per-source content types in dedup_sources).
-- dedup_ingest (60_ingest.sql) flags the items to embed ("embed", with the
-- gate's candidates in "neighbours"); Python embeds them and calls
-- dedup_ingest_semantic in the same transaction.

-- Embedding models. Vectors of different models are never compared: every
-- embedding row names its model, and each model has its own HNSW index.
CREATE TABLE embedding_models (
    model_id     smallint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE,   -- what dedup_pg.embeddings.load_embedder loads
    dimensions   integer NOT NULL CHECK (dimensions BETWEEN 1 AND 4000),
    strategy     text NOT NULL,          -- how a long text becomes one vector (embeddings.STRATEGIES)
    status       text NOT NULL DEFAULT 'building' CHECK (status IN ('building', 'active', 'retired')),
    -- {content_type: {"duplicate": cosine, "review": cosine}}, this model's own
    thresholds   jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    activated_at timestamptz,
    retired_at   timestamptz,
    -- what its HNSW index holds: the halfvec itself (cosine), or binary_quantize(halfvec)::bit
    -- (Hamming distance, 1 bit a dimension), whose nearest semantic_rerank are re-ranked by the
    -- halfvec's cosine (dedup_model_knn_sql)
    index_kind   text NOT NULL DEFAULT 'halfvec' CHECK (index_kind IN ('halfvec', 'binary'))
);
CREATE UNIQUE INDEX embedding_models_one_active_idx ON embedding_models ((true)) WHERE status = 'active';
COMMENT ON TABLE embedding_models IS
    'Embedding models: one active (used by ingest), others building (dedup-pg reembed) or retired.';

-- One vector per kept document and model, in the document's day partition.
CREATE TABLE document_embeddings (
    doc_id    bigint NOT NULL,
    seen_at   timestamptz NOT NULL,
    model_id  smallint NOT NULL REFERENCES embedding_models,
    embedding halfvec NOT NULL,
    PRIMARY KEY (doc_id, seen_at, model_id)
) PARTITION BY RANGE (seen_at);
COMMENT ON TABLE document_embeddings IS
    'Embeddings of kept documents, per model (halfvec); HNSW index per model: document_embeddings_model<N>_idx.';

-- Distinct numbers in a text (full-width digits folded): what template
-- articles that read alike differ in.
CREATE FUNCTION dedup_numbers(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT m[1]), '{}')
      FROM regexp_matches(translate(coalesce(p_text, ''), '０１２３４５６７８９．', '0123456789.'),
                          '([0-9]+(?:\.[0-9]+)?)', 'g') m
$$;

-- Share of the smaller set of numbers found in the other (1 when either has none).
CREATE FUNCTION dedup_number_overlap(p_a text[], p_b text[])
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN least(cardinality(p_a), cardinality(p_b)) = 0 THEN 1.0
                ELSE (SELECT count(*) FROM unnest(p_a) x WHERE x = ANY (p_b))::double precision
                     / least(cardinality(p_a), cardinality(p_b)) END
$$;

-- Is a semantic match at or above the duplicate cosine a duplicate (else a
-- review)? p_a is the incoming text, p_b the stored one: the texts (title and
-- body), the bodies and the fact keys. Two checks, both must pass:
-- - the texts share most of their numbers (semantic_min_number_overlap of the
--   smaller set; null: never a duplicate);
-- - the hash layers' fact check (dedup_facts_verdict, facts_disagreement_share
--   and the template and money rules) does not find two stories: an embedding
--   reads another day's bulletin, another casting or another price over one
--   template as the same text, as the hash layers do.
-- The fact check's copied-body exception and added-facts rule are left out:
-- a copy that keeps most of a body whole is the hash layers' to find (they
-- apply both), and the semantic layer judges texts they did not find as
-- copies. Before revision 0037 only the numbers were checked: on
-- bench/validation.py's validation set, gated mode merged 61 of 846 template
-- pairs where the default (hash layers) merged 8 (BENCHMARKS.md).
CREATE FUNCTION dedup_semantic_agrees(p_a_text text, p_b_text text, p_a_body text, p_b_body text,
                                      p_a_facts integer[], p_b_facts integer[], p_settings jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(dedup_number_overlap(dedup_numbers(p_a_text), dedup_numbers(p_b_text))
                        >= (p_settings ->> 'semantic_min_number_overlap')::double precision, false)
       AND dedup_facts_verdict(p_a_facts, p_b_facts, (p_settings ->> 'facts_disagreement_share')::double precision,
                               NULL, p_a_body, p_b_body, NULL, NULL, NULL, p_settings) IS NULL
$$;

-- The HNSW index of one model, over every day partition of document_embeddings.
CREATE FUNCTION dedup_model_index_name(p_model_id smallint)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'document_embeddings_model' || p_model_id || '_idx' $$;

-- Its definition, for a table (the parent, or one partition): over the halfvec
-- (cosine) or over its binary quantization (Hamming), as the model's index_kind says.
CREATE FUNCTION dedup_model_index_sql(p_model_id smallint, p_table regclass, p_index text,
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

-- The nearest-neighbour statement of one model, as SQL text for EXECUTE (the
-- index matches only a literal dimension): the stored embeddings e of the
-- model that pass p_filter (a condition on e), nearest to p_query (a halfvec
-- expression) first, at most p_limit, each with its cosine "cos". Through the
-- index the model has: the halfvec HNSW ordered by cosine distance; or the bit
-- HNSW, whose nearest greatest(p_rerank, p_limit) by Hamming distance are
-- re-ranked by the halfvec's cosine (read from the heap). One definition for
-- ingest (dedup_ingest_semantic) and rebuild (dedup_rebuild_vector_pairs).
CREATE FUNCTION dedup_model_knn_sql(p_model_id smallint, p_query text, p_filter text,
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

-- hnsw.ef_search for a search of the model: the setting, at least the re-rank
-- list of a binary index (its nearest by Hamming distance).
CREATE FUNCTION dedup_model_ef_search(p_model embedding_models, p_settings jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_model.index_kind
        WHEN 'binary' THEN greatest((p_settings ->> 'semantic_ef_search')::integer,
                                    (p_settings ->> 'semantic_rerank')::integer)::text
        ELSE p_settings ->> 'semantic_ef_search'
    END
$$;

-- The HNSW index scans of this transaction: hnsw.ef_search (p_ef_search,
-- dedup_model_ef_search) and, with pgvector >= 0.8, iterative scans that keep
-- scanning when the window's filter drops rows. (sql/citus/ has its Citus
-- form: there the settings must reach the workers' scans.)
CREATE FUNCTION dedup_hnsw_search_settings(p_ef_search text)
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

-- A gated semantic check's candidates: those of the stored documents p_ids
-- (the hash layers' candidates) that have an embedding of p_model_id, or one
-- in p_stored (a dry run's, not stored: doc_id, seen_at, embedding), each with
-- its cosine similarity to p_vec; not one whose document is gone, nor one
-- whose pair with the text of digest p_sha1 is whitelisted. Looked up by
-- key: the embeddings by doc_id (= ANY of an array, the primary key of each
-- partition) and each one's document row through a subquery. As joins, the
-- planner read every stored vector and every document: 30-35 ms a call at
-- 10k documents (auto_explain in bench/growth.py --semantic-mode gated).
-- PL/pgSQL, not SQL that PostgreSQL would inline: dedup_ingest_semantic's
-- statements get a custom plan at every call, and an inlined function's body
-- is parsed again for each plan (the statement 0.49 ms against 0.33 written
-- out, 600 calls on 1,464 stored vectors); here it keeps a plan of its own
-- (0.28-0.31 ms against 0.29-0.30). (sql/citus/ has its Citus form.)
CREATE FUNCTION dedup_gate_candidates(p_model_id smallint, p_vec halfvec, p_ids bigint[], p_stored jsonb,
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

-- An always-mode semantic check's candidates: the p_k stored embeddings of
-- p_model_id nearest to p_vec, seen in p_lo .. p_hi, but p_exclude's (the
-- model's index, dedup_model_knn_sql; p_rerank: a binary index's re-rank
-- list), each with its cosine similarity; not one whose pair with the text of
-- digest p_sha1 is whitelisted. (sql/citus/ has its Citus form.)
CREATE FUNCTION dedup_nearest_candidates(p_model_id smallint, p_vec halfvec, p_lo timestamptz,
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

-- The semantic layer, second statement of an ingest transaction: for the
-- items dedup_ingest flagged with "embed", compare their embeddings (made by
-- p_model_id, which must be the active model) with stored ones: the gate's
-- candidates ("neighbours") or the nearest in the HNSW index. At or above
-- the duplicate threshold: a duplicate (the document dedup_ingest stored is
-- demoted to a candidate, restorable); at or above the review threshold: a
-- review. Kept items' embeddings are stored. p_items: pos, doc_id, seen_at,
-- source, content_type, sha1, text (title and body), embedding (text),
-- neighbours (doc ids, or absent), and dedup_ingest's verdict columns. p_stored: embeddings of the
-- neighbours that had none (doc_id, seen_at, embedding). Returns every item's
-- final verdict.
--
-- The candidates are read by dedup_gate_candidates (gated) and
-- dedup_nearest_candidates (always), each with a Citus form in sql/citus/;
-- this function is one definition for one node and Citus (since revision
-- 0057).
CREATE FUNCTION dedup_ingest_semantic(p_items jsonb, p_stored jsonb, p_model_id smallint,
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
