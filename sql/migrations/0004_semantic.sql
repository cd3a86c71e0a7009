-- dedup-pg revision 0004: the semantic layer (applied by
-- migrations/versions/0004_semantic.py). Embeddings in pgvector halfvec
-- columns, one HNSW index per model over every day partition; models are
-- versioned and switched in one step; thresholds per model and content type;
-- per-source settings; the SimHash band probe reads covering indexes only.
-- dedup_ingest and dedup_ensure_partitions are redefined
-- here in full; the downgrade re-applies revision 0001's definitions.

INSERT INTO dedup_settings (name, value, description) VALUES
 ('semantic_mode', '"off"',
  'semantic layer: "off"; "gated" (only texts whose hash layers found a candidate within semantic_gate_distance are embedded and compared with those candidates); "always" (every text the hash layers keep is embedded and searched in the HNSW index)'),
 ('semantic_gate_distance', '16',
  'gated mode: SimHash candidates (from the band probe) within this distance, and containment candidates, are compared by embedding'),
 ('semantic_neighbours', '10', 'always mode: nearest stored embeddings read from the HNSW index per text'),
 ('semantic_ef_search', '64', 'HNSW candidate list size (hnsw.ef_search) for the semantic search; larger = better recall, slower'),
 ('semantic_duplicate', 'null',
  'cosine at or above which a text is a semantic duplicate; null = the active model''s threshold for the text''s content type (embedding_models.thresholds)'),
 ('semantic_review', 'null',
  'cosine at or above which a text is queued for review; null = the active model''s threshold for the content type'),
 ('semantic_min_number_overlap', '0.8',
  'a semantic match whose texts share less than this share of the smaller one''s distinct numbers (dates, counts, scores) goes to review, not duplicate: template articles (daily figures, match reports) read alike but differ in their numbers'),
 ('content_type', '"news"',
  'content type of texts whose source has none (dedup_sources) and whose item names none: picks the semantic thresholds (news, product, comment, ...)');

-- The SimHash band indexes become covering (simhash, seen_at, doc_id): the
-- band probe reads only index pages. Measured on 400,000 stored documents:
-- radius-1 probe p50 3-5 ms -> 0.95 ms, heap pages read per probe ~75 -> 0.
DROP INDEX documents_simhash_band0_idx, documents_simhash_band1_idx,
           documents_simhash_band2_idx, documents_simhash_band3_idx;
CREATE INDEX documents_simhash_band0_idx ON documents (simhash_band0) INCLUDE (simhash, seen_at, doc_id);
CREATE INDEX documents_simhash_band1_idx ON documents (simhash_band1) INCLUDE (simhash, seen_at, doc_id);
CREATE INDEX documents_simhash_band2_idx ON documents (simhash_band2) INCLUDE (simhash, seen_at, doc_id);
CREATE INDEX documents_simhash_band3_idx ON documents (simhash_band3) INCLUDE (simhash, seen_at, doc_id);

-- A document's clauses by doc_id (dedup_document_item, when a stored text is
-- turned into a candidate): rows go in in doc_id order, so a BRIN index finds
-- them for a few hundred kB per 20M rows (measured: 285 -> 6 ms per lookup
-- at 1M documents) where a btree would cost ~25 bytes a clause.
CREATE INDEX document_clauses_doc_id_idx ON document_clauses USING brin (doc_id) WITH (pages_per_range = 8);

-- Per-source settings: a source's content type and its own values of
-- dedup_settings keys (say a stricter simhash_distance for one site).
CREATE TABLE dedup_sources (
    source       text PRIMARY KEY,
    content_type text,
    settings     jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE dedup_sources IS
    'Per-source content type and settings overrides (keys of dedup_settings); used by dedup_ingest.';

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
    retired_at   timestamptz
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

-- Partitions of document_embeddings for the days that already have documents.
DO $$
DECLARE
    v_day date;
BEGIN
    FOR v_day IN SELECT to_date(substring(c.relname FROM '_p(\d{8})$'), 'YYYYMMDD')
                   FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                  WHERE i.inhparent = 'documents'::regclass LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF document_embeddings FOR VALUES FROM (%L) TO (%L)',
                       'document_embeddings_p' || to_char(v_day, 'YYYYMMDD'),
                       v_day::timestamp AT TIME ZONE 'UTC', (v_day + 1)::timestamp AT TIME ZONE 'UTC');
    END LOOP;
