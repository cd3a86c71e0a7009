-- dedup-pg revision 0062: dedup_rebuild_pairs one definition for one node and Citus (applied by
-- migrations/versions/0062_dedup_rebuild_pairs_one_definition.py).
--
-- Why: dedup_rebuild_pairs had a 280-line copy in sql/citus/90_rebuild.sql,
-- changed beside it by every revision of the rebuild. The copy read the
-- window's clause rows and MinHash band values into temporary tables and the
-- pairs' signatures, facts and bodies into another. Now one definition reads
-- the lookup rows under two names, dedup_rb_rows and dedup_rb_mh, that
-- dedup_rebuild_lookup_rows makes: temporary views over the tables on one
-- node (the same plans as before), temporary copies in its Citus form. The
-- MinHash pairs' signatures are read by a join with unnest of their doc_ids
-- (a doc_id = ANY filter with 35,548 ids took 5 s where the join takes 0.25),
-- and the bodies and facts a rule needs by key through dedup_document_row.
-- On a 100k-document store (95,000 kept) the same 1,008 pair rows came out,
-- in 32.2-33.0 s against 32.2-32.9 s (4 alternating runs; the copy's reads on
-- one node took 35-37 s).
--
-- No hand-written changes: the definitions below are the whole revision.

-- function:dedup_document_row, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_document_row(p_doc_id bigint, p_seen_at timestamptz)
RETURNS documents
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v documents;
BEGIN
    SELECT * INTO v FROM documents d WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at;
    RETURN v;
END $$;
COMMENT ON FUNCTION dedup_document_row(bigint, timestamptz) IS NULL;

