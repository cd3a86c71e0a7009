-- dedup-pg revision 0051: The SimHash bands no longer stored on documents (applied by
-- migrations/versions/0051_the_simhash_bands_no_longer.py).
--
-- Why: issue 20 (backend CPU a stored document) and issue 19 (bytes a
-- document). documents kept the SimHash's four 16-bit bands as generated
-- columns (simhash_band0..3), which nothing on the ingest path reads: the
-- SimHash layer probes document_simhash_bands. PostgreSQL computes stored
-- generated columns on every insert, and builds their expressions again for
-- every INSERT statement (read from the catalog and planned): 3.3% of the
-- backend's CPU while sina2018 articles went in (perf, 1,380 samples). They
-- also cost 16 bytes a row. The rebuild, their one reader, computes the bands
-- from simhash. Measured numbers: BENCHMARKS.md, revision 0051.
--
-- An analyst who read simhash_band1 reads ((simhash >> 16) & 65535)::integer.
-- Dropping a column changes no stored row: its space is reused as rows are
-- rewritten (VACUUM FULL returns it at once); new rows are without it.

-- On Citus the definitions after a statement over every shard are refused in
-- the transaction unless the shards were written one connection at a time (a
-- setting of no effect on one node).
SET LOCAL citus.multi_shard_modify_mode = 'sequential';
ALTER TABLE documents DROP COLUMN simhash_band0, DROP COLUMN simhash_band1,
                      DROP COLUMN simhash_band2, DROP COLUMN simhash_band3;

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
BEGIN
    IF v_window = interval '0' THEN
        v_window := interval '100000 days';  -- all history
    END IF;
    v_from := CASE WHEN p_since IS NULL THEN '-infinity' ELSE p_since - v_window END;
    v_radius := (SELECT max(x.review_distance) / 4 FROM generate_series(0, 20) k,
                        LATERAL dedup_simhash_distances(k * 100, s) x);

    DROP TABLE IF EXISTS dedup_rb_docs, dedup_rb_clauses, dedup_rb_pairs, dedup_rb_sig;
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
              FROM document_clauses c WHERE c.seen_at >= v_from GROUP BY c.doc_id, c.seen_at) r
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
           (SELECT count(*) FROM (SELECT 1 FROM document_clauses c
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
          JOIN document_clauses b ON b.clause_hash = a.clause_hash
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
          FROM (SELECT m.doc_id, m.seen_at, unnest(dedup_minhash_bands(m.signature)) AS band_key
                  FROM document_minhash_bands m WHERE m.seen_at >= v_since) a
          JOIN (SELECT m.doc_id, m.seen_at, unnest(dedup_minhash_bands(m.signature)) AS band_key
                  FROM document_minhash_bands m WHERE m.seen_at >= v_from) b
            ON b.band_key = a.band_key AND b.seen_at BETWEEN a.seen_at - v_window AND a.seen_at
         WHERE v_mh_dup IS NOT NULL
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

    -- Signatures and facts are read for the rows that need them only
    -- (dedup_rb_docs, which holds every document, stays small): the MinHash
    -- pairs' signatures in one pass over the window's band rows (their doc_id
    -- index is BRIN: a lookup a pair costs more as the store grows), facts by
    -- key (documents).
    CREATE TEMP TABLE dedup_rb_sig ON COMMIT DROP AS
    SELECT m.doc_id, m.seen_at, m.signature
      FROM document_minhash_bands m
     WHERE m.seen_at >= v_from
       AND (m.doc_id, m.seen_at) IN (SELECT p.a_id, p.a_seen FROM dedup_rb_pairs p WHERE p.mh_band AND NOT p.exact
                                     UNION
                                     SELECT p.b_id, p.b_seen FROM dedup_rb_pairs p WHERE p.mh_band AND NOT p.exact);
    CREATE INDEX ON dedup_rb_sig (doc_id);
    ANALYZE dedup_rb_sig;
    RETURN QUERY
    WITH ev AS (
        SELECT p.*,
               CASE WHEN p.mh_band AND NOT p.exact THEN
                   (SELECT dedup_minhash_similarity(mb.signature, ma.signature)
                      FROM dedup_rb_sig ma, dedup_rb_sig mb
                     WHERE ma.doc_id = p.a_id AND ma.seen_at = p.a_seen
                       AND mb.doc_id = p.b_id AND mb.seen_at = p.b_seen) END AS mh_sim,
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
                             (SELECT d.body FROM documents d WHERE d.doc_id = e.a_id AND d.seen_at = e.a_seen),
                             (SELECT d.body FROM documents d WHERE d.doc_id = e.b_id AND d.seen_at = e.b_seen),
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
                   (SELECT d.body FROM documents d WHERE d.doc_id = e.a_id AND d.seen_at = e.a_seen),
                   (SELECT d.body FROM documents d WHERE d.doc_id = e.b_id AND d.seen_at = e.b_seen),
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
          JOIN documents da ON da.doc_id = j.a_id AND da.seen_at = j.a_seen
          JOIN documents db ON db.doc_id = j.b_id AND db.seen_at = j.b_seen
          JOIN dedup_rb_pairs p ON p.a_id = j.a_id AND p.b_id = j.b_id
         WHERE j.j_verdict IN ('duplicate', 'lead') AND j.j_layer <> 'exact' AND v_facts_share IS NOT NULL
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
END $$;
COMMENT ON FUNCTION dedup_rebuild_pairs(timestamptz, jsonb) IS
    'Candidate pairs of a rebuild (exact, SimHash band self-joins, shared clauses, shared MinHash bands) with each layer''s verdict under dedup_ingest''s rules, fact check included. Called by dedup-pg rebuild.';
