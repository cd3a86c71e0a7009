-- dedup-pg schema: full-history rebuild (dedup_pg/rebuild.py drives it).
--
-- Streaming ingest decides one document at a time. A rebuild decides over
-- everything stored at once: candidate pairs come from set-based joins (equal
-- digests, SimHash band self-joins, shared clauses, HNSW neighbours), Python
-- unions the duplicate links into clusters, and every member but the earliest
-- is demoted to a restorable candidate with dedup_demote_document, exactly
-- like a semantic duplicate found after the hash layers stored it. After a
-- normalization or tokenizer change, dedup_refingerprint rewrites stored
-- fingerprints in place first.
--
-- The rebuild applies dedup_ingest's rules: dedup_rebuild_pairs forms exact,
-- SimHash, containment and MinHash pairs and applies the fact check to every
-- near-duplicate 'duplicate' and 'lead' row. dedup_rebuild_vector_pairs checks
-- a semantic duplicate as streaming's semantic layer (dedup_ingest_semantic)
-- does: dedup_semantic_agrees (numbers and facts).

-- One row per rebuild or re-fingerprint run: progress (the last document done,
-- in (seen_at, doc_id) order), so an interrupted run resumes where it stopped.
CREATE TABLE dedup_rebuild_runs (
    run_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text NOT NULL CONSTRAINT dedup_rebuild_runs_kind_check
                    CHECK (kind IN ('refingerprint', 'clusters')),
    -- refingerprint: what the fingerprints are computed with (normalization
    -- version, settings, template versions), hashed; a run resumes only under
    -- the same key
    fingerprint_key text,
    since           timestamptz,
    started_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    last_seen_at    timestamptz,
    last_doc_id     bigint,
    total           bigint NOT NULL DEFAULT 0,
    done            bigint NOT NULL DEFAULT 0,
    changed         bigint NOT NULL DEFAULT 0,
    summary         jsonb
);
COMMENT ON TABLE dedup_rebuild_runs IS
    'dedup-pg rebuild runs: kind, progress (last_seen_at, last_doc_id; done of total), summary. An unfinished refingerprint run with the current fingerprint_key is resumed.';

