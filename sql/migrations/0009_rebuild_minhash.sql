-- dedup-pg revision 0009: the rebuild learns the MinHash layer and the fact
-- check of revision 0008 (applied by migrations/versions/0009_rebuild_minhash.py).
--
-- dedup_rebuild_pairs gains MinHash candidate pairs (a self-join of
-- document_minhash_bands on the band value, within the window) with the
-- layer's verdict rows, and applies dedup_ingest's fact check to every
-- near-duplicate 'duplicate' and 'lead' row. dedup_refingerprint also rewrites
-- documents.minhash, documents.facts and the document_minhash_bands rows (and
-- fills them for documents stored before 0008).
--
-- dedup_rebuild_vector_pairs is unchanged: streaming's semantic layer
-- (dedup_ingest_semantic) checks numbers, not facts, and the rebuild applies
-- the same rule.
--
-- Both functions are redefined here in full; the downgrade re-applies 0007's.

-- Re-fingerprint stored documents in place: p_items holds, per document,
-- doc_id, seen_at and the fingerprints computed now (sha1, title_sha1,
-- simhash, length, clauses, norm_version, minhash, facts). Only documents
-- whose fingerprints differ are written: documents, their clauses, their
-- MinHash bands (when the signature changed) and their digest. A document
-- stored before revision 0008 (no facts) always differs: it gets its MinHash
-- signature, bands and facts. Returns how many changed. Callers keep a batch
-- within a few days: the clause and band lookups are bounded by the batch's
-- seen_at range (document_clauses has no doc_id index, document_minhash_bands
-- a BRIN one only).
CREATE OR REPLACE FUNCTION dedup_refingerprint(p_items jsonb)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_lo timestamptz;
    v_hi timestamptz;
    v_changed integer;
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS dedup_refp (
        doc_id bigint, seen_at timestamptz, sha1 bytea, title_sha1 bytea, simhash bigint,
        length integer, clauses bigint[], norm_version smallint, minhash integer[], facts text[],
        old_sha1 bytea, old_minhash integer[]) ON COMMIT DROP;
    TRUNCATE dedup_refp;
    INSERT INTO dedup_refp
    SELECT x.doc_id, x.seen_at, decode(x.sha1, 'hex'), decode(x.title_sha1, 'hex'), x.simhash,
           x.length, ARRAY(SELECT DISTINCT h FROM unnest(x.clauses) h ORDER BY 1), x.norm_version,
           x.minhash, x.facts, d.content_sha1, d.minhash
      FROM jsonb_to_recordset(p_items) AS x(doc_id bigint, seen_at timestamptz, sha1 text,
                                            title_sha1 text, simhash bigint, length integer,
                                            clauses bigint[], norm_version smallint,
                                            minhash integer[], facts text[])
      JOIN documents d ON d.doc_id = x.doc_id AND d.seen_at = x.seen_at;
    SELECT min(seen_at), max(seen_at) INTO v_lo, v_hi FROM dedup_refp;
    -- unchanged: same document fields and the same clause set (one bounded
    -- scan of the batch's days for the clauses)
    DELETE FROM dedup_refp r
     USING documents d
     WHERE d.doc_id = r.doc_id AND d.seen_at = r.seen_at
       AND d.content_sha1 = r.sha1 AND d.title_sha1 IS NOT DISTINCT FROM r.title_sha1
       AND d.simhash = r.simhash AND d.text_length = r.length AND d.norm_version = r.norm_version
       AND d.minhash IS NOT DISTINCT FROM r.minhash AND d.facts IS NOT DISTINCT FROM r.facts
       AND r.clauses = coalesce((SELECT array_agg(c.clause_hash ORDER BY c.clause_hash)
                                   FROM document_clauses c
                                  WHERE c.seen_at BETWEEN v_lo AND v_hi
                                    AND c.doc_id = r.doc_id AND c.seen_at = r.seen_at), '{}');
    SELECT count(*) INTO v_changed FROM dedup_refp;
    IF v_changed = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM document_clauses c USING dedup_refp r
     WHERE c.seen_at BETWEEN v_lo AND v_hi AND c.doc_id = r.doc_id AND c.seen_at = r.seen_at;
    INSERT INTO document_clauses (clause_hash, doc_id, seen_at)
    SELECT h, r.doc_id, r.seen_at FROM dedup_refp r, unnest(r.clauses) h;
    -- the MinHash bands follow the signature (as dedup_store_document writes them)
    DELETE FROM document_minhash_bands b USING dedup_refp r
     WHERE b.seen_at BETWEEN v_lo AND v_hi AND b.doc_id = r.doc_id AND b.seen_at = r.seen_at
       AND r.minhash IS DISTINCT FROM r.old_minhash;
    INSERT INTO document_minhash_bands (band_key, doc_id, seen_at)
    SELECT DISTINCT k, r.doc_id, r.seen_at
      FROM dedup_refp r, unnest(dedup_minhash_bands(r.minhash)) k
     WHERE r.minhash IS DISTINCT FROM r.old_minhash;
    UPDATE documents d
       SET content_sha1 = r.sha1, title_sha1 = r.title_sha1, simhash = r.simhash,
           text_length = r.length, clause_count = cardinality(r.clauses), norm_version = r.norm_version,
           minhash = r.minhash, facts = r.facts
      FROM dedup_refp r
     WHERE d.doc_id = r.doc_id AND d.seen_at = r.seen_at AND d.seen_at BETWEEN v_lo AND v_hi;
    -- the exact layer: the old digest goes with the old text; the new one is
    -- claimed unless a later (or still existing) document holds it. Two
    -- documents may now share a text: the rebuild's exact layer decides.
    DELETE FROM document_digests g USING dedup_refp r
     WHERE g.content_sha1 = r.old_sha1 AND g.doc_id = r.doc_id AND r.old_sha1 <> r.sha1;
    INSERT INTO document_digests AS g (content_sha1, doc_id, seen_at)
    SELECT DISTINCT ON (r.sha1) r.sha1, r.doc_id, r.seen_at
      FROM dedup_refp r ORDER BY r.sha1, r.seen_at DESC, r.doc_id DESC
    ON CONFLICT (content_sha1) DO UPDATE
       SET doc_id = EXCLUDED.doc_id, seen_at = EXCLUDED.seen_at
     WHERE g.seen_at < EXCLUDED.seen_at
        OR NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = g.doc_id AND d.seen_at = g.seen_at);
    RETURN v_changed;