END $$;

CREATE OR REPLACE VIEW dedup_partitions AS
SELECT parent.relname AS table_name,
       to_date(substring(child.relname FROM '_p(\d{8})$'), 'YYYYMMDD') AS day,
       child.relname AS partition_name,
       greatest(child.reltuples, 0)::bigint AS approx_rows,
       pg_total_relation_size(child.oid) AS bytes
  FROM pg_inherits i
  JOIN pg_class parent ON parent.oid = i.inhparent
  JOIN pg_class child ON child.oid = i.inhrelid
 WHERE parent.relname IN ('documents', 'document_clauses', 'document_sightings', 'duplicate_candidates',
                          'document_embeddings')
   AND parent.relnamespace = 'public'::regnamespace;

CREATE OR REPLACE FUNCTION dedup_ensure_partitions(p_from date, p_to date)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_day date;
    v_table text;
    v_created integer := 0;
BEGIN
    IF p_to - p_from > 3660 THEN
        RAISE EXCEPTION 'dedup_ensure_partitions: % .. % spans more than ten years', p_from, p_to;
    END IF;
    FOR v_day IN SELECT generate_series(p_from, p_to, interval '1 day')::date LOOP
        FOREACH v_table IN ARRAY ARRAY['documents', 'document_clauses', 'document_sightings',
                                       'duplicate_candidates', 'document_embeddings'] LOOP
            IF to_regclass(format('%I_p%s', v_table, to_char(v_day, 'YYYYMMDD'))) IS NULL THEN
                -- Another session may create it at the same moment: serialise on
                -- the day, and take "already exists" (its commit raced our check)
                -- as success.
                PERFORM pg_advisory_xact_lock(hashtext('dedup_ensure_partitions'), v_day - date '2000-01-01');
                BEGIN
                    EXECUTE format(
                        'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                        format('%s_p%s', v_table, to_char(v_day, 'YYYYMMDD')), v_table,
                        v_day::timestamp AT TIME ZONE 'UTC',
                        (v_day + 1)::timestamp AT TIME ZONE 'UTC');
                    v_created := v_created + 1;
                EXCEPTION WHEN duplicate_table THEN
                    NULL;
                END;
            END IF;
        END LOOP;
    END LOOP;
    RETURN v_created;
END $$;

