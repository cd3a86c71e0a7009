-- dedup-pg revision 0026: MinHash signatures of 16-bit values (applied by
-- migrations/versions/0026_minhash_signatures_of_16_bit.py).
--
-- Why: issue 19, bytes a document. The MinHash signature was 128 values of
-- 32 bits on every stored document: 525 of the 1,414 heap bytes a kept
-- document has beside its text on sina2018 (bench/bytes.py). Equal minimums
-- are what the estimate counts; two unequal ones agree on 16 bits with
-- probability 2^-16, so 16 bits a value estimate the same Jaccard but for
-- ~1 pair in 500 moved by 1/128 (a "b-bit" MinHash). Now a signature is 128
-- values of 16 bits (smallint[]: the low half of the old values, which are
-- bits 32-63 of each minimum; its top bits are mostly zeros, these are not),
-- and the bands are cut from them.
--
-- The stored signatures become their low 16 bits (documents and candidates
-- rewritten: ALTER COLUMN ... TYPE rewrites the tables) and the band keys are
-- computed again from them (the migration's script, after this file).

CREATE FUNCTION dedup_minhash_16(p_minhash integer[])
RETURNS smallint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_minhash IS NOT NULL
                THEN ARRAY(SELECT (((v & 65535) # 32768) - 32768)::smallint
                             FROM unnest(p_minhash) WITH ORDINALITY u(v, i) ORDER BY i) END
$$;
ALTER TYPE dedup_item ALTER ATTRIBUTE minhash TYPE smallint[];
DROP FUNCTION dedup_minhash_bands(integer[]);
DROP FUNCTION dedup_minhash_similarity(integer[], integer[]);
ALTER TABLE documents ALTER COLUMN minhash TYPE smallint[] USING dedup_minhash_16(minhash);
ALTER TABLE duplicate_candidates ALTER COLUMN minhash TYPE smallint[] USING dedup_minhash_16(minhash);
DROP FUNCTION dedup_minhash_16(integer[]);
COMMENT ON COLUMN documents.minhash IS
    'MinHash signature (128 values of 16 bits: the low bits of each minimum, dedup_pg/minhash.py) over character 5-grams of the normalized text; null for texts too short';
-- the band keys cut from the 16-bit values: dedup_minhash_bands as defined
-- below, created here so the stored rows can be rewritten in this file (a
-- Citus coordinator is taken only through a revision's SQL file)
CREATE FUNCTION dedup_minhash_bands(p_minhash smallint[])
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY(SELECT hashtextextended(p_minhash[b * 3 + 1 : b * 3 + 3]::text, b)
                   FROM generate_series(0, least(16, cardinality(p_minhash) / 3) - 1) b)
$$;
UPDATE document_minhash_bands b SET band_keys = dedup_minhash_bands(d.minhash)
  FROM documents d WHERE d.doc_id = b.doc_id AND d.seen_at = b.seen_at;

-- function:dedup_minhash_bands, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_minhash_bands(p_minhash smallint[])
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY(SELECT hashtextextended(p_minhash[b * 3 + 1 : b * 3 + 3]::text, b)
                   FROM generate_series(0, least(16, cardinality(p_minhash) / 3) - 1) b)
$$;
COMMENT ON FUNCTION dedup_minhash_bands(smallint[]) IS NULL;

-- function:dedup_minhash_similarity, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_minhash_similarity(p_a smallint[], p_b smallint[])
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT count(*) FILTER (WHERE x = y)::double precision / greatest(cardinality(p_a), 1)
      FROM unnest(p_a, p_b) u(x, y)
$$;
COMMENT ON FUNCTION dedup_minhash_similarity(smallint[], smallint[]) IS NULL;

-- function:dedup_refingerprint, from sql/schema/90_rebuild.sql
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
        length integer, clauses bigint[], norm_version smallint, minhash smallint[], facts text[],
        lead bigint[], old_sha1 bytea, old_minhash smallint[], old_simhash bigint) ON COMMIT DROP;
    TRUNCATE dedup_refp;
    INSERT INTO dedup_refp
    SELECT x.doc_id, x.seen_at, decode(x.sha1, 'hex'), decode(x.title_sha1, 'hex'), x.simhash,
           x.length, ARRAY(SELECT DISTINCT h FROM unnest(x.clauses) h ORDER BY 1), x.norm_version,
           x.minhash, x.facts, x.lead, d.content_sha1, d.minhash, d.simhash
      FROM jsonb_to_recordset(p_items) AS x(doc_id bigint, seen_at timestamptz, sha1 text,
                                            title_sha1 text, simhash bigint, length integer,
                                            clauses bigint[], norm_version smallint,
                                            minhash smallint[], facts text[], lead bigint[])
      JOIN documents d ON d.doc_id = x.doc_id AND d.seen_at = x.seen_at;
    SELECT min(seen_at), max(seen_at) INTO v_lo, v_hi FROM dedup_refp;
    -- unchanged: same document fields and the same clause set
    DELETE FROM dedup_refp r
     USING documents d
     WHERE d.doc_id = r.doc_id AND d.seen_at = r.seen_at
       AND d.content_sha1 = r.sha1 AND d.title_sha1 IS NOT DISTINCT FROM r.title_sha1
       AND d.simhash = r.simhash AND d.text_length = r.length AND d.norm_version = r.norm_version
       AND d.minhash IS NOT DISTINCT FROM r.minhash AND d.facts IS NOT DISTINCT FROM r.facts
       AND dedup_document_clauses(d.doc_id, d.seen_at, d.clauses) = r.clauses;
    SELECT count(*) INTO v_changed FROM dedup_refp;
    IF v_changed = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM document_clauses c USING dedup_refp r
     WHERE c.seen_at BETWEEN v_lo AND v_hi AND c.doc_id = r.doc_id AND c.seen_at = r.seen_at;
    INSERT INTO document_clauses (clause_hash, doc_id, seen_at)
    SELECT h, r.doc_id, r.seen_at FROM dedup_refp r, unnest(dedup_clause_rows(r.clauses, r.lead)) h;
    -- the MinHash bands follow the signature (as dedup_store_document writes them)
    DELETE FROM document_minhash_bands b USING dedup_refp r
     WHERE b.seen_at BETWEEN v_lo AND v_hi AND b.doc_id = r.doc_id AND b.seen_at = r.seen_at
       AND r.minhash IS DISTINCT FROM r.old_minhash;
    INSERT INTO document_minhash_bands (doc_id, seen_at, band_keys)
    SELECT r.doc_id, r.seen_at, dedup_minhash_bands(r.minhash)
      FROM dedup_refp r
     WHERE r.minhash IS DISTINCT FROM r.old_minhash AND cardinality(dedup_minhash_bands(r.minhash)) > 0;
    -- and the SimHash bands the simhash
    DELETE FROM document_simhash_bands b USING dedup_refp r
     WHERE b.seen_at BETWEEN v_lo AND v_hi AND b.doc_id = r.doc_id AND b.seen_at = r.seen_at
       AND r.simhash IS DISTINCT FROM r.old_simhash;
    INSERT INTO document_simhash_bands (band_key, simhash, doc_id, seen_at)
    SELECT k, r.simhash, r.doc_id, r.seen_at
      FROM dedup_refp r, unnest(dedup_simhash_band_keys(r.simhash)) k
     WHERE r.simhash IS DISTINCT FROM r.old_simhash;
    UPDATE documents d
       SET content_sha1 = r.sha1, title_sha1 = r.title_sha1, simhash = r.simhash,
           text_length = r.length, clause_count = cardinality(r.clauses), norm_version = r.norm_version,
           minhash = r.minhash, facts = r.facts,
           clauses = dedup_clause_array(r.clauses)
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
    'Rewrite the fingerprints of stored documents (documents incl. minhash and facts, document_clauses, document_minhash_bands, document_simhash_bands, document_digests) with values computed under the current normalization; returns how many changed. Called by dedup-pg rebuild --refingerprint.';
