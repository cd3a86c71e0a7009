-- dedup-pg revision 0070: stored text another layer sent to review compared on its MinHash signature (applied by
-- migrations/versions/0070_stored_text_another_layer_sent.py).
--
-- Why: issue 19 (revision 0069's 12 bands). The MinHash layer compared only
-- the stored texts sharing a band with the incoming signature. With 12 bands
-- a pair at estimated Jaccard 0.63 shares none once in ~30; one such synonym
-- rewrite of bench/semantic_quality.py's 150 (sina18-056059e909fc, 0.63, band
-- 13 of 16 its only shared one) went from a MinHash duplicate to a
-- containment review (0.51) with 0069. The stored text the SimHash or the
-- containment layer sends to review is now compared on the whole signature
-- too, band shared or not: at minhash_threshold or above it is a MinHash
-- duplicate (the fact check then applies, as to every MinHash match). The
-- bands are a way to find candidates; this one is found already. It costs
-- one band row read (by doc_id and seen_at) for a text with such a review and
-- no duplicate. Measured (BENCHMARKS.md, revision 0070): the synonym rewrite
-- is a duplicate again, and no other verdict of bench/quality.py,
-- bench/validation.py, bench/semantic_quality.py or bench/bytes.py moved.
--
-- No hand-written changes: the definition below is the whole revision.

