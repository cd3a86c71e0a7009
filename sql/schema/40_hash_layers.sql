-- dedup-pg schema: the hash layers' lookup tables and functions. The layers,
-- in the order dedup_ingest (60_ingest.sql) applies them: whitelist, exact
-- (document_digests, 20_tables.sql), SimHash, clause containment, MinHash; a
-- near-duplicate match is then fact-checked.
--
-- The lookup tables are partitioned by ISO week (30_partitions.sql says why),
-- and each one's key index carries seen_at and doc_id (and the SimHash), so a
-- probe reads the index alone. Their doc_id indexes are BRIN: rows go in in
-- doc_id order, so a BRIN index finds a document's rows for a few hundred kB
-- per 20M rows (measured: 285 -> 6 ms per lookup at 1M documents) where a
-- btree would cost ~25 bytes a row.

-- Clause containment: a copy that adds or drops paragraphs (banners, ads, a
-- truncated recrawl) still holds most of the other's clauses. Every clause of
-- every stored document (boilerplate lines included). The index carries doc_id
-- and seen_at, so counting a clause's holders and grouping shared clauses by
-- document read the index alone.
CREATE TABLE document_clauses (
    clause_hash bigint NOT NULL,
    doc_id      bigint NOT NULL,
    seen_at     timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_clauses_hash_idx ON document_clauses (clause_hash) INCLUDE (seen_at, doc_id);
CREATE INDEX document_clauses_doc_id_idx ON document_clauses USING brin (doc_id) WITH (pages_per_range = 8);
COMMENT ON TABLE document_clauses IS
    'Clause hashes of stored documents (the containment layer''s lookup); partitioned by ISO week';

-- SimHash: one row per band of every stored document (band_key = band number
-- << 16 | the band's 16 bits). The index carries the whole simhash, so a probe
-- computes distances from the index alone: one index scan of one or two week
-- partitions. It replaced four band indexes on documents, whose probe was four
-- index scans per day partition (32 at 8 days): at 1M documents over 8 days
-- ingest ran at 58% of its first 100k's speed with nothing read from outside
-- shared_buffers (bench/growth.py, BENCHMARKS.md).
CREATE TABLE document_simhash_bands (
    band_key integer NOT NULL,
    simhash  bigint NOT NULL,
    doc_id   bigint NOT NULL,
    seen_at  timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_simhash_bands_key_idx ON document_simhash_bands (band_key) INCLUDE (simhash, seen_at, doc_id);
CREATE INDEX document_simhash_bands_doc_id_idx ON document_simhash_bands USING brin (doc_id);
COMMENT ON TABLE document_simhash_bands IS
    'SimHash bands of stored documents (4 per document: band_key = band number << 16 | its 16 bits, see dedup_simhash_band_keys): the SimHash layer''s candidate lookup; partitioned by ISO week';

-- MinHash: a signature of 128 minimums over the text's character 5-grams
-- (computed in Python, dedup_pg/minhash.py) is stored with the document
-- (documents.minhash) and cut into 32 bands of 4 values, one row per band
-- value here: two texts sharing a band value are compared on the whole
-- signature (estimated Jaccard). It finds what changes a word in most clauses:
-- synonym rewrites, reworded leads.
CREATE TABLE document_minhash_bands (
    band_key bigint NOT NULL,
    doc_id   bigint NOT NULL,
    seen_at  timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_minhash_bands_key_idx ON document_minhash_bands (band_key) INCLUDE (seen_at, doc_id);
CREATE INDEX document_minhash_bands_doc_id_idx ON document_minhash_bands USING brin (doc_id);
COMMENT ON TABLE document_minhash_bands IS
    'MinHash band values of stored documents (32 per document with a signature): the MinHash layer''s candidate lookup; partitioned by ISO week';

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

-- The band keys of a signed 64-bit SimHash, each band's value within p_radius
-- bits included: (band number << 16) | value, band b = bits 16b .. 16b+15.
CREATE FUNCTION dedup_simhash_band_keys(p_simhash bigint, p_radius integer DEFAULT 0)
RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg((b << 16) | v ORDER BY b, v)
      FROM generate_series(0, 3) b,
           unnest(dedup_band_neighbours(((p_simhash >> (16 * b)) & 65535)::integer, p_radius)) v
$$;

-- SimHash duplicate and review distances for a text length: the duplicate
-- distance by length (simhash_distance_by_length, capped by simhash_distance),
-- the review distance that plus simhash_review_margin, capped by
-- simhash_review_distance (and 7, the most the band layout can find).
CREATE FUNCTION dedup_simhash_distances(p_length integer, p_settings jsonb,
                                                   OUT duplicate_distance integer, OUT review_distance integer)
LANGUAGE sql IMMUTABLE AS $$
    WITH rule AS (
        SELECT least(coalesce((SELECT (r ->> 1)::integer
                                 FROM jsonb_array_elements(p_settings -> 'simhash_distance_by_length') r
                                WHERE (r ->> 0)::integer <= p_length
                                ORDER BY (r ->> 0)::integer DESC LIMIT 1),
                              0),
                     (p_settings ->> 'simhash_distance')::integer) AS dup
    )
    SELECT dup,
           greatest(dup, least(7, (p_settings ->> 'simhash_review_distance')::integer,
                               dup + coalesce((p_settings ->> 'simhash_review_margin')::integer, 3)))
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

-- The 32 band values of a signature: band b hashes values 4b+1 .. 4b+4.
CREATE FUNCTION dedup_minhash_bands(p_minhash integer[])
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY(SELECT hashtextextended(p_minhash[b * 4 + 1 : b * 4 + 4]::text, b)
                   FROM generate_series(0, cardinality(p_minhash) / 4 - 1) b)
$$;

-- Estimated Jaccard of two signatures: the share of equal positions.
CREATE FUNCTION dedup_minhash_similarity(p_a integer[], p_b integer[])
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT count(*) FILTER (WHERE x = y)::double precision / greatest(cardinality(p_a), 1)
      FROM unnest(p_a, p_b) u(x, y)
$$;

-- Facts: numbers, proper names and titles of a text (dedup_pg/facts.py). A
-- near-duplicate match (SimHash, containment, MinHash) where each text holds
-- facts the other lacks is two stories on one template: review, not duplicate.
--
-- Are these two texts different stories? p_a is the incoming text's facts,
-- p_b the matched one's. Yes when each holds facts the other lacks (at least
-- p_share of its own, and at least one): two stories on one template. Also
-- when the incoming text adds many facts (at least 10, and p_added_share of
-- its own): a new text that quotes or appends an old one. A copy that adds a
-- banner or an ad, or drops paragraphs, differs on one side by a few facts.
-- Null share or facts: no; null p_added_share: the second rule is off.
-- (dedup_pg.facts.disagree)
CREATE FUNCTION dedup_facts_disagree(p_a text[], p_b text[], p_share double precision,
                                     p_added_share double precision)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH d AS (
        SELECT (SELECT count(*) FROM (SELECT unnest(p_a) EXCEPT SELECT unnest(p_b)) x) AS only_a,
               (SELECT count(*) FROM (SELECT unnest(p_b) EXCEPT SELECT unnest(p_a)) x) AS only_b
    )
    SELECT p_share IS NOT NULL AND p_a IS NOT NULL AND p_b IS NOT NULL
       AND ((d.only_a >= greatest(1, p_share * cardinality(p_a))
             AND d.only_b >= greatest(1, p_share * cardinality(p_b)))
            OR d.only_a >= greatest(10, coalesce(p_added_share, 2) * cardinality(p_a)))
      FROM d
$$;

