-- dedup-pg revision 0069: MinHash bands 12 of 3 instead of 16 (applied by
-- migrations/versions/0069_minhash_bands_12_of_3.py).
--
-- Why: issue 19 (the index a check reads at 10M documents). The MinHash GIN
-- index holds an entry for each band key of each stored signature: 16 a
-- document, ~38 bytes each, 614 bytes a kept document on sina2018 and 6.0 GiB
-- of the 10.1 GiB of indexes a check probed at 10M documents (revision 0067's
-- 10M run). 12 bands of 3 values, the first 12 of the 16, find fewer pairs
-- near the thresholds (bench/candidate_recall.py); the other layers find
-- most of them. Measured before and after (BENCHMARKS.md, revision 0069):
-- sina2018's index bytes 1,388 -> 1,256 a kept document, 4 of its 11,377
-- verdicts moved (MinHash reviews at 0.44-0.55 became new: two other
-- outlets' copies, two other stories on a shared template), one synonym
-- rewrite of bench/semantic_quality.py's 150 went from duplicate to review
-- with the semantic layer off, and fewer template pages went to review. A
-- probe looks up 12 keys, not 16.
--
-- The stored signatures do not change (the keys are computed from them), so
-- nothing is refingerprinted. The GIN index is not rebuilt: an index built
-- under 16 bands holds every key of the 12 (the same bands, first), so a probe
-- by 12 keys finds the same texts in it; its partitions keep the other 4
-- entries a row until they are dropped, or rebuilt (REINDEX INDEX
-- CONCURRENTLY on a partition's index, outside a transaction) to take the
-- bytes back at once. The downgrade rebuilds the index, so rows stored under
-- 12 get their 4 other keys.
--
COMMENT ON TABLE document_minhash_bands IS
    'MinHash signatures of stored documents (one row a document with a signature), their 12 band keys (dedup_minhash_bands(signature)) under a GIN index: the MinHash layer''s candidate lookup and comparison; partitioned by ISO week';

-- function:dedup_minhash_bands, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_minhash_bands(p_signature bit varying)
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN length(p_signature) >= 576 THEN ARRAY[
        substring(p_signature FROM 1 FOR 48)::bit(48)::bigint,
        (1::bigint << 48) | substring(p_signature FROM 49 FOR 48)::bit(48)::bigint,
        (2::bigint << 48) | substring(p_signature FROM 97 FOR 48)::bit(48)::bigint,
        (3::bigint << 48) | substring(p_signature FROM 145 FOR 48)::bit(48)::bigint,
        (4::bigint << 48) | substring(p_signature FROM 193 FOR 48)::bit(48)::bigint,
        (5::bigint << 48) | substring(p_signature FROM 241 FOR 48)::bit(48)::bigint,
        (6::bigint << 48) | substring(p_signature FROM 289 FOR 48)::bit(48)::bigint,
        (7::bigint << 48) | substring(p_signature FROM 337 FOR 48)::bit(48)::bigint,
        (8::bigint << 48) | substring(p_signature FROM 385 FOR 48)::bit(48)::bigint,
        (9::bigint << 48) | substring(p_signature FROM 433 FOR 48)::bit(48)::bigint,
        (10::bigint << 48) | substring(p_signature FROM 481 FOR 48)::bit(48)::bigint,
        (11::bigint << 48) | substring(p_signature FROM 529 FOR 48)::bit(48)::bigint] END
$$;
COMMENT ON FUNCTION dedup_minhash_bands(bit varying) IS NULL;

-- function:dedup_lock_stripes_of, from sql/schema/60_ingest.sql
CREATE OR REPLACE FUNCTION dedup_lock_stripes_of(p_items dedup_item[])
RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY(
        SELECT DISTINCT k FROM unnest(p_items) e,
             LATERAL (SELECT (e.simhash >> (16 * b) & 65535)::integer AS k
                        FROM generate_series(0, 3) b
                      UNION ALL
                      SELECT (get_byte(decode(e.sha1, 'hex'), 0) << 8
                              | get_byte(decode(e.sha1, 'hex'), 1))
                      UNION ALL
                      SELECT (h & 65535)::integer FROM unnest(e.clauses) h
                      UNION ALL
                      SELECT ((e.minhash[3 * b + 1] + 4099 * b) & 65535)::integer
                        FROM generate_series(0, least(12, coalesce(cardinality(e.minhash), 0) / 3) - 1) b) keys
         ORDER BY k)
$$;
COMMENT ON FUNCTION dedup_lock_stripes_of(dedup_item[]) IS NULL;
