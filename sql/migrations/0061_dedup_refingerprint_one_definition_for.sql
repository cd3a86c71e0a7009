-- dedup-pg revision 0061: dedup_refingerprint one definition for one node and Citus (applied by
-- migrations/versions/0061_dedup_refingerprint_one_definition_for.py).
--
-- Why: dedup_refingerprint had a 117-line Citus copy in sql/citus/90_rebuild.sql
-- whose statements all differed: the batch's stored rows read by doc_id into
-- temporary tables and compared there, the lookup rows deleted by doc_id
-- lists, each document and digest written by its own statement. That form
-- runs on one node as well, and faster there: refingerprinting 5,839 stored
-- sina2018 articles after lowercase was turned on (3,698 changed) took
-- 0.9-1.4 s of backend CPU against 1.6-2.2 s for the set-based form, with the
-- same documents, digests, clause and band rows after (BENCHMARKS.md). It is
-- now the one definition; the MinHash rows' read also bounds their seen_at
-- range (their doc_id index is BRIN).
--
-- No hand-written changes: the definitions below are the whole revision.

-- function:dedup_refingerprint, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_refingerprint(p_items jsonb)
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
    INSERT INTO document_simhash_bands (band_key, simhash, doc_id, seen_at)
    SELECT k, r.simhash, r.doc_id, r.seen_at
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