-- function:dedup_ingest, from sql/schema/60_ingest.sql
CREATE OR REPLACE FUNCTION dedup_ingest(p_items jsonb, p_dry_run boolean DEFAULT false, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (pos integer, verdict text, layer text, doc_id bigint,
               matched_doc_id bigint, matched_external_id text,
               score double precision, distance integer, candidate_id bigint,
               embed boolean, neighbours bigint[])
LANGUAGE plpgsql
-- Generic plans for the statements inside. Under the default (auto) the plan
-- cache compares a generic plan's cost, which counts every partition the
-- window might hold, with a custom plan's, which counts the few the values
-- select; it keeps choosing custom plans, and planning over the day partitions
-- then costs more than running the statement. Run-time pruning gives generic
-- plans the same partitions. Measured on 7k documents over 7 days, ingest:
-- 4.26 -> 3.25 ms a document (under auto_explain); 1 day: 2.48 -> 1.92.
-- (A Citus coordinator sets it back to auto: sql/citus/60_ingest.sql.)
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_settings jsonb;
    v_window interval;
    v_cont_dup double precision;
    v_cont_review double precision;
    v_cont_min integer;
    v_cont_incoming double precision;
    v_boiler_docs integer;
    v_whole_chars integer;
    v_sim_overlap double precision;
    v_useful bigint[];
    v_cont_docs bigint[];
    v_cont_seen timestamptz[];
    v_cont_rows integer[];
    v_n_boiler integer;
    v_n_item integer;
    v_shared integer;
    v_stored_n integer;
    v_to_review boolean;
    it dedup_item;
    v_items dedup_item[];
    v_sightings document_sightings[] := '{}';  -- the batch's, inserted after the loop
    v_lo timestamptz;
    v_hi timestamptz;
    v_sha1 bytea;
    v_steps integer[];
    v_step_dup integer[];
    v_step_review integer[];
    v_step integer;
    v_stripes integer[];
    v_dup_dist integer;
    v_review_dist integer;
    v_claimed boolean;
    v_cand record;
    -- the containment candidates' documents rows (read once for both rules)
    v_k_docs bigint[]; v_k_seen timestamptz[]; v_k_ext text[]; v_k_sha1 bytea[];
    v_k_count integer[]; v_k_shared integer[];
    v_w record;
    v_w_body text;
    v_folded text;  -- the incoming body as dedup_folded_body makes it
    v_sh_keys integer[];
    v_sh_near integer[];  -- the band keys and tails found within distance
    v_sh_near_tails integer[];
    v_sh_tails integer[];  -- the incoming simhash's tail of each band
    v_taken integer;
    v_row record;
    -- the best match (m_) and the best review-band match (r_) so far
    m_doc_id bigint; m_seen_at timestamptz; m_ext text; m_layer text; m_score double precision; m_dist integer;
    r_doc_id bigint; r_seen_at timestamptz; r_ext text; r_layer text; r_score double precision; r_dist integer;
    v_doc_id bigint;
    v_matched_body text;
    v_m_source text;
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
    v_white boolean;
    v_mh_dup double precision;
    v_mh_review double precision;
    v_sim double precision;
    v_facts_share double precision;
    v_facts_added double precision;
    v_added double precision;
    v_mh_bands bigint[];
    v_matched_facts integer[];
    v_matched_clauses bigint[];
    v_held bigint[];
    v_signature bit varying;
BEGIN
    -- settings: dedup_settings, then the source's own (dedup_sources), then
    -- this call's overrides; resolved once per source in the batch
    v_by_source := jsonb_build_object('', dedup_effective_settings(NULL, p_overrides));
    -- the items, read from the JSON once, in pos order
    v_items := ARRAY(SELECT x FROM jsonb_populate_recordset(NULL::dedup_item, p_items) x ORDER BY x.pos);

    IF NOT p_dry_run THEN
        -- Lock every stripe a batch item could collide on, in stripe order (so
        -- two batches cannot deadlock). A large batch would lock most stripes
        -- anyway: it takes the whole table at once instead, which conflicts with
        -- the small batches' row locks and costs one lock instead of thousands.
        v_stripes := dedup_lock_stripes_of(v_items);
        IF cardinality(v_stripes) > 512 THEN
            LOCK TABLE dedup_lock_stripes IN EXCLUSIVE MODE;
        ELSE
            PERFORM 1 FROM dedup_lock_stripes l WHERE l.stripe = ANY (v_stripes)
             ORDER BY l.stripe FOR UPDATE;
        END IF;
    END IF;

    FOREACH it IN ARRAY v_items
    LOOP
        v_held := '{}';
        -- the first clauses of the text, in order (the lead rule, below)
        v_lead := coalesce(it.lead, '{}');
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
            v_whole_chars := (v_settings ->> 'containment_whole_text_chars')::integer;
            v_sim_overlap := (v_settings ->> 'simhash_min_clause_overlap')::double precision;
            v_gate_dist := (v_settings ->> 'semantic_gate_distance')::integer;
            v_mode := v_settings ->> 'semantic_mode';
            v_mh_dup := (v_settings ->> 'minhash_threshold')::double precision;
            v_mh_review := least(v_mh_dup, (v_settings ->> 'minhash_review_threshold')::double precision);
            v_facts_share := (v_settings ->> 'facts_disagreement_share')::double precision;
            v_facts_added := (v_settings ->> 'facts_added_share')::double precision;
            -- the SimHash distances by length step, the row for texts shorter
            -- than every step first (dedup_simhash_distance_steps, inlined)
            SELECT array_agg(x.min_length ORDER BY x.min_length NULLS FIRST, x.duplicate_distance, x.review_distance),
                   array_agg(x.duplicate_distance ORDER BY x.min_length NULLS FIRST, x.duplicate_distance, x.review_distance),
                   array_agg(x.review_distance ORDER BY x.min_length NULLS FIRST, x.duplicate_distance, x.review_distance)
              INTO v_steps, v_step_dup, v_step_review
              FROM dedup_simhash_distance_steps(v_settings) x;
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
        -- the distances of the longest length step not above the text's (as
        -- dedup_simhash_distances reads them; until revision 0048 it was called
        -- once a step a batch: ~0.1 ms a one-text batch)
        v_step := 1;
        WHILE v_step < cardinality(v_steps) AND v_steps[v_step + 1] <= it.length LOOP
            v_step := v_step + 1;
        END LOOP;
        v_dup_dist := v_step_dup[v_step];
        v_review_dist := v_step_review[v_step];
        v_thresholds := jsonb_build_object(
            'simhash_distance', v_dup_dist,
            'simhash_review_distance', v_review_dist,
            'containment_threshold', v_cont_dup,
            'containment_review_threshold', v_cont_review,
            'containment_incoming_share', v_cont_incoming,
            'containment_whole_text_chars', v_whole_chars,
            'minhash_threshold', v_mh_dup,
            'minhash_review_threshold', v_mh_review,
            'facts_disagreement_share', v_facts_share,
            'facts_added_share', v_facts_added,
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
                SELECT g.doc_id, g.seen_at INTO matched_doc_id, m_seen_at
                  FROM document_digests g WHERE g.content_sha1 = v_sha1;
                -- by key: one partition (a join would set up a scan of each)
                SELECT d.external_id, d.body, d.source INTO matched_external_id, v_matched_body, v_m_source
                  FROM documents d WHERE d.doc_id = matched_doc_id AND d.seen_at = m_seen_at;
                verdict := 'duplicate'; layer := 'exact'; score := 1.0; distance := 0;
                -- Re-delivery (dedup_redelivered): this very item is the stored
                -- document, or was recorded as a copy of it. Answered as such,
                -- and nothing is recorded: it is counted once.
                IF it.external_id IS NOT NULL THEN
                    IF matched_external_id = it.external_id AND v_m_source IS NOT DISTINCT FROM it.source THEN
                        layer := 'redelivery'; doc_id := matched_doc_id;
                    ELSE
                        candidate_id := dedup_redelivered(it.external_id, it.source, v_sha1,
                                                          matched_doc_id, v_lo, v_hi);
                        IF candidate_id IS NOT NULL THEN
                            layer := 'redelivery';
                        END IF;
                    END IF;
                END IF;
                IF NOT p_dry_run AND layer = 'exact' THEN
                    candidate_id := dedup_store_candidate(
                        it, 'auto', 'exact', NULL, matched_doc_id, m_seen_at, v_matched_body,
                        1.0, 0, v_thresholds);
                    v_sightings := v_sightings
                        || dedup_sighting(it, matched_doc_id, 'duplicate', 'exact', 1.0, candidate_id);
                END IF;
                RETURN NEXT;
                CONTINUE;
            END IF;
        END IF;

        -- Clause evidence, used by both near-duplicate layers. A clause that
        -- v_boiler_docs stored documents already hold (among the rows of
        -- document_clauses) is site boilerplate (nav bars, "related news",
        -- copyright lines): it is left out of the comparison and out of both
        -- texts' clause counts. One probe a clause reads at most v_boiler_docs
        -- holders: their count tells boilerplate apart, and the holders of the
        -- other clauses (all of them, fewer than v_boiler_docs) are the
        -- containment layer's candidates. A candidate with a row for each of
        -- its clauses shares as many as it has rows found; a long text has
        -- rows for a sample only (dedup_clause_rows), and its shared clauses
        -- are counted on its array (documents.clauses, NULL for the others).
        -- The clauses held at all (v_held) get rows when this text is stored,
        -- sampled or not: so a template line keeps counting its holders.
        IF verdict IS NULL THEN
            WITH holders AS MATERIALIZED (
                SELECT x.clause_hash AS h, x.doc_id, x.seen_at,
                       count(x.doc_id) OVER (PARTITION BY x.clause_hash) AS n
                  FROM dedup_clause_holders(v_clauses, v_lo, v_hi, v_boiler_docs) x),
            found AS (
                SELECT array_agg(f.doc_id) AS doc_ids, array_agg(f.seen_at) AS seen,
                       array_agg(f.n_rows) AS n_rows
                  FROM (SELECT s.doc_id, s.seen_at, count(*)::integer AS n_rows FROM holders s
                         WHERE s.n < v_boiler_docs AND s.doc_id IS NOT NULL
                         GROUP BY s.doc_id, s.seen_at) f)
            -- one row: the clauses' counts in one aggregate over holders and
            -- the candidates' arrays (six subqueries until revision 0052)
            SELECT a.useful, a.held, a.n_boiler, f.doc_ids, f.seen, f.n_rows
              FROM (SELECT coalesce(array_agg(DISTINCT h) FILTER (WHERE n < v_boiler_docs), '{}') AS useful,
                           coalesce(array_agg(DISTINCT h) FILTER (WHERE n >= 1), '{}') AS held,
                           count(DISTINCT h) FILTER (WHERE n >= v_boiler_docs) AS n_boiler
                      FROM holders) a, found f
              INTO v_useful, v_held, v_n_boiler, v_cont_docs, v_cont_seen, v_cont_rows;
            v_n_item := cardinality(v_clauses) - v_n_boiler;
        END IF;

        -- SimHash layer: probe the bands (radius 1 when the review distance
        -- needs it), confirm by Hamming distance.
        IF verdict IS NULL THEN
            -- band keys to probe, computed once (not per row): at radius 0
            -- (review distance under 4, the default) the four of the simhash
            v_sh_keys := CASE WHEN v_review_dist < 4 THEN dedup_simhash_bands(it.simhash)
                              ELSE dedup_simhash_band_keys(it.simhash, v_review_dist / 4) END;
            -- the closest candidate decides this layer; the others within the
            -- semantic gate distance are what a gated semantic check compares with
            v_probe_max := CASE WHEN v_mode = 'gated' THEN greatest(v_review_dist, v_gate_dist)
                                ELSE v_review_dist END;
            v_taken := 0;  -- candidates taken so far; the first decides
            -- An index-only scan of document_simhash_bands: the entries of
            -- the keys whose band and tail (48 of the 64 bits) are within
            -- distance. Most texts have none, and read no row.
            -- The four tails are computed once: computed for each entry, the
            -- tail's dozen operations cost ~40 us a probe at 10M documents
            -- (668 entries).
            v_sh_tails := ARRAY[dedup_simhash_tail(it.simhash, 0), dedup_simhash_tail(it.simhash, 1),
                                dedup_simhash_tail(it.simhash, 2), dedup_simhash_tail(it.simhash, 3)];
            SELECT array_agg(b.band_key), array_agg(b.tail) INTO v_sh_near, v_sh_near_tails
              FROM document_simhash_bands b
             WHERE b.band_key = ANY (v_sh_keys) AND b.seen_at BETWEEN v_lo AND v_hi
               AND bit_count((b.tail # v_sh_tails[(b.band_key >> 16) + 1])::bit(32)) <= v_probe_max;
            -- the rows of those entries, for the whole simhash; only the few
            -- candidates within distance are looked up in documents, by key
            IF v_sh_near IS NOT NULL THEN
                FOR v_cand IN
                SELECT c.doc_id, c.seen_at, c.dist
                  FROM (SELECT DISTINCT b.doc_id, b.seen_at, bit_count((b.simhash # it.simhash)::bit(64))::integer AS dist
                          FROM document_simhash_bands b
                         WHERE b.band_key = ANY (v_sh_near) AND b.tail = ANY (v_sh_near_tails)
                           AND b.seen_at BETWEEN v_lo AND v_hi) c
                 WHERE c.dist <= v_probe_max
                 ORDER BY c.dist, c.seen_at, c.doc_id
                LOOP
                SELECT d.external_id, d.clause_count, d.content_sha1, d.clauses INTO v_row
                  FROM documents d WHERE d.doc_id = v_cand.doc_id AND d.seen_at = v_cand.seen_at;
                CONTINUE WHEN NOT FOUND OR dedup_pair_whitelisted(v_sha1, v_row.content_sha1);
                IF v_mode = 'gated' AND v_cand.dist <= v_gate_dist THEN
                    v_gate := v_gate || v_cand.doc_id;
                END IF;
                IF v_taken = 0 AND v_cand.dist <= v_review_dist THEN
                    v_to_review := v_cand.dist > v_dup_dist;
                    v_stored_n := v_row.clause_count - v_n_boiler;
                    IF NOT v_to_review AND v_n_item >= 5 AND v_stored_n >= 5 THEN
                        -- Same vocabulary is not the same text: long texts must also
                        -- share some clauses (two pieces of one series by one author
                        -- can sit 3 bits apart with no sentence in common).
                        v_shared := dedup_found_shared(v_useful, v_row.clauses, v_cont_docs, v_cont_rows,
                                                       v_cand.doc_id);
                        v_to_review := v_shared < v_sim_overlap * least(v_n_item, v_stored_n);
                    END IF;
                    IF v_to_review THEN
                        r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_row.external_id;
                        r_layer := 'simhash'; r_score := 1.0 - v_cand.dist / 64.0; r_dist := v_cand.dist;
                    ELSE
                        m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_row.external_id;
                        m_layer := 'simhash'; m_score := 1.0 - v_cand.dist / 64.0; m_dist := v_cand.dist;
                    END IF;
                END IF;
                v_taken := v_taken + 1;
                EXIT WHEN v_taken >= 5;
                END LOOP;
            END IF;
        END IF;

        -- Containment layer: clauses (boilerplate left out) shared with a stored
        -- text. Catches copies that add or drop paragraphs: site banners, ads,
        -- truncated recrawls. Containment = shared / the smaller text's clauses.
        -- In the review band, a copied body under a rewritten lead
        -- (dedup_copied_body: both keep most of their clauses in common, the
        -- openings unlike) is a duplicate too.
        -- It is a duplicate only when the incoming text is mostly old news too
        -- (containment_incoming_share of its clauses are in the other text): a
        -- long text that merely quotes a short stored one is kept, for review.
        -- The candidates' documents rows (dedup_containment_candidates), read
        -- once for containment and whole-text containment (below). Until
        -- revision 0047 each rule joined them to documents itself
        -- (BENCHMARKS.md).
        v_k_docs := NULL;
        IF verdict IS NULL AND m_doc_id IS NULL AND v_cont_docs IS NOT NULL
           AND (v_n_item >= 2 OR v_whole_chars IS NOT NULL) THEN
            SELECT array_agg(k.doc_id), array_agg(k.seen_at), array_agg(k.external_id),
                   array_agg(k.content_sha1), array_agg(k.clause_count), array_agg(k.shared)
              INTO v_k_docs, v_k_seen, v_k_ext, v_k_sha1, v_k_count, v_k_shared
              FROM dedup_containment_candidates(v_cont_docs, v_cont_seen, v_cont_rows, v_useful,
                                                v_lo, v_hi) k;
        END IF;
        IF verdict IS NULL AND m_doc_id IS NULL AND v_n_item >= 2 AND v_k_docs IS NOT NULL THEN
            SELECT c.doc_id, c.seen_at, c.external_id, c.shared, c.clause_count - v_n_boiler AS stored_n,
                   c.shared::double precision
                       / least(v_n_item, greatest(c.clause_count - v_n_boiler, c.shared)) AS ratio,
                   c.shared::double precision / v_n_item AS incoming_share
              INTO v_cand
              FROM unnest(v_k_docs, v_k_seen, v_k_ext, v_k_sha1, v_k_count, v_k_shared)
                   c(doc_id, seen_at, external_id, content_sha1, clause_count, shared)
             WHERE c.shared >= 2
               AND c.shared >= least(v_cont_min, v_n_item, greatest(c.clause_count - v_n_boiler, c.shared))
               AND NOT dedup_pair_whitelisted(v_sha1, c.content_sha1)
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
                   AND v_cand.stored_n = dedup_shared_clauses(
                           v_lead[1:v_cand.stored_n + 2],
                           dedup_document_clauses(v_cand.doc_id, v_cand.seen_at,
                                                  (SELECT d.clauses FROM documents d
                                                    WHERE d.doc_id = v_cand.doc_id
                                                      AND d.seen_at = v_cand.seen_at))) THEN
                    v_cand.incoming_share := 1.0;
                END IF;
                IF v_cand.ratio >= v_cont_dup AND v_cand.incoming_share >= v_cont_incoming THEN
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_cand.external_id;
                    m_layer := 'containment'; m_score := least(v_cand.ratio, 1.0);
                ELSIF v_cand.ratio >= v_cont_review
                      AND dedup_copied_body(it.body, (SELECT d.body FROM documents d
                                                       WHERE d.doc_id = v_cand.doc_id
                                                         AND d.seen_at = v_cand.seen_at),
                                            v_cand.shared, v_n_item, v_cand.stored_n, v_settings) THEN
                    -- the review band, but a copied body under a rewritten lead
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_cand.external_id;
                    m_layer := 'containment'; m_score := least(v_cand.ratio, 1.0);
                ELSIF v_cand.ratio >= v_cont_review AND r_doc_id IS NULL THEN
                    r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_cand.external_id;
                    r_layer := 'containment'; r_score := least(v_cand.ratio, 1.0);
                END IF;
            END IF;
        END IF;

        -- Whole-text containment: a stored text that shares a single clause
        -- with the incoming one (containment above needs two) is a duplicate
        -- when the shorter body lies whole inside the other
        -- (dedup_body_within, at least containment_whole_text_chars
        -- characters): a short item reposted under a hashtag line, or cut to
        -- its first sentence. A shorter text of more than three clauses
        -- lying whole in the other would share more than one, so only pairs
        -- with a side of at most three are read (the bodies are compared
        -- only then; the incoming one is folded once, when a first pair is
        -- compared). When the incoming text has more than three, only a
        -- stored one can be the shorter, and one whose opening is not in the
        -- incoming body is not folded whole (dedup_whole_within). The
        -- earliest such text; the fact check follows.
        IF verdict IS NULL AND m_doc_id IS NULL AND v_k_docs IS NOT NULL AND v_whole_chars IS NOT NULL THEN
            v_folded := NULL;
            FOR v_w IN
                SELECT c.doc_id, c.seen_at, c.external_id, c.content_sha1
                  FROM unnest(v_k_docs, v_k_seen, v_k_ext, v_k_sha1, v_k_count, v_k_shared)
                       c(doc_id, seen_at, external_id, content_sha1, clause_count, shared)
                 WHERE c.shared = 1 AND least(v_n_item, c.clause_count - v_n_boiler) <= 3
                 ORDER BY c.seen_at, c.doc_id
            LOOP
                CONTINUE WHEN dedup_pair_whitelisted(v_sha1, v_w.content_sha1);
                SELECT d.body INTO v_w_body FROM documents d
                 WHERE d.doc_id = v_w.doc_id AND d.seen_at = v_w.seen_at;
                -- the incoming body folded once, at the first pair compared
                v_folded := coalesce(v_folded, dedup_folded_body(it.body));
                IF dedup_whole_within(v_folded, v_w_body, v_whole_chars, v_n_item > 3) THEN
                    IF v_mode = 'gated' THEN
                        v_gate := v_gate || v_w.doc_id;
                    END IF;
                    m_doc_id := v_w.doc_id; m_seen_at := v_w.seen_at; m_ext := v_w.external_id;
                    m_layer := 'containment'; m_score := 1.0;
                    EXIT;
                END IF;
            END LOOP;
        END IF;

        -- MinHash layer: stored texts sharing a band of the signature, compared
        -- on the whole signature (estimated Jaccard of character 5-grams).
        -- Catches what changes a word in most clauses: synonyms, reworded leads.
        IF verdict IS NULL AND m_doc_id IS NULL AND it.minhash IS NOT NULL AND v_mh_dup IS NOT NULL THEN
            -- the item's signature as the stored ones, in bits, and its bands
            v_signature := coalesce(it.signature, dedup_minhash_bits(it.minhash));
            v_mh_bands := dedup_minhash_bands(v_signature);
            -- The stored texts sharing a band, ranked by similarity on their
            -- band rows (each holds its signature: revision 0041). The best
            -- one that is not whitelisted decides: documents rows are read from
            -- the best down until one passes (one, unless whitelisted), and
            -- only for a text that shares a band (a statement over documents
            -- locks every day partition kept: run for every text, a join made
            -- a dry-run check of a new text cost ~1.0 ms with two years of
            -- days kept against ~0.66 with the window's only,
            -- bench/retained_days.py), and only while one can still decide:
            -- below the review band none can, the best nor any after it
            -- (gated mode reads the best all the same: its comparison takes
            -- it). Until revision 0064 the best one's row was read below the
            -- band too: 0.64 reads a new text's check at 1M documents of the
            -- growth corpus, ~20 us each (BENCHMARKS.md).
            FOR v_cand IN
                SELECT b.doc_id, b.seen_at, dedup_minhash_similarity(b.signature, v_signature) AS sim
                  FROM document_minhash_bands b
                 WHERE dedup_minhash_bands(b.signature) && v_mh_bands AND b.seen_at BETWEEN v_lo AND v_hi
                 ORDER BY sim DESC, b.seen_at, b.doc_id
            LOOP
                EXIT WHEN v_cand.sim < v_mh_review AND v_mode <> 'gated';
                SELECT d.external_id, d.content_sha1 INTO v_row
                  FROM documents d WHERE d.doc_id = v_cand.doc_id AND d.seen_at = v_cand.seen_at;
                CONTINUE WHEN NOT FOUND OR dedup_pair_whitelisted(v_sha1, v_row.content_sha1);
                IF v_mode = 'gated' THEN
                    v_gate := v_gate || v_cand.doc_id;
                END IF;
                IF v_cand.sim >= v_mh_dup THEN
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_row.external_id;
                    m_layer := 'minhash'; m_score := v_cand.sim; m_dist := NULL;
                ELSIF v_cand.sim >= v_mh_review AND r_doc_id IS NULL THEN
                    r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_row.external_id;
                    r_layer := 'minhash'; r_score := v_cand.sim; r_dist := NULL;
                END IF;
                EXIT;
            END LOOP;
            -- The stored text an earlier layer sent to review (SimHash within
            -- the review distance, containment in its review band) is compared
            -- on the whole signature too, band shared or not: the bands are a
            -- way to find candidates, and this one is found (revision 0070).
            -- One band row read, for the few texts with such a review.
            IF m_doc_id IS NULL AND r_layer IN ('simhash', 'containment') THEN
                SELECT dedup_minhash_similarity(b.signature, v_signature) INTO v_sim
                  FROM document_minhash_bands b
                 WHERE b.doc_id = r_doc_id AND b.seen_at = r_seen_at;
                IF v_sim >= v_mh_dup THEN
                    m_doc_id := r_doc_id; m_seen_at := r_seen_at; m_ext := r_ext;
                    m_layer := 'minhash'; m_score := v_sim; m_dist := NULL;
                END IF;
            END IF;
        END IF;

        -- Fact check (dedup_facts_verdict): a near-duplicate match where each
        -- text holds numbers or names the other lacks is two stories on one
        -- template (two match reports, two brochures of one school): review,
        -- not duplicate; unless both texts keep most of their clauses in
        -- common under unlike openings (a lead rewritten over a copied body).
        -- So is a short templated item where each text holds a number the
        -- other lacks (another day's figure, another date). So is one where
        -- the incoming text adds many facts (a commentary appending a speech),
        -- unless at least half its opening clauses (the lead, with any banner)
        -- are the matched text's: a full recrawl of a page stored truncated.
        IF verdict IS NULL AND m_doc_id IS NOT NULL AND v_facts_share IS NOT NULL THEN
            SELECT d.facts, d.body, d.clause_count - v_n_boiler, d.clauses
              INTO v_matched_facts, v_matched_body, v_stored_n, v_matched_clauses
              FROM documents d WHERE d.doc_id = m_doc_id AND d.seen_at = m_seen_at;
            v_shared := dedup_found_shared(v_useful, v_matched_clauses, v_cont_docs, v_cont_rows, m_doc_id);
            -- the added-facts rule applies unless half the lead is the matched
            -- text's: its clauses (boilerplate included) are read only when the
            -- rule would hold
            v_added := NULL;
            IF dedup_facts_disagree(it.facts, v_matched_facts, 2.0, v_facts_added) THEN
                IF 2 * dedup_shared_clauses(v_lead, dedup_document_clauses(m_doc_id, m_seen_at, v_matched_clauses))
                   < cardinality(v_lead) THEN
                    v_added := v_facts_added;
                END IF;
            END IF;
            IF dedup_facts_verdict(
                   it.facts, v_matched_facts, v_facts_share, v_added,
                   it.body, v_matched_body, v_shared, v_n_item, v_stored_n, v_settings) IS NOT NULL THEN
                r_doc_id := m_doc_id; r_seen_at := m_seen_at; r_ext := m_ext;
                r_layer := m_layer; r_score := m_score; r_dist := m_dist;
                m_doc_id := NULL;
            END IF;
            v_matched_body := NULL;
        END IF;

        IF verdict IS NULL AND m_doc_id IS NOT NULL THEN
            -- Near duplicate: not stored as a document; kept in full as a candidate.
            verdict := 'duplicate'; layer := m_layer; score := m_score; distance := m_dist;
            matched_doc_id := m_doc_id; matched_external_id := m_ext;
            candidate_id := dedup_redelivered(it.external_id, it.source, v_sha1, m_doc_id, v_lo, v_hi);
            IF candidate_id IS NOT NULL THEN
                layer := 'redelivery';  -- recorded as this duplicate before: nothing more
            END IF;
            IF NOT p_dry_run THEN
                DELETE FROM document_digests g WHERE g.content_sha1 = v_sha1 AND g.doc_id = v_doc_id;
                IF candidate_id IS NULL THEN
                    candidate_id := dedup_store_candidate(
                        it, 'auto', m_layer, NULL, m_doc_id, m_seen_at, NULL, m_score, m_dist, v_thresholds);
                    v_sightings := v_sightings
                        || dedup_sighting(it, m_doc_id, 'duplicate', m_layer, m_score, candidate_id);
                END IF;
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
            PERFORM dedup_store_document(it, v_doc_id, coalesce(v_held, '{}'));
            doc_id := v_doc_id;
            IF verdict = 'review' THEN
                candidate_id := dedup_store_candidate(
                    it, 'pending', r_layer, v_doc_id, r_doc_id, r_seen_at, NULL, r_score, r_dist,
                    v_thresholds);
                v_sightings := v_sightings
                    || dedup_sighting(it, v_doc_id, 'review', r_layer, r_score, candidate_id);
            ELSE
                v_sightings := v_sightings || dedup_sighting(it, v_doc_id, 'new', NULL, NULL, NULL);
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF NOT p_dry_run THEN
        -- the batch's sightings in one statement, in the items' order
        PERFORM dedup_store_sightings(v_sightings);
        -- the stored rows' block ranges summarized, for the next lookups by doc_id
        PERFORM dedup_summarize_lookups(ARRAY(SELECT x.seen_at FROM unnest(v_items) x));
    END IF;
END $$;
COMMENT ON FUNCTION dedup_ingest(jsonb, boolean, jsonb) IS
    'Check and store a batch of fingerprinted documents in one transaction (exact, SimHash, containment, MinHash; fact check); one verdict row per item. Called by dedup_pg.Deduper.';
