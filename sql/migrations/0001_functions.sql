-- dedup-pg functions and views, revision 0001 (applied by migrations/versions/0001_core.py).
-- A later revision that changes one of these adds its own file with the full new
-- definition, and its downgrade re-applies this one.

-- Create the day partitions of every per-document table for [p_from, p_to].
-- Safe to call concurrently: an advisory lock per day serialises creators.
CREATE FUNCTION dedup_ensure_partitions(p_from date, p_to date)
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
                                       'duplicate_candidates'] LOOP
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

COMMENT ON FUNCTION dedup_ensure_partitions(date, date) IS
    'Create missing day partitions (UTC days) of documents, document_clauses, document_sightings and duplicate_candidates.';

-- All band values within p_radius bits of p_band (radius 0 or 1; 2 is allowed
-- but costs 137 probes a band).
CREATE FUNCTION dedup_band_neighbours(p_band integer, p_radius integer)
RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(DISTINCT v) FROM (
        SELECT p_band AS v
        UNION ALL
        SELECT p_band # (1 << i) FROM generate_series(0, 15) i WHERE p_radius >= 1
        UNION ALL
        SELECT p_band # (1 << i) # (1 << j)
          FROM generate_series(0, 15) i, generate_series(0, 15) j
         WHERE p_radius >= 2 AND i < j
    ) s
$$;

-- The SimHash distances in force for a text of p_length characters: the
-- duplicate distance from simhash_distance_by_length (capped by
-- simhash_distance), and a review distance as many bits wider than it as
-- simhash_review_distance is wider than simhash_distance (at most 7, what the
-- band probe guarantees).
CREATE FUNCTION dedup_simhash_distances(p_length integer, p_settings jsonb,
                                        OUT duplicate_distance integer, OUT review_distance integer)
LANGUAGE sql IMMUTABLE AS $$
    WITH rule AS (
        SELECT coalesce((SELECT (r ->> 1)::integer
                           FROM jsonb_array_elements(p_settings -> 'simhash_distance_by_length') r
                          WHERE (r ->> 0)::integer <= p_length
                          ORDER BY (r ->> 0)::integer DESC LIMIT 1),
                        0) AS by_length
    )
    SELECT least(by_length, (p_settings ->> 'simhash_distance')::integer),
           least(7, least(by_length, (p_settings ->> 'simhash_distance')::integer)
                    + (p_settings ->> 'simhash_review_distance')::integer
                    - (p_settings ->> 'simhash_distance')::integer)
      FROM rule
$$;

COMMENT ON FUNCTION dedup_simhash_distances(integer, jsonb) IS
    'SimHash duplicate and review distances for a text length under the given settings (SELECT * FROM dedup_simhash_distances(500, (SELECT jsonb_object_agg(name, value) FROM dedup_settings)))';

-- Is the pair (a, b) of normalized texts whitelisted as "not duplicates"?
CREATE FUNCTION dedup_pair_whitelisted(p_a bytea, p_b bytea)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM dedup_whitelist w
                    WHERE w.kind = 'pair'
                      AND w.content_sha1 = least(p_a, p_b)
                      AND w.other_sha1 = greatest(p_a, p_b))
$$;

-- One fingerprinted document, as dedup_pg.deduper sends it (see dedup_ingest).
CREATE TYPE dedup_item AS (
    pos integer, external_id text, title text, body text, url text, source text,
    seen_at timestamptz, published_at timestamptz, sha1 text, title_sha1 text,
    simhash bigint, length integer, clauses bigint[], norm_version smallint);