END $$;

COMMENT ON FUNCTION dedup_refingerprint(jsonb) IS
    'Rewrite the fingerprints of stored documents (documents incl. minhash and facts, document_clauses, document_minhash_bands, document_digests) with values computed under the current normalization; returns how many changed. Called by dedup-pg rebuild --refingerprint.';

-- Candidate pairs over the stored documents seen at or after p_since (and
-- the look-back window before it, as earlier partners), with the hash
-- layers' evidence. One row per pair and layer; doc_id is the later document
-- of the pair by (seen_at, doc_id) (the one streaming ingest would have
-- checked), matched_doc_id the earlier one. verdict: 'duplicate', 'review',
-- or 'lead' (containment that is a duplicate only if the earlier text is
-- exactly the later one's opening: the caller checks the lead clauses, which
-- are not stored). Rules and thresholds are dedup_ingest's; whitelisted
-- pairs are left out; pairs further apart than window_days are never formed.
--
-- The fact check (dedup_ingest's): a near-duplicate 'duplicate' row
-- (SimHash, containment, MinHash) whose two texts each hold facts the other
-- lacks is returned as 'review', and such a row, or a 'lead' row whose texts
-- disagree so, carries "facts_disagree": true in its thresholds. A
-- 'duplicate' or 'lead' row whose later text adds many facts (the
-- facts_added_share rule) carries "facts_added": true: it is another story
-- unless at least half the later text's lead clauses, which are not stored,
-- are the earlier text's; the caller checks. Streaming checks the facts of
-- the first layer's match only and then stops looking: the caller gives a row
-- that failed the check the precedence of the duplicate it would have been.
--
-- Differences from streaming: a clause is boilerplate when window_days
-- either side of the document hold it in p_boiler_docs other documents,
-- counted over everything stored, not only what was stored before it.
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

    DROP TABLE IF EXISTS dedup_rb_docs, dedup_rb_clauses, dedup_rb_pairs;
    CREATE TEMP TABLE dedup_rb_docs ON COMMIT DROP AS
    SELECT d.doc_id, d.seen_at, d.content_sha1, d.simhash, d.simhash_band0 AS b0, d.simhash_band1 AS b1,
           d.simhash_band2 AS b2, d.simhash_band3 AS b3, d.text_length, d.clause_count,
           x.duplicate_distance AS dup_dist, x.review_distance, 0 AS n_boiler
      FROM documents d, LATERAL dedup_simhash_distances(d.text_length, s) x
     WHERE d.seen_at >= v_from;
    CREATE INDEX ON dedup_rb_docs (doc_id);
    ANALYZE dedup_rb_docs;

    -- clause holders within the window either side, the document itself not counted
    CREATE TEMP TABLE dedup_rb_clauses ON COMMIT DROP AS
    SELECT c.clause_hash, c.doc_id, c.seen_at,
           count(*) OVER (PARTITION BY c.clause_hash ORDER BY c.seen_at
                          RANGE BETWEEN v_window PRECEDING AND v_window FOLLOWING) - 1 AS holders
      FROM document_clauses c
     WHERE c.seen_at >= v_from;
    UPDATE dedup_rb_docs d SET n_boiler = b.n
      FROM (SELECT c.doc_id, count(*) AS n FROM dedup_rb_clauses c
             WHERE c.holders >= (s ->> 'containment_boilerplate_docs')::integer GROUP BY c.doc_id) b
     WHERE d.doc_id = b.doc_id;
    DELETE FROM dedup_rb_clauses c WHERE c.holders >= (s ->> 'containment_boilerplate_docs')::integer;
    ANALYZE dedup_rb_clauses;

    -- pairs (a later than b) from equal texts, SimHash bands (radius 1 when
    -- the review distance needs it: within 7 bits some band differs by at
    -- most one), shared useful clauses and shared MinHash bands
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
        SELECT a.doc_id AS a_id, b.doc_id AS b_id, count(*) AS shared
          FROM dedup_rb_clauses a
          JOIN document_clauses b ON b.clause_hash = a.clause_hash
                                 AND b.seen_at BETWEEN a.seen_at - v_window AND a.seen_at
                                 AND b.seen_at >= v_from
         WHERE (b.seen_at, b.doc_id) < (a.seen_at, a.doc_id)
         GROUP BY 1, 2
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
          FROM document_minhash_bands a
          JOIN document_minhash_bands b ON b.band_key = a.band_key
                                       AND b.seen_at BETWEEN a.seen_at - v_window AND a.seen_at
                                       AND b.seen_at >= v_from
         WHERE v_mh_dup IS NOT NULL AND a.seen_at >= v_since
           AND (b.seen_at, b.doc_id) < (a.seen_at, a.doc_id)
    )
    SELECT a.doc_id AS a_id, a.seen_at AS a_seen, b.doc_id AS b_id, b.seen_at AS b_seen,
           a.content_sha1 = b.content_sha1 AS exact,
           bit_count((a.simhash # b.simhash)::bit(64))::integer AS dist,
           coalesce(cp.shared, 0)::integer AS shared,
           a.clause_count - a.n_boiler AS n_item, b.clause_count - a.n_boiler AS stored_n,
           a.dup_dist, a.review_distance, a.content_sha1 AS a_sha1, b.content_sha1 AS b_sha1,
           mp.a_id IS NOT NULL AS mh_band
      FROM (SELECT a_id, b_id FROM band_pairs
            UNION SELECT a_id, b_id FROM clause_pairs WHERE shared >= 2
            UNION SELECT a_id, b_id FROM exact_pairs
            UNION SELECT a_id, b_id FROM minhash_pairs) p
      JOIN dedup_rb_docs a ON a.doc_id = p.a_id
      JOIN dedup_rb_docs b ON b.doc_id = p.b_id
      LEFT JOIN clause_pairs cp ON cp.a_id = p.a_id AND cp.b_id = p.b_id
      LEFT JOIN minhash_pairs mp ON mp.a_id = p.a_id AND mp.b_id = p.b_id
     WHERE (b.seen_at, b.doc_id) < (a.seen_at, a.doc_id)
       AND a.seen_at - b.seen_at <= v_window
       AND a.seen_at >= v_since;
    DELETE FROM dedup_rb_pairs p
     WHERE p.a_sha1 <> p.b_sha1 AND dedup_pair_whitelisted(p.a_sha1, p.b_sha1);
    DELETE FROM dedup_rb_pairs p
     WHERE EXISTS (SELECT 1 FROM dedup_whitelist w WHERE w.kind = 'text' AND w.content_sha1 = p.a_sha1);

    -- Signatures and facts are read from documents for the rows that need
    -- them only (dedup_rb_docs, which holds every document, stays small).
    RETURN QUERY
    WITH ev AS (
        SELECT p.*,
               CASE WHEN p.mh_band AND NOT p.exact THEN
                   (SELECT dedup_minhash_similarity(db.minhash, da.minhash)
                      FROM documents da, documents db
                     WHERE da.doc_id = p.a_id AND da.seen_at = p.a_seen
                       AND db.doc_id = p.b_id AND db.seen_at = p.b_seen) END AS mh_sim,
               p.shared::double precision / nullif(least(p.n_item, greatest(p.stored_n, p.shared)), 0) AS ratio,
               p.shared::double precision / nullif(p.n_item, 0) AS incoming_share,
               jsonb_build_object(
                   'simhash_distance', p.dup_dist, 'simhash_review_distance', p.review_distance,
                   'containment_threshold', s -> 'containment_threshold',
                   'containment_review_threshold', s -> 'containment_review_threshold',
                   'containment_incoming_share', s -> 'containment_incoming_share',
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
        -- MinHash: estimated 5-gram Jaccard of texts sharing a band
        SELECT e.a_id, e.a_seen, e.b_id, e.b_seen,
               CASE WHEN e.mh_sim >= v_mh_dup THEN 'duplicate' ELSE 'review' END,
               'minhash', e.mh_sim, NULL::integer, e.t
          FROM ev e
         WHERE NOT e.exact AND v_mh_dup IS NOT NULL AND e.mh_sim >= v_mh_review
    ), with_facts AS (
        -- the facts of both texts of a near-duplicate match
        SELECT j.*,
               (SELECT d.facts FROM documents d WHERE d.doc_id = j.a_id AND d.seen_at = j.a_seen) AS a_facts,
               (SELECT d.facts FROM documents d WHERE d.doc_id = j.b_id AND d.seen_at = j.b_seen) AS b_facts
          FROM judged j
         WHERE j.j_verdict IN ('duplicate', 'lead') AND j.j_layer <> 'exact' AND v_facts_share IS NOT NULL
    ), checked AS (
        -- the fact check (the later text's facts first, as dedup_ingest passes
        -- the incoming text's): both sides differ, or else the later text adds
        -- many facts (the caller checks the lead clauses: that rule does not
        -- apply when the later text opens with the earlier one's clauses)
        SELECT f.a_id, f.a_seen, f.b_id, f.b_seen, f.j_verdict, f.j_layer, f.j_score, f.j_distance, f.j_t,
               x.both_sides, NOT x.both_sides AND v_facts_added IS NOT NULL
                   AND dedup_facts_disagree(f.a_facts, f.b_facts, v_facts_share, v_facts_added) AS added
          FROM with_facts f, LATERAL (SELECT dedup_facts_disagree(f.a_facts, f.b_facts, v_facts_share, NULL)
                                        AS both_sides) x
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