-- Re-fingerprint stored documents in place (dedup-pg rebuild
-- --refingerprint): p_items holds, per document, doc_id, seen_at and the
-- fingerprints computed now (sha1, title_sha1, simhash, length, clauses,
-- norm_version, minhash, facts, lead). Only documents whose fingerprints differ are
-- written: documents, their clauses, their MinHash bands (when the signature
-- changed), their SimHash bands (when the simhash changed) and their digest. A
-- document stored before revision 0008 (no facts) always differs: it gets its
-- MinHash signature, bands and facts. Returns how many changed. Callers keep a
-- batch within a few days: the clause and band lookups are bounded by the
-- batch's seen_at range (their doc_id indexes are BRIN).
--
-- One definition for one node and Citus. The batch's stored rows are read by
-- doc_id into temporary tables and compared there, the lookup rows deleted by
-- doc_id lists, and each document and digest written by its own statement (a
-- router statement on Citus, where a join of the batch's temporary table
-- with documents, document_clauses, the band or the digest tables fails:
-- "complex joins are only supported when all distributed tables are
-- co-located and joined on their distribution columns"). A doc_id is one
-- document. On one node this form took 0.9-1.4 s of backend CPU where the
-- set-based one it replaced (revisions 0041-0060) took 1.6-2.2, refingerprinting
-- 5,839 stored articles of which 3,698 changed (BENCHMARKS.md, revision 0061).
CREATE FUNCTION dedup_refingerprint(p_items jsonb)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_lo timestamptz;
    v_hi timestamptz;
    v_changed integer;
    v_ids bigint[];
    v_whole bigint[];  -- documents with a clause row for each clause
    v_row record;  -- not r: the statements alias dedup_refp r
    v_gdoc bigint;
    v_gseen timestamptz;
    v_n integer;
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS dedup_refp (
        doc_id bigint, seen_at timestamptz, sha1 bytea, title_sha1 bytea, simhash bigint,
        length integer, clauses bigint[], norm_version smallint, minhash smallint[], facts integer[],
        lead bigint[], old_sha1 bytea, old_minhash bit varying, old_simhash bigint,
        signature bit varying) ON COMMIT DROP;
    TRUNCATE dedup_refp;
    INSERT INTO dedup_refp
    SELECT x.doc_id, x.seen_at, decode(x.sha1, 'hex'), decode(x.title_sha1, 'hex'), x.simhash,
           x.length, ARRAY(SELECT DISTINCT h FROM unnest(x.clauses) h ORDER BY 1), x.norm_version,
           x.minhash, x.facts, x.lead, NULL, NULL, NULL, coalesce(x.signature, dedup_minhash_bits(x.minhash))
      FROM jsonb_to_recordset(p_items) AS x(doc_id bigint, seen_at timestamptz, sha1 text,
                                            title_sha1 text, simhash bigint, length integer,
                                            clauses bigint[], norm_version smallint,
                                            minhash smallint[], facts integer[], lead bigint[],
                                            signature bit varying);
    SELECT min(seen_at), max(seen_at), array_agg(doc_id) INTO v_lo, v_hi, v_ids FROM dedup_refp;
    -- the batch's stored rows, read by doc_id (the band rows' doc_id index is
    -- BRIN: their seen_at range bounds the read)
    DROP TABLE IF EXISTS dedup_refp_d, dedup_refp_c;
    CREATE TEMP TABLE dedup_refp_d ON COMMIT DROP AS
    SELECT d.doc_id, d.seen_at, d.content_sha1, d.title_sha1, d.simhash, d.text_length, d.norm_version,
           m.signature, d.facts, d.clauses
      FROM documents d
      LEFT JOIN document_minhash_bands m  -- co-located with documents on Citus
             ON m.doc_id = d.doc_id AND m.seen_at = d.seen_at AND m.seen_at BETWEEN v_lo AND v_hi
     WHERE d.doc_id = ANY (v_ids) AND d.seen_at BETWEEN v_lo AND v_hi;
    -- and the clause rows of those with a row for each clause (no array)
    v_whole := ARRAY(SELECT d.doc_id FROM dedup_refp_d d WHERE d.clauses IS NULL);
    CREATE TEMP TABLE dedup_refp_c ON COMMIT DROP AS
    SELECT c.doc_id, c.seen_at, array_agg(c.clause_hash ORDER BY c.clause_hash) AS clauses
      FROM document_clauses c
     WHERE c.doc_id = ANY (v_whole) AND c.seen_at BETWEEN v_lo AND v_hi
     GROUP BY c.doc_id, c.seen_at;
    -- items whose document is gone are dropped
    DELETE FROM dedup_refp r
     WHERE NOT EXISTS (SELECT 1 FROM dedup_refp_d d WHERE d.doc_id = r.doc_id AND d.seen_at = r.seen_at);
    UPDATE dedup_refp r SET old_sha1 = d.content_sha1, old_minhash = d.signature, old_simhash = d.simhash
      FROM dedup_refp_d d WHERE d.doc_id = r.doc_id AND d.seen_at = r.seen_at;
    -- unchanged: same document fields and the same clause set
    DELETE FROM dedup_refp r
     USING dedup_refp_d d
     WHERE d.doc_id = r.doc_id AND d.seen_at = r.seen_at
       AND d.content_sha1 = r.sha1 AND d.title_sha1 IS NOT DISTINCT FROM r.title_sha1
       AND d.simhash = r.simhash AND d.text_length = r.length AND d.norm_version = r.norm_version
       AND d.signature IS NOT DISTINCT FROM r.signature AND d.facts IS NOT DISTINCT FROM r.facts
       AND coalesce(d.clauses, (SELECT c.clauses FROM dedup_refp_c c
                                  WHERE c.doc_id = r.doc_id AND c.seen_at = r.seen_at), '{}') = r.clauses;
    SELECT count(*) INTO v_changed FROM dedup_refp;
    IF v_changed = 0 THEN
        RETURN 0;
    END IF;
    v_ids := ARRAY(SELECT r.doc_id FROM dedup_refp r);
    DELETE FROM document_clauses c
     WHERE c.seen_at BETWEEN v_lo AND v_hi AND c.doc_id = ANY (v_ids);
    INSERT INTO document_clauses (clause_hash, doc_id, seen_at)
    SELECT h, r.doc_id, r.seen_at FROM dedup_refp r, unnest(dedup_clause_rows(r.clauses, r.lead)) h;
    -- the MinHash row follows the signature (as dedup_store_document writes
    -- it)
    v_ids := ARRAY(SELECT r.doc_id FROM dedup_refp r WHERE r.signature IS DISTINCT FROM r.old_minhash);
    DELETE FROM document_minhash_bands b
     WHERE b.seen_at BETWEEN v_lo AND v_hi AND b.doc_id = ANY (v_ids);
    INSERT INTO document_minhash_bands (doc_id, seen_at, signature)
    SELECT r.doc_id, r.seen_at, r.signature
      FROM dedup_refp r
     WHERE r.signature IS DISTINCT FROM r.old_minhash AND r.signature IS NOT NULL;
    -- and the SimHash bands the simhash
    v_ids := ARRAY(SELECT r.doc_id FROM dedup_refp r WHERE r.simhash IS DISTINCT FROM r.old_simhash);
    DELETE FROM document_simhash_bands b
     WHERE b.seen_at BETWEEN v_lo AND v_hi AND b.doc_id = ANY (v_ids);
    INSERT INTO document_simhash_bands (band_key, tail, simhash, doc_id, seen_at)
    SELECT k, dedup_simhash_tail(r.simhash, k >> 16), r.simhash, r.doc_id, r.seen_at
      FROM dedup_refp r, unnest(dedup_simhash_bands(r.simhash)) k
     WHERE r.simhash IS DISTINCT FROM r.old_simhash;
    FOR v_row IN SELECT * FROM dedup_refp LOOP
        UPDATE documents d
           SET content_sha1 = v_row.sha1, title_sha1 = v_row.title_sha1, simhash = v_row.simhash,
               text_length = v_row.length, clause_count = cardinality(v_row.clauses), norm_version = v_row.norm_version,
               facts = v_row.facts,
               clauses = dedup_clause_array(v_row.clauses)
         WHERE d.doc_id = v_row.doc_id AND d.seen_at = v_row.seen_at;
        -- the exact layer: the old digest goes with the old text
        IF v_row.old_sha1 <> v_row.sha1 THEN
            DELETE FROM document_digests g WHERE g.content_sha1 = v_row.old_sha1 AND g.doc_id = v_row.doc_id;
        END IF;
    END LOOP;
    -- the new one is claimed unless a later (or still existing) document
    -- holds it. Two documents may now share a text: the rebuild's exact
    -- layer decides.
    FOR v_row IN SELECT DISTINCT ON (r.sha1) r.sha1, r.doc_id, r.seen_at
               FROM dedup_refp r ORDER BY r.sha1, r.seen_at DESC, r.doc_id DESC LOOP
        INSERT INTO document_digests (content_sha1, doc_id, seen_at) VALUES (v_row.sha1, v_row.doc_id, v_row.seen_at)
        ON CONFLICT (content_sha1) DO NOTHING;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n = 0 THEN
            SELECT g.doc_id, g.seen_at INTO v_gdoc, v_gseen
              FROM document_digests g WHERE g.content_sha1 = v_row.sha1 FOR UPDATE;
            IF v_gseen < v_row.seen_at
               OR NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = v_gdoc AND d.seen_at = v_gseen) THEN
                UPDATE document_digests g SET doc_id = v_row.doc_id, seen_at = v_row.seen_at
                 WHERE g.content_sha1 = v_row.sha1;
            END IF;
        END IF;
    END LOOP;
    RETURN v_changed;