-- Store an item as a kept document with doc_id p_doc_id (clauses included).
CREATE FUNCTION dedup_store_document(p_item dedup_item, p_doc_id bigint)
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO documents (doc_id, seen_at, external_id, title, body, url, source, published_at,
                           content_sha1, title_sha1, simhash, text_length, clause_count, norm_version)
    VALUES (p_doc_id, p_item.seen_at, p_item.external_id, p_item.title, p_item.body, p_item.url,
            p_item.source, p_item.published_at, decode(p_item.sha1, 'hex'), decode(p_item.title_sha1, 'hex'),
            p_item.simhash, p_item.length, cardinality(coalesce(p_item.clauses, '{}')), p_item.norm_version);
    INSERT INTO document_clauses (clause_hash, doc_id, seen_at)
    SELECT DISTINCT h, p_doc_id, p_item.seen_at FROM unnest(p_item.clauses) h;
$$;

-- Record a duplicate or review decision about an item: a candidate row with
-- everything needed to restore it, and its sighting. Returns the candidate_id.
-- p_doc_id: the item's own document when it was kept (review).
-- p_matched_body: the matched document's body; equal to the item's, the item's
-- is not stored twice.
CREATE FUNCTION dedup_record_candidate(
    p_item dedup_item, p_status text, p_layer text, p_doc_id bigint,
    p_matched_doc_id bigint, p_matched_seen_at timestamptz, p_matched_body text,
    p_score double precision, p_distance integer, p_thresholds jsonb)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    INSERT INTO duplicate_candidates AS c (
        seen_at, external_id, title, body, url, source, published_at, content_sha1, title_sha1,
        simhash, text_length, clauses, norm_version, doc_id, matched_doc_id, matched_seen_at,
        layer, score, distance, thresholds, status)
    VALUES (p_item.seen_at, p_item.external_id, p_item.title,
            CASE WHEN p_item.body IS NOT DISTINCT FROM p_matched_body THEN NULL ELSE p_item.body END,
            p_item.url, p_item.source, p_item.published_at, decode(p_item.sha1, 'hex'),
            decode(p_item.title_sha1, 'hex'), p_item.simhash, p_item.length,
            coalesce(p_item.clauses, '{}'), p_item.norm_version, p_doc_id, p_matched_doc_id,
            p_matched_seen_at, p_layer, p_score, p_distance, p_thresholds, p_status)
    RETURNING c.candidate_id INTO v_id;
    INSERT INTO document_sightings (seen_at, doc_id, external_id, url, source, verdict, layer, score, candidate_id)
    VALUES (p_item.seen_at, coalesce(p_doc_id, p_matched_doc_id), p_item.external_id, p_item.url,
            p_item.source, CASE p_status WHEN 'pending' THEN 'review' ELSE 'duplicate' END,
            p_layer, p_score, v_id);
    RETURN v_id;
END $$;