-- function:dedup_rebuild_lookup_rows, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_rebuild_lookup_rows(p_from timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_from IS NULL THEN
        DROP VIEW IF EXISTS dedup_rb_rows, dedup_rb_mh;
        RETURN;
    END IF;
    EXECUTE format($v$
        CREATE OR REPLACE TEMP VIEW dedup_rb_rows AS
        SELECT c.clause_hash, c.doc_id, c.seen_at FROM document_clauses c WHERE c.seen_at >= %1$L
        $v$, p_from);
    EXECUTE format($v$
        CREATE OR REPLACE TEMP VIEW dedup_rb_mh AS
        SELECT m.doc_id, m.seen_at, unnest(dedup_minhash_bands(m.signature)) AS band_key
          FROM document_minhash_bands m WHERE m.seen_at >= %1$L
        $v$, p_from);
END $$;
COMMENT ON FUNCTION dedup_rebuild_lookup_rows(timestamptz) IS NULL;

-- function:dedup_rebuild_pairs, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_rebuild_pairs(p_since timestamptz DEFAULT NULL, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (doc_id bigint, seen_at timestamptz, matched_doc_id bigint, matched_seen_at timestamptz,
               verdict text, layer text, score double precision, distance integer, thresholds jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s jsonb := dedup_effective_settings(NULL, p_overrides);
    v_window interval := make_interval(days => (s ->> 'window_days')::integer);
    v_from timestamptz;
    v_since timestamptz := coalesce(p_since, '-infinity');
    v_radius integer;
    -- as dedup_ingest resolves them
    v_mh_dup double precision := (s ->> 'minhash_threshold')::double precision;
    v_mh_review double precision := least((s ->> 'minhash_threshold')::double precision,
                                          (s ->> 'minhash_review_threshold')::double precision);
    v_facts_share double precision := (s ->> 'facts_disagreement_share')::double precision;
    v_facts_added double precision := (s ->> 'facts_added_share')::double precision;
    v_ids bigint[];  -- the pairs' documents
BEGIN
    IF v_window = interval '0' THEN
        v_window := interval '100000 days';  -- all history
    END IF;
    v_from := CASE WHEN p_since IS NULL THEN '-infinity' ELSE p_since - v_window END;
    v_radius := (SELECT max(x.review_distance) / 4 FROM generate_series(0, 20) k,
                        LATERAL dedup_simhash_distances(k * 100, s) x);

    DROP TABLE IF EXISTS dedup_rb_docs, dedup_rb_clauses, dedup_rb_pairs, dedup_rb_sig;
    -- the window's lookup rows: dedup_rb_rows (clauses), dedup_rb_mh (MinHash band values)
    PERFORM dedup_rebuild_lookup_rows(v_from);
    CREATE TEMP TABLE dedup_rb_docs ON COMMIT DROP AS
    SELECT d.doc_id, d.seen_at, d.content_sha1, d.simhash, (d.simhash & 65535)::integer AS b0,
           ((d.simhash >> 16) & 65535)::integer AS b1, ((d.simhash >> 32) & 65535)::integer AS b2,
           ((d.simhash >> 48) & 65535)::integer AS b3, d.text_length, d.clause_count, d.clauses,
           x.duplicate_distance AS dup_dist, x.review_distance, 0 AS n_boiler, d.clauses AS useful
      FROM documents d, LATERAL dedup_simhash_distances(d.text_length, s) x
     WHERE d.seen_at >= v_from;
    -- a text with a row for each of its clauses (no array): its clauses are its rows
    UPDATE dedup_rb_docs d SET clauses = r.clauses, useful = r.clauses
      FROM (SELECT c.doc_id, c.seen_at, array_agg(c.clause_hash ORDER BY c.clause_hash) AS clauses
              FROM dedup_rb_rows c WHERE c.seen_at >= v_from GROUP BY c.doc_id, c.seen_at) r
     WHERE d.clauses IS NULL AND r.doc_id = d.doc_id AND r.seen_at = d.seen_at;
    UPDATE dedup_rb_docs d SET clauses = '{}', useful = '{}' WHERE d.clauses IS NULL;
    CREATE INDEX ON dedup_rb_docs (doc_id);
    ANALYZE dedup_rb_docs;

    -- each later document's clauses (all of them, from its array) with their
    -- holders among the rows of document_clauses within the window either
    -- side, the document itself not counted, up to containment_boilerplate_docs
    -- (as a streaming probe reads them)
    CREATE TEMP TABLE dedup_rb_clauses ON COMMIT DROP AS
    SELECT h AS clause_hash, d.doc_id, d.seen_at,
           (SELECT count(*) FROM (SELECT 1 FROM dedup_rb_rows c
                                   WHERE c.clause_hash = h
                                     AND c.seen_at BETWEEN d.seen_at - v_window AND d.seen_at + v_window
                                     AND (c.doc_id, c.seen_at) <> (d.doc_id, d.seen_at)
                                   LIMIT (s ->> 'containment_boilerplate_docs')::integer) x) AS holders
      FROM dedup_rb_docs d, unnest(d.clauses) h
     WHERE d.seen_at >= v_since;
    UPDATE dedup_rb_docs d SET n_boiler = b.n, useful = b.useful
      FROM (SELECT c.doc_id, count(*) FILTER (WHERE c.holders >= (s ->> 'containment_boilerplate_docs')::integer) AS n,
                   coalesce(array_agg(c.clause_hash)
                                FILTER (WHERE c.holders < (s ->> 'containment_boilerplate_docs')::integer),
                            '{}') AS useful
              FROM dedup_rb_clauses c GROUP BY c.doc_id) b
     WHERE d.doc_id = b.doc_id;
    DELETE FROM dedup_rb_clauses c WHERE c.holders >= (s ->> 'containment_boilerplate_docs')::integer;
    ANALYZE dedup_rb_clauses;


    -- pairs (a later than b) from equal texts, SimHash bands (radius 1 when
    -- the review distance needs it: within 7 bits some band differs by at
    -- most one), a useful clause of a that is a row of b, and shared MinHash
    -- bands; the clauses a pair shares are then counted on the arrays
    CREATE TEMP TABLE dedup_rb_pairs ON COMMIT DROP AS
    WITH band_pairs AS (
        SELECT a.doc_id AS a_id, b.doc_id AS b_id
          FROM dedup_rb_docs a, unnest(dedup_band_neighbours(a.b0, v_radius)) v
          JOIN dedup_rb_docs b ON b.b0 = v
        UNION
        SELECT a.doc_id, b.doc_id
          FROM dedup_rb_docs a, unnest(dedup_band_neighbours(a.b1, v_radius)) v
          JOIN dedup_rb_docs b ON b.b1 = v
        UNION
        SELECT a.doc_id, b.doc_id
          FROM dedup_rb_docs a, unnest(dedup_band_neighbours(a.b2, v_radius)) v
          JOIN dedup_rb_docs b ON b.b2 = v
        UNION
        SELECT a.doc_id, b.doc_id
          FROM dedup_rb_docs a, unnest(dedup_band_neighbours(a.b3, v_radius)) v
          JOIN dedup_rb_docs b ON b.b3 = v
    ), clause_pairs AS (
        SELECT DISTINCT a.doc_id AS a_id, b.doc_id AS b_id
          FROM dedup_rb_clauses a
          JOIN dedup_rb_rows b ON b.clause_hash = a.clause_hash
                                 AND b.seen_at BETWEEN a.seen_at - v_window AND a.seen_at
                                 AND b.seen_at >= v_from
         WHERE (b.seen_at, b.doc_id) < (a.seen_at, a.doc_id)
    ), exact_pairs AS (
        -- every earlier copy within the window: streaming compares with the
        -- copy still kept, which may be any of them
        SELECT a.doc_id AS a_id, b.doc_id AS b_id
          FROM dedup_rb_docs a
          JOIN dedup_rb_docs b ON b.content_sha1 = a.content_sha1
                              AND b.seen_at BETWEEN a.seen_at - v_window AND a.seen_at
                              AND (b.seen_at, b.doc_id) < (a.seen_at, a.doc_id)
    ), minhash_pairs AS (
        -- texts sharing a MinHash band value: the MinHash layer's candidates
        -- (a pair that shares none is not compared, as in streaming)
        SELECT DISTINCT a.doc_id AS a_id, b.doc_id AS b_id
          FROM dedup_rb_mh a
          JOIN dedup_rb_mh b ON b.band_key = a.band_key
                            AND b.seen_at BETWEEN a.seen_at - v_window AND a.seen_at
                            AND b.seen_at >= v_from
         WHERE v_mh_dup IS NOT NULL AND a.seen_at >= v_since
           AND (b.seen_at, b.doc_id) < (a.seen_at, a.doc_id)
    )
    SELECT a.doc_id AS a_id, a.seen_at AS a_seen, b.doc_id AS b_id, b.seen_at AS b_seen,
           a.content_sha1 = b.content_sha1 AS exact,
           bit_count((a.simhash # b.simhash)::bit(64))::integer AS dist,
           dedup_shared_clauses(a.useful, b.clauses) AS shared,
           a.clause_count - a.n_boiler AS n_item, b.clause_count - a.n_boiler AS stored_n,
           a.dup_dist, a.review_distance, a.content_sha1 AS a_sha1, b.content_sha1 AS b_sha1,
           mp.a_id IS NOT NULL AS mh_band
      FROM (SELECT a_id, b_id FROM band_pairs
            UNION SELECT a_id, b_id FROM clause_pairs
            UNION SELECT a_id, b_id FROM exact_pairs
            UNION SELECT a_id, b_id FROM minhash_pairs) p
      JOIN dedup_rb_docs a ON a.doc_id = p.a_id
      JOIN dedup_rb_docs b ON b.doc_id = p.b_id
      LEFT JOIN minhash_pairs mp ON mp.a_id = p.a_id AND mp.b_id = p.b_id
     WHERE (b.seen_at, b.doc_id) < (a.seen_at, a.doc_id)
       AND a.seen_at - b.seen_at <= v_window
       AND a.seen_at >= v_since;
    DELETE FROM dedup_rb_pairs p
     WHERE p.a_sha1 <> p.b_sha1 AND dedup_pair_whitelisted(p.a_sha1, p.b_sha1);
    DELETE FROM dedup_rb_pairs p
     WHERE EXISTS (SELECT 1 FROM dedup_whitelist w WHERE w.kind = 'text' AND w.content_sha1 = p.a_sha1);

    -- The MinHash pairs' signatures, read for the rows that need them only
    -- (dedup_rb_docs, which holds every document, stays small) in one pass
    -- over the window's band rows (their doc_id index is BRIN: a lookup a
    -- document costs more as the store grows; a doc_id = ANY filter with this
    -- many ids is not hashed and took 5 s at 100k documents where the join
    -- takes 0.25). The pairs' bodies and facts are read where a rule needs
    -- them, by key (dedup_document_row: a statement of its own, so that no
    -- statement here joins documents with a temporary table, which Citus
    -- refuses).
    v_ids := ARRAY(SELECT p.a_id FROM dedup_rb_pairs p WHERE p.mh_band AND NOT p.exact
                   UNION SELECT p.b_id FROM dedup_rb_pairs p WHERE p.mh_band AND NOT p.exact);
    CREATE TEMP TABLE dedup_rb_sig ON COMMIT DROP AS
    SELECT m.doc_id, m.seen_at, m.signature
      FROM document_minhash_bands m
      JOIN unnest(v_ids) i(doc_id) ON i.doc_id = m.doc_id
     WHERE m.seen_at >= v_from;
    CREATE INDEX ON dedup_rb_sig (doc_id);
    ANALYZE dedup_rb_sig;
    RETURN QUERY
    WITH ev AS (
        SELECT p.*,
               CASE WHEN p.mh_band AND NOT p.exact THEN
                   (SELECT dedup_minhash_similarity(db.signature, da.signature)
                      FROM dedup_rb_sig da, dedup_rb_sig db
                     WHERE da.doc_id = p.a_id AND da.seen_at = p.a_seen
                       AND db.doc_id = p.b_id AND db.seen_at = p.b_seen) END AS mh_sim,
               p.shared::double precision / nullif(least(p.n_item, greatest(p.stored_n, p.shared)), 0) AS ratio,
               p.shared::double precision / nullif(p.n_item, 0) AS incoming_share,
               jsonb_build_object(
                   'simhash_distance', p.dup_dist, 'simhash_review_distance', p.review_distance,
                   'containment_threshold', s -> 'containment_threshold',
                   'containment_review_threshold', s -> 'containment_review_threshold',
                   'containment_incoming_share', s -> 'containment_incoming_share',
                   'containment_whole_text_chars', s -> 'containment_whole_text_chars',
                   'minhash_threshold', v_mh_dup,
                   'minhash_review_threshold', v_mh_review,
                   'facts_disagreement_share', v_facts_share,
                   'facts_added_share', v_facts_added,
                   'window_days', s -> 'window_days') AS t
          FROM dedup_rb_pairs p
    ), judged AS (
        -- exact
        SELECT e.a_id, e.a_seen, e.b_id, e.b_seen, 'duplicate' AS j_verdict, 'exact' AS j_layer,
               1.0::double precision AS j_score, 0 AS j_distance, e.t AS j_t
          FROM ev e WHERE e.exact
        UNION ALL
        -- SimHash: within the duplicate distance, and long texts share some clauses
        SELECT e.a_id, e.a_seen, e.b_id, e.b_seen,
               CASE WHEN e.dist <= e.dup_dist
                     AND NOT (e.n_item >= 5 AND e.stored_n >= 5
                              AND e.shared < (s ->> 'simhash_min_clause_overlap')::double precision
                                             * least(e.n_item, e.stored_n))
                    THEN 'duplicate' ELSE 'review' END,
               'simhash', (1.0 - e.dist / 64.0)::double precision, e.dist, e.t
          FROM ev e WHERE NOT e.exact AND e.dist <= e.review_distance
        UNION ALL
        -- containment
        SELECT e.a_id, e.a_seen, e.b_id, e.b_seen,
               CASE WHEN e.ratio >= (s ->> 'containment_threshold')::double precision
                     AND e.incoming_share >= (s ->> 'containment_incoming_share')::double precision
                    THEN 'duplicate'
                    WHEN e.ratio >= (s ->> 'containment_threshold')::double precision
                     AND e.shared = e.stored_n AND e.stored_n >= 2
                    THEN 'lead'
                    -- the review band, but a copied body under a rewritten lead
                    WHEN dedup_copied_body(
                             (dedup_document_row(e.a_id, e.a_seen)).body,
                             (dedup_document_row(e.b_id, e.b_seen)).body,
                             e.shared, e.n_item, e.stored_n, s)
                    THEN 'duplicate'
                    ELSE 'review' END,
               'containment', least(e.ratio, 1.0), NULL::integer,
               -- the lead rule needs how many of the earlier text's clauses count
               e.t || jsonb_build_object('lead_n', e.stored_n)
          FROM ev e
         WHERE NOT e.exact AND e.n_item >= 2 AND e.shared >= 2
           AND e.shared >= least((s ->> 'containment_min_shared')::integer, e.n_item,
                                 greatest(e.stored_n, e.shared))
           AND e.ratio >= least((s ->> 'containment_review_threshold')::double precision,
                                (s ->> 'containment_threshold')::double precision)
        UNION ALL
        -- whole-text containment: a single shared clause, the shorter body
        -- whole inside the other (dedup_body_within)
        SELECT e.a_id, e.a_seen, e.b_id, e.b_seen, 'duplicate', 'containment',
               1.0::double precision, NULL::integer, e.t
          FROM ev e
         WHERE NOT e.exact AND e.shared = 1 AND least(e.n_item, e.stored_n) <= 3
           AND (s ->> 'containment_whole_text_chars') IS NOT NULL
           AND dedup_body_within(
                   (dedup_document_row(e.a_id, e.a_seen)).body,
                   (dedup_document_row(e.b_id, e.b_seen)).body,
                   (s ->> 'containment_whole_text_chars')::integer)
        UNION ALL
        -- MinHash: estimated 5-gram Jaccard of texts sharing a band
        SELECT e.a_id, e.a_seen, e.b_id, e.b_seen,
               CASE WHEN e.mh_sim >= v_mh_dup THEN 'duplicate' ELSE 'review' END,
               'minhash', e.mh_sim, NULL::integer, e.t
          FROM ev e
         WHERE NOT e.exact AND v_mh_dup IS NOT NULL AND e.mh_sim >= v_mh_review
    ), with_facts AS (
        -- the facts and bodies of both texts of a near-duplicate match, and
        -- the clauses they share (dedup_facts_verdict's copied-body rule)
        SELECT j.*, da.facts AS a_facts, db.facts AS b_facts, da.body AS a_body, db.body AS b_body,
               p.shared, p.n_item, p.stored_n
          FROM judged j
          CROSS JOIN LATERAL dedup_document_row(j.a_id, j.a_seen) da
          CROSS JOIN LATERAL dedup_document_row(j.b_id, j.b_seen) db
          JOIN dedup_rb_pairs p ON p.a_id = j.a_id AND p.b_id = j.b_id
         WHERE j.j_verdict IN ('duplicate', 'lead') AND j.j_layer <> 'exact' AND v_facts_share IS NOT NULL
           AND da.doc_id IS NOT NULL AND db.doc_id IS NOT NULL  -- (a document gone meanwhile)
    ), checked AS (
        -- the fact check (the later text's facts first, as dedup_ingest passes
        -- the incoming text's): two stories, or else the later text adds many
        -- facts (the caller checks the lead clauses: that rule does not apply
        -- when the later text opens with the earlier one's clauses)
        SELECT f.a_id, f.a_seen, f.b_id, f.b_seen, f.j_verdict, f.j_layer, f.j_score, f.j_distance, f.j_t,
               x.v IS NOT DISTINCT FROM 'differ' AS both_sides, x.v IS NOT DISTINCT FROM 'added' AS added
          FROM with_facts f,
               LATERAL (SELECT dedup_facts_verdict(f.a_facts, f.b_facts, v_facts_share, v_facts_added,
                                                   f.a_body, f.b_body, f.shared, f.n_item, f.stored_n, s)
                                 AS v) x
        UNION ALL
        SELECT j.*, false, false
          FROM judged j
         WHERE NOT (j.j_verdict IN ('duplicate', 'lead') AND j.j_layer <> 'exact' AND v_facts_share IS NOT NULL)
    )
    SELECT c.a_id, c.a_seen, c.b_id, c.b_seen,
           CASE WHEN c.both_sides AND c.j_verdict = 'duplicate' THEN 'review' ELSE c.j_verdict END,
           c.j_layer, c.j_score, c.j_distance,
           CASE WHEN c.both_sides THEN c.j_t || jsonb_build_object('facts_disagree', true)
                WHEN c.added THEN c.j_t || jsonb_build_object('facts_added', true)
                ELSE c.j_t END
      FROM checked c;
    PERFORM dedup_rebuild_lookup_rows(NULL);  -- (after the rows are returned)
END $$;
COMMENT ON FUNCTION dedup_rebuild_pairs(timestamptz, jsonb) IS
    'Candidate pairs of a rebuild (exact, SimHash band self-joins, shared clauses, shared MinHash bands) with each layer''s verdict under dedup_ingest''s rules, fact check included. Called by dedup-pg rebuild.';