END $$;

COMMENT ON FUNCTION dedup_refingerprint(jsonb) IS
    'Rewrite the fingerprints of stored documents (documents incl. facts, document_clauses, document_minhash_bands incl. the signature, document_simhash_bands, document_digests) with values computed under the current normalization; returns how many changed. Called by dedup-pg rebuild --refingerprint.';

-- Store fingerprinted items as documents without checking them (a corpus
-- loaded for a rebuild, which then decides): the digest goes to the latest
-- holder, each gets a 'new' sighting. Locks out streaming writers for the
-- transaction (they lock stripes of the same table). Returns the doc ids.
CREATE FUNCTION dedup_rebuild_load(p_items jsonb)
RETURNS TABLE (pos integer, doc_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    it dedup_item;
    v_doc_id bigint;
BEGIN
    LOCK TABLE dedup_lock_stripes IN EXCLUSIVE MODE;
    FOR it IN SELECT * FROM jsonb_populate_recordset(NULL::dedup_item, p_items) x ORDER BY x.pos LOOP
        v_doc_id := nextval('documents_doc_id_seq');
        pos := it.pos;
        doc_id := v_doc_id;
        PERFORM dedup_store_document(it, v_doc_id, it.lead);
        INSERT INTO document_digests AS g (content_sha1, doc_id, seen_at)
        VALUES (decode(it.sha1, 'hex'), v_doc_id, it.seen_at)
        ON CONFLICT (content_sha1) DO UPDATE
           SET doc_id = EXCLUDED.doc_id, seen_at = EXCLUDED.seen_at
         WHERE g.seen_at <= EXCLUDED.seen_at;
        INSERT INTO document_sightings (seen_at, doc_id, external_id, url, source, verdict)
        VALUES (it.seen_at, v_doc_id, it.external_id, it.url, it.source, 'new');
        RETURN NEXT;
    END LOOP;
END $$;

-- A stored document's row by key (NULL when it is gone). PL/pgSQL: a
-- statement that calls it reads documents through it, by key, and on Citus
-- the read is a router statement of its own.
CREATE FUNCTION dedup_document_row(p_doc_id bigint, p_seen_at timestamptz)
RETURNS documents
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v documents;
BEGIN
    SELECT * INTO v FROM documents d WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at;
    RETURN v;
END $$;

-- The rebuild's lookup rows of the window from p_from on, under the names
-- dedup_rebuild_pairs reads: dedup_rb_rows (document_clauses: clause_hash,
-- doc_id, seen_at) and dedup_rb_mh (document_minhash_bands, a row a band
-- value: doc_id, seen_at, band_key). On one node temporary views, which the
-- planner reads as the tables themselves, through their indexes and
-- partitions; sql/citus/ has the Citus form, which copies the rows into
-- temporary tables on the coordinator (the statements that read them are
-- joins a cluster cannot run on the distributed tables). p_from NULL drops
-- them: a view left in the session would block a change to those tables.
CREATE FUNCTION dedup_rebuild_lookup_rows(p_from timestamptz)
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
-- The fact check (dedup_ingest's, dedup_facts_verdict): a near-duplicate
-- 'duplicate' row (SimHash, containment, MinHash) whose two texts are two
-- stories (each holds facts the other lacks, not a copied body under a
-- rewritten lead; or a templated item's numbers; or sums of money, none in
-- both) is returned as 'review', and such a row, or a 'lead' row whose
-- texts disagree so, carries "facts_disagree": true in its thresholds. A
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
--
-- One definition for one node and Citus (since revision 0062). The window's
-- lookup rows are read under the names dedup_rebuild_lookup_rows gives them
-- (views on one node, copies on Citus), the MinHash pairs' signatures are
-- read into dedup_rb_sig by doc_id, and the pairs' bodies and facts by key
-- (dedup_document_row), so no statement joins a distributed table with a
-- temporary one.
CREATE FUNCTION dedup_rebuild_pairs(p_since timestamptz DEFAULT NULL, p_overrides jsonb DEFAULT '{}')
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

-- The semantic rebuild's neighbours: for each stored vector of p_model from
-- p_from on, its p_k nearest stored vectors within p_window of it
-- (dedup_model_knn_sql: the model's HNSW index), one row a pair, the cosine
-- in cos. One statement here; sql/citus/ has the Citus form, which searches
-- one vector at a time.
CREATE FUNCTION dedup_rebuild_neighbours(p_model embedding_models, p_from timestamptz,
                                         p_window interval, p_k integer, p_rerank integer)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, other_id bigint, other_seen_at timestamptz,
               cos double precision)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT x.doc_id, x.seen_at, n.doc_id, n.seen_at, n.cos::double precision
          FROM document_embeddings x
          CROSS JOIN LATERAL (%s) n
         WHERE x.model_id = %s AND x.seen_at >= $1
        $q$,
        dedup_model_knn_sql(p_model.model_id, 'x.embedding',
                            'e.seen_at BETWEEN x.seen_at - $2 AND x.seen_at + $2 AND e.doc_id <> x.doc_id',
                            '$3', '$4'),
        p_model.model_id)
    USING p_from, p_window, p_k, p_rerank;
END $$;

-- The rows of documents p_ids from p_from on: what a rebuild judges pairs by.
-- PL/pgSQL on purpose: a caller's query then holds no distributed table on
-- Citus, where a document is read by doc_id on its shard.
CREATE FUNCTION dedup_documents_by_id(p_ids bigint[], p_from timestamptz)
RETURNS SETOF documents
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT d.* FROM documents d WHERE d.doc_id = ANY (p_ids) AND d.seen_at >= p_from;
END $$;

-- Semantic pairs: each document's p_k nearest stored vectors of the active
-- model (dedup_rebuild_neighbours) within the window, at or above the review cosine of
-- the later document's content type; duplicate when at or above the duplicate
-- cosine and dedup_semantic_agrees (dedup_ingest_semantic's rules).
CREATE FUNCTION dedup_rebuild_vector_pairs(p_since timestamptz DEFAULT NULL, p_overrides jsonb DEFAULT '{}')
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
    PERFORM dedup_hnsw_search_settings(dedup_model_ef_search(v_model, s));
    RETURN QUERY EXECUTE $q$
        WITH near AS MATERIALIZED (
            SELECT * FROM dedup_rebuild_neighbours($9, $1, $2, $3, $8)
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
        ), docs AS MATERIALIZED (
            SELECT * FROM dedup_documents_by_id(ARRAY(SELECT p.a_id FROM pairs p UNION SELECT p.b_id FROM pairs p), $1)
        ), judged AS (
            SELECT p.*, a.content_sha1 AS a_sha1, b.content_sha1 AS b_sha1,
                   coalesce(src.content_type, $5 ->> 'content_type') AS ct,
                   concat_ws(E'\n', a.title, a.body) AS a_text, concat_ws(E'\n', b.title, b.body) AS b_text,
                   a.body AS a_body, b.body AS b_body, a.facts AS a_facts, b.facts AS b_facts
              FROM pairs p
              JOIN docs a ON a.doc_id = p.a_id AND a.seen_at = p.a_seen
              JOIN docs b ON b.doc_id = p.b_id AND b.seen_at = p.b_seen
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
                     AND dedup_semantic_agrees(t.a_text, t.b_text, t.a_body, t.b_body, t.a_facts, t.b_facts, $5)
                    THEN 'duplicate' ELSE 'review' END,
               'semantic', t.cos::double precision, NULL::integer,
               jsonb_build_object('model', $7::text, 'content_type', t.ct, 'semantic_duplicate', t.dup,
                                  'semantic_review', t.review,
                                  'semantic_min_number_overlap', $5 -> 'semantic_min_number_overlap',
                                  'facts_disagreement_share', $5 -> 'facts_disagreement_share',
                                  'window_days', $5 -> 'window_days')
          FROM thr t
         WHERE t.cos >= t.review
        $q$
    USING v_from, v_window, (s ->> 'semantic_neighbours')::integer, coalesce(p_since, '-infinity'),
          s, v_model.thresholds, v_model.name, (s ->> 'semantic_rerank')::integer, v_model;
END $$;

COMMENT ON FUNCTION dedup_rebuild_vector_pairs(timestamptz, jsonb) IS
    'Semantic candidate pairs of a rebuild: nearest stored vectors of the active model (HNSW), judged by dedup_ingest_semantic''s thresholds. Called by dedup-pg rebuild.';

-- Demote cluster members: each p_links item (doc_id, seen_at, kept_doc_id,
-- kept_seen_at, layer, score, distance, thresholds) becomes a restorable
-- 'auto' candidate of the kept document (dedup_demote_document: sightings and
-- candidates re-pointed, a pending review of it superseded). Skipped, and not
-- returned: a document or kept document that is gone, a whitelisted text or
-- pair, a document a reviewer kept (restored, dismissed). Streaming writers
-- are locked out for the transaction. Returns (doc_id, candidate_id).
CREATE FUNCTION dedup_rebuild_demote(p_links jsonb)
RETURNS TABLE (doc_id bigint, candidate_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    l record;
    v_sha1 bytea;
    v_kept_sha1 bytea;
    v_review bigint;
    v_cid bigint;
BEGIN
    LOCK TABLE dedup_lock_stripes IN EXCLUSIVE MODE;
    FOR l IN SELECT * FROM jsonb_to_recordset(p_links) AS x(
                 doc_id bigint, seen_at timestamptz, kept_doc_id bigint, kept_seen_at timestamptz,
                 layer text, score double precision, distance integer, thresholds jsonb) LOOP
        SELECT d.content_sha1 INTO v_sha1 FROM documents d WHERE d.doc_id = l.doc_id AND d.seen_at = l.seen_at;
        SELECT d.content_sha1 INTO v_kept_sha1 FROM documents d
         WHERE d.doc_id = l.kept_doc_id AND d.seen_at = l.kept_seen_at;
        CONTINUE WHEN v_sha1 IS NULL OR v_kept_sha1 IS NULL;
        CONTINUE WHEN EXISTS (SELECT 1 FROM dedup_whitelist w WHERE w.kind = 'text' AND w.content_sha1 = v_sha1);
        CONTINUE WHEN v_sha1 <> v_kept_sha1 AND dedup_pair_whitelisted(v_sha1, v_kept_sha1);
        CONTINUE WHEN EXISTS (SELECT 1 FROM duplicate_candidates c
                               WHERE c.doc_id = l.doc_id AND c.status IN ('restored', 'dismissed'));
        SELECT c.candidate_id INTO v_review FROM duplicate_candidates c
         WHERE c.doc_id = l.doc_id AND c.status = 'pending' ORDER BY c.candidate_id DESC LIMIT 1;
        v_cid := dedup_demote_document(l.doc_id, l.seen_at, v_review, l.kept_doc_id, l.kept_seen_at,
                                       l.layer, l.score, l.thresholds);
        UPDATE duplicate_candidates c SET distance = l.distance
         WHERE c.candidate_id = v_cid AND c.seen_at = l.seen_at AND l.distance IS NOT NULL;
        -- a pending review of the kept document against this one is moot now
        -- (re-pointed, it would compare the kept document with itself): it
        -- goes, and its sighting is a plain 'new' one again
        UPDATE document_sightings s SET verdict = 'new', layer = NULL, score = NULL, candidate_id = NULL
         WHERE s.candidate_id IN (SELECT c.candidate_id FROM duplicate_candidates c
                                   WHERE c.doc_id = l.kept_doc_id AND c.matched_doc_id = l.kept_doc_id
                                     AND c.status = 'pending');
        DELETE FROM duplicate_candidates c
         WHERE c.doc_id = l.kept_doc_id AND c.matched_doc_id = l.kept_doc_id AND c.status = 'pending';
        -- the text's digest stays with a document that holds it
        IF v_sha1 = v_kept_sha1 THEN
            INSERT INTO document_digests AS g (content_sha1, doc_id, seen_at)
            VALUES (v_kept_sha1, l.kept_doc_id, l.kept_seen_at)
            ON CONFLICT (content_sha1) DO NOTHING;
        END IF;
        doc_id := l.doc_id;
        candidate_id := v_cid;
        RETURN NEXT;
    END LOOP;
END $$;

-- Queue reviews found by a rebuild: each p_reviews item (doc_id, seen_at,
-- matched_doc_id, matched_seen_at, layer, score, distance, thresholds) becomes
-- a pending candidate of the kept document, as streaming ingest queues one
-- (its 'new' sighting becomes a 'review' one). Skipped: a document that has
-- any candidate of its own already (queued, or decided by a reviewer), gone
-- documents, whitelisted texts and pairs. Returns (doc_id, candidate_id).
CREATE FUNCTION dedup_rebuild_review(p_reviews jsonb)
RETURNS TABLE (doc_id bigint, candidate_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    l record;
    v_sha1 bytea;
    v_matched_sha1 bytea;
    v_cid bigint;
BEGIN
    LOCK TABLE dedup_lock_stripes IN EXCLUSIVE MODE;
    FOR l IN SELECT * FROM jsonb_to_recordset(p_reviews) AS x(
                 doc_id bigint, seen_at timestamptz, matched_doc_id bigint, matched_seen_at timestamptz,
                 layer text, score double precision, distance integer, thresholds jsonb) LOOP
        SELECT d.content_sha1 INTO v_sha1 FROM documents d WHERE d.doc_id = l.doc_id AND d.seen_at = l.seen_at;
        SELECT d.content_sha1 INTO v_matched_sha1 FROM documents d
         WHERE d.doc_id = l.matched_doc_id AND d.seen_at = l.matched_seen_at;
        CONTINUE WHEN v_sha1 IS NULL OR v_matched_sha1 IS NULL;
        CONTINUE WHEN EXISTS (SELECT 1 FROM duplicate_candidates c WHERE c.doc_id = l.doc_id);
        CONTINUE WHEN EXISTS (SELECT 1 FROM dedup_whitelist w WHERE w.kind = 'text' AND w.content_sha1 = v_sha1);
        CONTINUE WHEN v_sha1 <> v_matched_sha1 AND dedup_pair_whitelisted(v_sha1, v_matched_sha1);
        DELETE FROM document_sightings s
         WHERE s.doc_id = l.doc_id AND s.seen_at = l.seen_at AND s.verdict = 'new';
        v_cid := dedup_record_candidate(
            dedup_document_item(l.doc_id, l.seen_at), 'pending', l.layer, l.doc_id,
            l.matched_doc_id, l.matched_seen_at, NULL, l.score, l.distance, l.thresholds);
        doc_id := l.doc_id;
        candidate_id := v_cid;
        RETURN NEXT;
    END LOOP;
END $$;