-- The ingest function: one call per batch, one transaction.
--
-- p_items is a JSON array, one object per document, made by dedup_pg.deduper:
--   pos, external_id, title, body, url, source, seen_at, published_at,
--   sha1 / title_sha1 (hex), simhash (signed 64-bit), length, clauses (array
--   of signed 64-bit hashes), norm_version.
-- Items are checked in pos order, so a later item is checked against earlier
-- ones of the same batch. Layers, in order: whitelist, exact (SHA-1),
-- SimHash (duplicate distance), clause containment, then the review bands
-- of both. p_dry_run = true checks without locking or writing (is_duplicate).
-- p_overrides: thresholds for this call only, over dedup_settings.
CREATE FUNCTION dedup_ingest(p_items jsonb, p_dry_run boolean DEFAULT false, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (pos integer, verdict text, layer text, doc_id bigint,
               matched_doc_id bigint, matched_external_id text,
               score double precision, distance integer, candidate_id bigint)
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
BEGIN
    SELECT jsonb_object_agg(s.name, s.value) INTO v_settings FROM dedup_settings s;
    -- per-call thresholds (a content type's presets, a stricter pipeline); the
    -- normalization settings cannot be overridden: they change fingerprints
    IF EXISTS (SELECT 1 FROM jsonb_object_keys(coalesce(p_overrides, '{}')) k
                WHERE NOT v_settings ? k OR k IN ('lowercase', 'noise_patterns', 'max_chars')) THEN
        RAISE EXCEPTION 'dedup_ingest: these settings cannot be overridden per call: %',
            (SELECT string_agg(k, ', ') FROM jsonb_object_keys(p_overrides) k
              WHERE NOT v_settings ? k OR k IN ('lowercase', 'noise_patterns', 'max_chars'))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_settings := v_settings || coalesce(p_overrides, '{}');
    v_window := make_interval(days => (v_settings ->> 'window_days')::integer);
    v_cont_dup := (v_settings ->> 'containment_threshold')::double precision;
    v_cont_review := (v_settings ->> 'containment_review_threshold')::double precision;
    v_cont_min := (v_settings ->> 'containment_min_shared')::integer;
    v_cont_incoming := (v_settings ->> 'containment_incoming_share')::double precision;
    v_boiler_docs := (v_settings ->> 'containment_boilerplate_docs')::integer;
    v_sim_overlap := (v_settings ->> 'simhash_min_clause_overlap')::double precision;
    v_steps := ARRAY(SELECT (r ->> 0)::integer
                       FROM jsonb_array_elements(v_settings -> 'simhash_distance_by_length') r);

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

    FOR it IN SELECT * FROM jsonb_populate_recordset(NULL::dedup_item, p_items) x ORDER BY x.pos
    LOOP
        pos := it.pos; verdict := NULL; layer := NULL; doc_id := NULL; matched_doc_id := NULL;
        matched_external_id := NULL; score := NULL; distance := NULL; candidate_id := NULL;
        v_doc_id := NULL;
        v_sha1 := decode(it.sha1, 'hex');
        v_clauses := coalesce(it.clauses, '{}');
        IF v_window = interval '0' THEN
            v_lo := '-infinity'; v_hi := 'infinity';
        ELSE
            v_lo := it.seen_at - v_window; v_hi := it.seen_at + v_window;
        END IF;
        -- distances depend on length only through the rule's steps: cache per step
        v_key := (SELECT count(*) FROM unnest(v_steps) m WHERE m <= it.length)::text;
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
            verdict := 'new';
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
            SELECT c.doc_id, c.seen_at, c.external_id, c.dist, c.clause_count INTO v_cand
              FROM (SELECT d.doc_id, d.seen_at, d.external_id, d.content_sha1, d.clause_count,
                           bit_count((d.simhash # it.simhash)::bit(64))::integer AS dist
                      FROM documents d
                     WHERE d.seen_at BETWEEN v_lo AND v_hi
                       AND (d.simhash_band0 = ANY (v_n[1:1][:]::integer[])
                         OR d.simhash_band1 = ANY (v_n[2:2][:]::integer[])
                         OR d.simhash_band2 = ANY (v_n[3:3][:]::integer[])
                         OR d.simhash_band3 = ANY (v_n[4:4][:]::integer[]))
                   ) c
             WHERE c.dist <= v_review_dist
               AND NOT dedup_pair_whitelisted(v_sha1, c.content_sha1)
             ORDER BY c.dist, c.seen_at, c.doc_id
             LIMIT 1;
            IF v_cand.doc_id IS NOT NULL THEN
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
        END IF;

        -- Containment layer: clauses (boilerplate left out) shared with a stored
        -- text. Catches copies that add or drop paragraphs: site banners, ads,
        -- truncated recrawls. Containment = shared / the smaller text's clauses.
        -- It is a duplicate only when the incoming text is mostly old news too
        -- (containment_incoming_share of its clauses are in the other text): a
        -- long text that merely quotes a short stored one is kept, for review.
        IF verdict IS NULL AND m_doc_id IS NULL AND v_n_item >= 2 THEN
            SELECT c.doc_id, c.seen_at, d.external_id, c.shared,
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
        ELSE
            verdict := 'new';
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
    'Check and store a batch of fingerprinted documents in one transaction; one verdict row per item. Called by dedup_pg.Deduper.';