-- Settings for texts of one source (NULL: no source) under one call's
-- overrides: dedup_settings, then dedup_sources.settings, then the overrides;
-- plus "content_type" from the source when it names one.
CREATE FUNCTION dedup_effective_settings(p_source text, p_overrides jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_settings jsonb;
    v_source dedup_sources;
    v_bad text;
BEGIN
    SELECT jsonb_object_agg(s.name, s.value) INTO v_settings FROM dedup_settings s;
    -- normalization settings change fingerprints: per database only
    SELECT string_agg(k, ', ') INTO v_bad
      FROM jsonb_object_keys(coalesce(p_overrides, '{}')) k
     WHERE NOT v_settings ? k OR k IN ('lowercase', 'noise_patterns', 'max_chars');
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'dedup_ingest: these settings cannot be overridden per call: %', v_bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_source IS NOT NULL THEN
        SELECT * INTO v_source FROM dedup_sources s WHERE s.source = p_source;
        IF FOUND THEN
            SELECT string_agg(k, ', ') INTO v_bad
              FROM jsonb_object_keys(v_source.settings) k
             WHERE NOT v_settings ? k OR k IN ('lowercase', 'noise_patterns', 'max_chars');
            IF v_bad IS NOT NULL THEN
                RAISE EXCEPTION 'dedup_sources row for %: these settings cannot be set per source: %',
                    p_source, v_bad USING ERRCODE = 'invalid_parameter_value';
            END IF;
            v_settings := v_settings || v_source.settings;
            IF v_source.content_type IS NOT NULL THEN
                v_settings := v_settings || jsonb_build_object('content_type', v_source.content_type);
            END IF;
        END IF;
    END IF;
    v_settings := v_settings || coalesce(p_overrides, '{}');
    IF NOT (v_settings ->> 'semantic_mode') IN ('off', 'gated', 'always') THEN
        RAISE EXCEPTION 'semantic_mode must be "off", "gated" or "always", not %', v_settings -> 'semantic_mode'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_settings;
END $$;

DROP FUNCTION dedup_ingest(jsonb, boolean, jsonb);

-- The ingest function: one call per batch, one transaction (the hash layers;
-- the semantic layer is dedup_ingest_semantic, called next in the same
-- transaction for the items this one flags with "embed").
--
CREATE FUNCTION dedup_ingest(p_items jsonb, p_dry_run boolean DEFAULT false, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (pos integer, verdict text, layer text, doc_id bigint,
               matched_doc_id bigint, matched_external_id text,
               score double precision, distance integer, candidate_id bigint,
               embed boolean, neighbours bigint[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_settings jsonb;
    v_window interval;
    v_cont_dup double precision;
    v_cont_review double precision;
    v_cont_min integer;
    v_cont_incoming double precision;
    v_boiler_docs integer;
    v_sim_overlap double precision;
    v_useful bigint[];
    v_n_boiler integer;
    v_n_item integer;
    v_shared integer;
    v_stored_n integer;
    v_to_review boolean;
    it dedup_item;
    v_lo timestamptz;
    v_hi timestamptz;
    v_sha1 bytea;
    v_steps integer[];
    v_stripes integer[];
    v_key text;
    v_json jsonb;
    v_dist_cache jsonb := '{}';
    v_dup_dist integer;
    v_review_dist integer;
    v_claimed boolean;
    v_cand record;
    v_n integer[][];
    -- the best match (m_) and the best review-band match (r_) so far
    m_doc_id bigint; m_seen_at timestamptz; m_ext text; m_layer text; m_score double precision; m_dist integer;
    r_doc_id bigint; r_seen_at timestamptz; r_ext text; r_layer text; r_score double precision; r_dist integer;
    v_doc_id bigint;
    v_matched_body text;
    v_clauses bigint[];
    v_thresholds jsonb;
    v_by_source jsonb := '{}';
    v_source_key text;
    v_prev_key text;
    v_lead bigint[];
    v_mode text;
    v_gate_dist integer;
    v_gate bigint[];
    v_probe_max integer;
    v_first boolean;
    v_white boolean;
BEGIN
    -- settings: dedup_settings, then the source's own (dedup_sources), then
    -- this call's overrides; resolved once per source in the batch
    v_by_source := jsonb_build_object('', dedup_effective_settings(NULL, p_overrides));

    IF NOT p_dry_run THEN
        -- Lock every stripe a batch item could collide on, in stripe order (so
        -- two batches cannot deadlock). A large batch would lock most stripes
        -- anyway: it takes the whole table at once instead, which conflicts with
        -- the small batches' row locks and costs one lock instead of thousands.
        v_stripes := ARRAY(
            SELECT DISTINCT k FROM jsonb_array_elements(p_items) e,
                 LATERAL (SELECT ((e ->> 'simhash')::bigint >> (16 * b) & 65535)::integer AS k
                            FROM generate_series(0, 3) b
                          UNION ALL
                          SELECT (get_byte(decode(e ->> 'sha1', 'hex'), 0) << 8
                                  | get_byte(decode(e ->> 'sha1', 'hex'), 1))
                          UNION ALL
                          SELECT (h::bigint & 65535)::integer
                            FROM jsonb_array_elements_text(e -> 'clauses') h) keys
             ORDER BY k);
        IF cardinality(v_stripes) > 512 THEN
            LOCK TABLE dedup_lock_stripes IN EXCLUSIVE MODE;
        ELSE
            PERFORM 1 FROM dedup_lock_stripes l WHERE l.stripe = ANY (v_stripes)
             ORDER BY l.stripe FOR UPDATE;
        END IF;
    END IF;

    FOR v_json IN SELECT e FROM jsonb_array_elements(p_items) e ORDER BY (e ->> 'pos')::integer
    LOOP
        it := jsonb_populate_record(NULL::dedup_item, v_json);
        -- the first clauses of the text, in order (the lead rule, below)
        v_lead := ARRAY(SELECT h::bigint FROM jsonb_array_elements_text(v_json -> 'lead') h);
        v_source_key := coalesce(it.source, '');
        IF v_source_key IS DISTINCT FROM v_prev_key THEN
            IF NOT v_by_source ? v_source_key THEN
                v_by_source := v_by_source || jsonb_build_object(
                    v_source_key, dedup_effective_settings(it.source, p_overrides));
            END IF;
            v_settings := v_by_source -> v_source_key;
            v_prev_key := v_source_key;
            v_window := make_interval(days => (v_settings ->> 'window_days')::integer);
            v_cont_dup := (v_settings ->> 'containment_threshold')::double precision;
            v_cont_review := (v_settings ->> 'containment_review_threshold')::double precision;
            v_cont_min := (v_settings ->> 'containment_min_shared')::integer;
            v_cont_incoming := (v_settings ->> 'containment_incoming_share')::double precision;
            v_boiler_docs := (v_settings ->> 'containment_boilerplate_docs')::integer;
            v_sim_overlap := (v_settings ->> 'simhash_min_clause_overlap')::double precision;
            v_gate_dist := (v_settings ->> 'semantic_gate_distance')::integer;
            v_mode := v_settings ->> 'semantic_mode';
            v_steps := ARRAY(SELECT (r ->> 0)::integer
                               FROM jsonb_array_elements(v_settings -> 'simhash_distance_by_length') r);
        END IF;
        pos := it.pos; verdict := NULL; layer := NULL; doc_id := NULL; matched_doc_id := NULL;
        matched_external_id := NULL; score := NULL; distance := NULL; candidate_id := NULL;
        embed := false; neighbours := NULL; v_doc_id := NULL; v_gate := '{}'; v_white := false;
        v_sha1 := decode(it.sha1, 'hex');
        v_clauses := coalesce(it.clauses, '{}');
        IF v_window = interval '0' THEN
            v_lo := '-infinity'; v_hi := 'infinity';
        ELSE
            v_lo := it.seen_at - v_window; v_hi := it.seen_at + v_window;
        END IF;
        -- distances depend on length only through the rule's steps: cache per step
        v_key := v_source_key || '/' || (SELECT count(*) FROM unnest(v_steps) m WHERE m <= it.length)::text;
        IF NOT v_dist_cache ? v_key THEN
            SELECT to_jsonb(x) INTO v_json FROM dedup_simhash_distances(it.length, v_settings) x;
            v_dist_cache := v_dist_cache || jsonb_build_object(v_key, v_json);
        END IF;
        v_dup_dist := (v_dist_cache -> v_key ->> 'duplicate_distance')::integer;
        v_review_dist := (v_dist_cache -> v_key ->> 'review_distance')::integer;
        v_thresholds := jsonb_build_object(
            'simhash_distance', v_dup_dist,
            'simhash_review_distance', v_review_dist,
            'containment_threshold', v_cont_dup,
            'containment_review_threshold', v_cont_review,
            'containment_incoming_share', v_cont_incoming,
            'window_days', v_settings -> 'window_days');
        m_doc_id := NULL; m_layer := NULL; m_score := NULL; m_dist := NULL;
        r_doc_id := NULL; r_layer := NULL; r_score := NULL; r_dist := NULL;

        -- Whitelisted text: never a duplicate. Skip every layer.
        IF EXISTS (SELECT 1 FROM dedup_whitelist w WHERE w.kind = 'text' AND w.content_sha1 = v_sha1) THEN
            verdict := 'new'; v_white := true;
        END IF;

        -- Exact layer. Claiming the digest is the check: the unique index
        -- decides, and a digest last seen outside the window is taken over.
        IF verdict IS NULL THEN
            IF p_dry_run THEN
                v_claimed := NOT EXISTS (
                    SELECT 1 FROM document_digests g
                     WHERE g.content_sha1 = v_sha1 AND g.seen_at BETWEEN v_lo AND v_hi);
            ELSE
                v_doc_id := nextval('documents_doc_id_seq');
                INSERT INTO document_digests AS g (content_sha1, doc_id, seen_at)
                VALUES (v_sha1, v_doc_id, it.seen_at)
                ON CONFLICT (content_sha1) DO UPDATE
                   SET doc_id = EXCLUDED.doc_id, seen_at = EXCLUDED.seen_at
                 WHERE g.seen_at NOT BETWEEN v_lo AND v_hi
                RETURNING true INTO v_claimed;
                v_claimed := coalesce(v_claimed, false);
            END IF;
            IF NOT v_claimed THEN
                SELECT g.doc_id, g.seen_at, d.external_id, d.body
                  INTO matched_doc_id, m_seen_at, matched_external_id, v_matched_body
                  FROM document_digests g
                  LEFT JOIN documents d ON d.doc_id = g.doc_id AND d.seen_at = g.seen_at
                 WHERE g.content_sha1 = v_sha1;
                verdict := 'duplicate'; layer := 'exact'; score := 1.0; distance := 0;
                IF NOT p_dry_run THEN
                    candidate_id := dedup_record_candidate(
                        it, 'auto', 'exact', NULL, matched_doc_id, m_seen_at, v_matched_body,
                        1.0, 0, v_thresholds);
                END IF;
                RETURN NEXT;
                CONTINUE;
            END IF;
        END IF;

        -- Clause evidence, used by both near-duplicate layers. A clause that
        -- v_boiler_docs stored documents already hold is site boilerplate (nav
        -- bars, "related news", copyright lines): it is left out of the
        -- comparison and out of both texts' clause counts.
        IF verdict IS NULL THEN
            SELECT coalesce(array_agg(h) FILTER (WHERE n < v_boiler_docs), '{}'),
                   count(*) FILTER (WHERE n >= v_boiler_docs)
              INTO v_useful, v_n_boiler
              FROM (SELECT h, (SELECT count(*) FROM (SELECT 1 FROM document_clauses dc
                                                     WHERE dc.clause_hash = h AND dc.seen_at BETWEEN v_lo AND v_hi
                                                     LIMIT v_boiler_docs) x) AS n
                      FROM unnest(v_clauses) h) holders;
            v_n_item := cardinality(v_clauses) - v_n_boiler;
        END IF;

        -- SimHash layer: probe the bands (radius 1 when the review distance
        -- needs it), confirm by Hamming distance.
        IF verdict IS NULL THEN
            -- band values to probe, computed once (not per row)
            v_n := ARRAY[
                dedup_band_neighbours((it.simhash & 65535)::integer, v_review_dist / 4),
                dedup_band_neighbours(((it.simhash >> 16) & 65535)::integer, v_review_dist / 4),
                dedup_band_neighbours(((it.simhash >> 32) & 65535)::integer, v_review_dist / 4),
                dedup_band_neighbours(((it.simhash >> 48) & 65535)::integer, v_review_dist / 4)];
            -- the closest candidate decides this layer; the others within the
            -- semantic gate distance are what a gated semantic check compares with
            v_probe_max := CASE WHEN v_mode = 'gated' THEN greatest(v_review_dist, v_gate_dist)
                                ELSE v_review_dist END;
            v_first := true;
            FOR v_cand IN
            -- One index-only scan per band (the band indexes carry simhash,
            -- seen_at and doc_id): no heap page is read for the hundreds of
            -- candidates a radius-1 probe returns; only the few within
            -- distance are looked up.
            SELECT c.doc_id, c.seen_at, d.external_id, c.dist, d.clause_count
              FROM (SELECT b.doc_id, b.seen_at, bit_count((b.simhash # it.simhash)::bit(64))::integer AS dist
                      FROM (SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band0 = ANY (v_n[1:1][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                            UNION
                            SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band1 = ANY (v_n[2:2][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                            UNION
                            SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band2 = ANY (v_n[3:3][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                            UNION
                            SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band3 = ANY (v_n[4:4][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                           ) b
                   ) c
              JOIN documents d ON d.doc_id = c.doc_id AND d.seen_at = c.seen_at
             WHERE c.dist <= v_probe_max
               AND NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
             ORDER BY c.dist, c.seen_at, c.doc_id
             LIMIT 5
            LOOP
            IF v_mode = 'gated' AND v_cand.dist <= v_gate_dist THEN
                v_gate := v_gate || v_cand.doc_id;
            END IF;
            IF v_first AND v_cand.dist <= v_review_dist THEN
                v_to_review := v_cand.dist > v_dup_dist;
                v_stored_n := v_cand.clause_count - v_n_boiler;
                IF NOT v_to_review AND v_n_item >= 5 AND v_stored_n >= 5 THEN
                    -- Same vocabulary is not the same text: long texts must also
                    -- share some clauses (two pieces of one series by one author
                    -- can sit 3 bits apart with no sentence in common).
                    SELECT count(*) INTO v_shared FROM document_clauses dc
                     WHERE dc.doc_id = v_cand.doc_id AND dc.seen_at = v_cand.seen_at
                       AND dc.clause_hash = ANY (v_useful);
                    v_to_review := v_shared < v_sim_overlap * least(v_n_item, v_stored_n);
                END IF;
                IF v_to_review THEN
                    r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_cand.external_id;
                    r_layer := 'simhash'; r_score := 1.0 - v_cand.dist / 64.0; r_dist := v_cand.dist;
                ELSE
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_cand.external_id;
                    m_layer := 'simhash'; m_score := 1.0 - v_cand.dist / 64.0; m_dist := v_cand.dist;
                END IF;
            END IF;
            v_first := false;
            END LOOP;
        END IF;

        -- Containment layer: clauses (boilerplate left out) shared with a stored
        -- text. Catches copies that add or drop paragraphs: site banners, ads,
        -- truncated recrawls. Containment = shared / the smaller text's clauses.
        -- It is a duplicate only when the incoming text is mostly old news too
        -- (containment_incoming_share of its clauses are in the other text): a
        -- long text that merely quotes a short stored one is kept, for review.
        IF verdict IS NULL AND m_doc_id IS NULL AND v_n_item >= 2 THEN
            SELECT c.doc_id, c.seen_at, d.external_id, c.shared, d.clause_count - v_n_boiler AS stored_n,
                   c.shared::double precision
                       / least(v_n_item, greatest(d.clause_count - v_n_boiler, c.shared)) AS ratio,
                   c.shared::double precision / v_n_item AS incoming_share
              INTO v_cand
              FROM (SELECT dc.doc_id, dc.seen_at, count(*) AS shared
                      FROM document_clauses dc
                     WHERE dc.clause_hash = ANY (v_useful) AND dc.seen_at BETWEEN v_lo AND v_hi
                     GROUP BY dc.doc_id, dc.seen_at
                    HAVING count(*) >= 2) c
              JOIN documents d ON d.doc_id = c.doc_id AND d.seen_at = c.seen_at
             WHERE c.shared >= least(v_cont_min, v_n_item, greatest(d.clause_count - v_n_boiler, c.shared))
               AND NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
             ORDER BY ratio DESC, incoming_share DESC, c.seen_at, c.doc_id
             LIMIT 1;
            IF v_cand.doc_id IS NOT NULL THEN
                IF v_mode = 'gated' THEN
                    v_gate := v_gate || v_cand.doc_id;
                END IF;
                -- The lead rule: a stored text whose clauses (2 or more) all open
                -- the incoming one is a truncated copy of it (a recrawl that kept
                -- only the lead), whatever the incoming text adds after them.
                IF v_cand.ratio >= v_cont_dup AND v_cand.incoming_share < v_cont_incoming
                   AND v_cand.shared = v_cand.stored_n AND v_cand.stored_n >= 2
                   AND v_cand.stored_n = (SELECT count(*) FROM document_clauses dc
                                           WHERE dc.doc_id = v_cand.doc_id AND dc.seen_at = v_cand.seen_at
                                             AND dc.clause_hash = ANY (v_lead[1:v_cand.stored_n + 2])) THEN
                    v_cand.incoming_share := 1.0;
                END IF;
                IF v_cand.ratio >= v_cont_dup AND v_cand.incoming_share >= v_cont_incoming THEN
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_cand.external_id;
                    m_layer := 'containment'; m_score := least(v_cand.ratio, 1.0);
                ELSIF v_cand.ratio >= v_cont_review AND r_doc_id IS NULL THEN
                    r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_cand.external_id;
                    r_layer := 'containment'; r_score := least(v_cand.ratio, 1.0);
                END IF;
            END IF;
        END IF;

        IF verdict IS NULL AND m_doc_id IS NOT NULL THEN
            -- Near duplicate: not stored as a document; kept in full as a candidate.
            verdict := 'duplicate'; layer := m_layer; score := m_score; distance := m_dist;
            matched_doc_id := m_doc_id; matched_external_id := m_ext;
            IF NOT p_dry_run THEN
                DELETE FROM document_digests g WHERE g.content_sha1 = v_sha1 AND g.doc_id = v_doc_id;
                candidate_id := dedup_record_candidate(
                    it, 'auto', m_layer, NULL, m_doc_id, m_seen_at, NULL, m_score, m_dist, v_thresholds);
            END IF;
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- New (or review: kept, and queued for a person).
        IF verdict IS NULL AND r_doc_id IS NOT NULL THEN
            verdict := 'review'; layer := r_layer; score := r_score; distance := r_dist;
            matched_doc_id := r_doc_id; matched_external_id := r_ext;
        ELSIF verdict IS NULL THEN
            verdict := 'new';
        END IF;
        -- The semantic layer runs next (dedup_ingest_semantic, same transaction)
        -- on what the hash layers kept: every such text ('always'), or those
        -- with a hash-layer candidate to compare with ('gated'). Whitelisted
        -- texts skip it.
        IF v_white THEN
            NULL;
        ELSIF v_mode = 'always' THEN
            embed := true;
        ELSIF v_mode = 'gated' AND cardinality(v_gate) > 0 THEN
            embed := true;
            neighbours := ARRAY(SELECT DISTINCT g FROM unnest(v_gate) g);
        END IF;
        IF NOT p_dry_run THEN
            IF v_doc_id IS NULL THEN  -- whitelisted text: no digest claimed
                v_doc_id := nextval('documents_doc_id_seq');
            END IF;
            PERFORM dedup_store_document(it, v_doc_id);
            doc_id := v_doc_id;
            IF verdict = 'review' THEN
                candidate_id := dedup_record_candidate(
                    it, 'pending', r_layer, v_doc_id, r_doc_id, r_seen_at, NULL, r_score, r_dist,
                    v_thresholds);
            ELSE
                INSERT INTO document_sightings (seen_at, doc_id, external_id, url, source, verdict)
                VALUES (it.seen_at, v_doc_id, it.external_id, it.url, it.source, 'new');
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
COMMENT ON FUNCTION dedup_ingest(jsonb, boolean, jsonb) IS
    'Check and store a batch of fingerprinted documents in one transaction (hash layers); one verdict row per item. Called by dedup_pg.Deduper.';

-- A kept document as an item, to record it as a candidate.
CREATE FUNCTION dedup_document_item(p_doc_id bigint, p_seen_at timestamptz)
RETURNS dedup_item
LANGUAGE sql STABLE AS $$
    SELECT ROW(0, d.external_id, d.title, d.body, d.url, d.source, d.seen_at, d.published_at,
               encode(d.content_sha1, 'hex'), encode(d.title_sha1, 'hex'), d.simhash, d.text_length,
               ARRAY(SELECT c.clause_hash FROM document_clauses c
                      WHERE c.doc_id = d.doc_id AND c.seen_at = d.seen_at ORDER BY 1),
               d.norm_version)::dedup_item
      FROM documents d
     WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at
$$;

-- Turn a document stored earlier in this transaction back into a duplicate
-- candidate of p_matched_doc_id: the semantic layer's verdict came after the
-- hash layers stored it. What the batch already matched to it (exact copies,
-- near copies) is re-pointed at the original. Returns the candidate_id.
CREATE FUNCTION dedup_demote_document(
    p_doc_id bigint, p_seen_at timestamptz, p_review_candidate_id bigint,
    p_matched_doc_id bigint, p_matched_seen_at timestamptz, p_layer text,
    p_score double precision, p_thresholds jsonb)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_item dedup_item := dedup_document_item(p_doc_id, p_seen_at);
BEGIN
    IF v_item.sha1 IS NULL THEN
        RAISE EXCEPTION 'dedup_demote_document: document % (%) does not exist', p_doc_id, p_seen_at;
    END IF;
    DELETE FROM document_sightings s
     WHERE s.doc_id = p_doc_id AND s.seen_at = p_seen_at
       AND (s.verdict = 'new' OR s.candidate_id = p_review_candidate_id);
    DELETE FROM duplicate_candidates c WHERE c.candidate_id = p_review_candidate_id;
    UPDATE duplicate_candidates c
       SET matched_doc_id = p_matched_doc_id, matched_seen_at = p_matched_seen_at,
           body = coalesce(c.body, v_item.body)
     WHERE c.matched_doc_id = p_doc_id;
    UPDATE document_sightings s SET doc_id = p_matched_doc_id WHERE s.doc_id = p_doc_id;
    DELETE FROM document_digests g WHERE g.content_sha1 = decode(v_item.sha1, 'hex') AND g.doc_id = p_doc_id;
    DELETE FROM document_clauses c
     WHERE c.clause_hash = ANY (v_item.clauses) AND c.doc_id = p_doc_id AND c.seen_at = p_seen_at;
    DELETE FROM document_embeddings e WHERE e.doc_id = p_doc_id AND e.seen_at = p_seen_at;
    DELETE FROM documents d WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at;
    RETURN dedup_record_candidate(v_item, 'auto', p_layer, NULL, p_matched_doc_id, p_matched_seen_at,
                                  NULL, p_score, NULL, p_thresholds);
END $$;

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

-- The HNSW index of one model, over every day partition of document_embeddings.
CREATE FUNCTION dedup_model_index_name(p_model_id smallint)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'document_embeddings_model' || p_model_id || '_idx' $$;

-- Its definition, for a table (the parent, or one partition).
CREATE FUNCTION dedup_model_index_sql(p_model_id smallint, p_table regclass, p_index text,
                                      p_concurrently boolean DEFAULT false, p_only boolean DEFAULT false)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT format('CREATE INDEX %s IF NOT EXISTS %I ON %s %s USING hnsw ((embedding::halfvec(%s)) halfvec_cosine_ops) '
                  'WITH (m = 16, ef_construction = 64) WHERE model_id = %s',
                  CASE WHEN p_concurrently THEN 'CONCURRENTLY' ELSE '' END, p_index,
                  CASE WHEN p_only THEN 'ONLY' ELSE '' END, p_table, m.dimensions, m.model_id)
      FROM embedding_models m WHERE m.model_id = p_model_id
$$;

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
CREATE FUNCTION dedup_ingest_semantic(p_items jsonb, p_stored jsonb, p_model_id smallint,
                                      p_dry_run boolean DEFAULT false, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (pos integer, verdict text, layer text, doc_id bigint,
               matched_doc_id bigint, matched_external_id text,
               score double precision, distance integer, candidate_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
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
    PERFORM set_config('hnsw.ef_search', v_by_source -> '' ->> 'semantic_ef_search', true);
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
            -- gated: the hash layers' candidates
            SELECT n.doc_id, n.seen_at, 1 - (n.embedding <=> v_vec) AS cos INTO v_best
              FROM (SELECT e.doc_id, e.seen_at, e.embedding
                      FROM document_embeddings e
                     WHERE e.model_id = p_model_id
                       AND e.doc_id IN (SELECT x::bigint FROM jsonb_array_elements_text(v_json -> 'neighbours') x)
                    UNION ALL
                    SELECT (s ->> 'doc_id')::bigint, (s ->> 'seen_at')::timestamptz, (s ->> 'embedding')::halfvec
                      FROM jsonb_array_elements(coalesce(p_stored, '[]')) s
                     WHERE p_dry_run AND s -> 'doc_id' IN (SELECT jsonb_array_elements(v_json -> 'neighbours'))) n
              JOIN documents d ON d.doc_id = n.doc_id AND d.seen_at = n.seen_at
             WHERE n.doc_id IS DISTINCT FROM v_doc_id
               AND NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
             ORDER BY cos DESC, n.seen_at, n.doc_id
             LIMIT 1;
        ELSE
            -- always: the nearest stored embeddings in the window (HNSW)
            EXECUTE format(
                'SELECT n.doc_id, n.seen_at, n.cos
                   FROM (SELECT e.doc_id, e.seen_at, 1 - (e.embedding::halfvec(%1$s) <=> $1::halfvec(%1$s)) AS cos
                           FROM document_embeddings e
                          WHERE e.model_id = %2$s AND e.seen_at BETWEEN $2 AND $3
                            AND e.doc_id IS DISTINCT FROM $4
                          ORDER BY e.embedding::halfvec(%1$s) <=> $1::halfvec(%1$s)
                          LIMIT $5) n
                   JOIN documents d ON d.doc_id = n.doc_id AND d.seen_at = n.seen_at
                  WHERE NOT dedup_pair_whitelisted($6, d.content_sha1)
                  ORDER BY n.cos DESC, n.seen_at, n.doc_id
                  LIMIT 1', v_model.dimensions, p_model_id)
               INTO v_best
              USING v_vec, v_lo, v_hi, v_doc_id, (v_settings ->> 'semantic_neighbours')::integer, v_sha1;
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
            IF NOT p_dry_run THEN
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
