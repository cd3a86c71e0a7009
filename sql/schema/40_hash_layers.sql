-- dedup-pg schema: the hash layers' lookup tables and functions. The layers,
-- in the order dedup_ingest (60_ingest.sql) applies them: whitelist, exact
-- (document_digests, 20_tables.sql), SimHash, clause containment, MinHash; a
-- near-duplicate match is then fact-checked.
--
-- The lookup tables are partitioned by ISO week (30_partitions.sql says why).
-- The SimHash index carries the SimHash, seen_at and doc_id, so a probe
-- computes distances from the index alone; the clause index holds the hash
-- alone (a probe reads the rows of the holders it finds); the MinHash bands
-- are one row a document under a GIN index (its candidates' documents are
-- read anyway). Their doc_id indexes are BRIN: rows go in in
-- doc_id order, so a BRIN index finds a document's rows for a few hundred kB
-- per 20M rows (measured: 285 -> 6 ms per lookup at 1M documents) where a
-- btree would cost ~25 bytes a row.

-- Clause containment: a copy that adds or drops paragraphs (banners, ads, a
-- truncated recrawl) still holds most of the other's clauses. document_clauses
-- holds a row for the clauses that find a text (dedup_clause_rows): every
-- clause of a text of fewer than 16 clauses, and of a longer one a sample
-- (hash & 3 = 0, the same clauses in every copy of a text) plus its first three
-- (the lead a truncated recrawl keeps) plus every clause stored texts already
-- held when it came (its probe found them: a site's template lines, a quoted
-- passage); such a text's clauses are all on its row (documents.clauses, NULL
-- for a text with a row for each). A probe with every clause of an incoming
-- text finds the stored texts it shares a row with; the layers then count the
-- clauses two texts share, all of them. On sina2018 revision 0025 (the sample
-- from 32 clauses) stored 15.7 rows a document instead of 30.3 and changed 4
-- of its 11,377 verdicts (bench/bytes.py --verdicts; bench/clause_sampling.py,
-- "1/4 + first 3, all under 32, counted in full", had predicted 5). Revision
-- 0039 samples from 16 clauses: held lines keep rows in every page, so a
-- template's lines still reach the boilerplate count (with the sample alone,
-- a line outside it was held by short pages only, and bench/quality.py's
-- template probe went from 7% to 15% review).
-- The index holds the hash alone: a probe reads the heap row (doc_id,
-- seen_at) of each holder it finds, and most clauses of a new text have none.
-- With INCLUDE (seen_at, doc_id), as before revision 0024, an entry cost ~53
-- bytes where it now costs ~31 (1,621 -> 942 bytes a kept document on
-- sina2018, bench/bytes.py), for the same holders in the same order: the
-- index keeps a key's entries in heap order either way.
CREATE TABLE document_clauses (
    clause_hash bigint NOT NULL,
    doc_id      bigint NOT NULL,
    seen_at     timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_clauses_hash_idx ON document_clauses (clause_hash);
CREATE INDEX document_clauses_doc_id_idx ON document_clauses USING brin (doc_id) WITH (pages_per_range = 8);
COMMENT ON TABLE document_clauses IS
    'Clause hashes that find stored documents (the containment layer''s lookup; dedup_clause_rows says which of a document''s clauses have a row; where they are a sample, documents.clauses holds them all); partitioned by ISO week';

-- Does a text of p_clause_count clauses have a row for each of them (under
-- 16; 32 before revision 0039), not a sample?
CREATE FUNCTION dedup_clause_rows_whole(p_clause_count integer)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_clause_count < 16
$$;

-- The clauses of a text (distinct) that get a row in document_clauses: all of
-- them under 16 (dedup_clause_rows_whole), else the sample h & 3 = 0,
-- p_lead's first three (the text's opening clauses, in order) and those of
-- p_held (clauses stored texts hold: dedup_ingest's probe found them).
CREATE FUNCTION dedup_clause_rows(p_clauses bigint[], p_lead bigint[], p_held bigint[] DEFAULT '{}')
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN dedup_clause_rows_whole(cardinality(p_clauses)) THEN p_clauses
                ELSE ARRAY(SELECT h FROM unnest(p_clauses) h
                            WHERE h & 3 = 0 OR h = ANY (p_lead[1:3]) OR h = ANY (p_held)) END
$$;

-- What documents.clauses holds for a text of these clauses: all of them when
-- its rows are a sample, else NULL (its rows are all of them).
CREATE FUNCTION dedup_clause_array(p_clauses bigint[])
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN NOT dedup_clause_rows_whole(cardinality(p_clauses)) THEN p_clauses END
$$;

-- A stored text's clauses: its array (documents.clauses) when its rows are a
-- sample, else its rows, ascending. PL/pgSQL: a Citus coordinator plans no
-- distributed query inside a SQL function that has parameters; sql/citus/
-- had this form until revision 0058.
CREATE FUNCTION dedup_document_clauses(p_doc_id bigint, p_seen_at timestamptz, p_clauses bigint[])
RETURNS bigint[]
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_clauses IS NOT NULL THEN
        RETURN p_clauses;
    END IF;
    RETURN ARRAY(SELECT c.clause_hash FROM document_clauses c
                  WHERE c.doc_id = p_doc_id AND c.seen_at = p_seen_at ORDER BY 1);
END $$;

-- How many of the (distinct) clauses p_a are among p_b: the clauses two texts
-- share, counted on their arrays. (A hashed INTERSECT: ~23 us for two
-- arrays of ~40, where h = ANY (p_b) for each h of p_a took ~28-44.)
CREATE FUNCTION dedup_shared_clauses(p_a bigint[], p_b bigint[])
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT cardinality(ARRAY(SELECT unnest(p_a) INTERSECT SELECT unnest(p_b)))
$$;

-- How many of an incoming text's clauses that are not boilerplate (p_useful)
-- a stored text holds, the stored text one that dedup_ingest's clause probe
-- could find (in the item's window), without reading its rows: counted on its
-- array (p_clauses, a long text's, whose rows are a sample), else the rows the
-- probe found of it (p_found_rows at its p_doc_id in p_found_docs; none: 0).
-- The probe reads every holder of a clause that is not boilerplate, so those
-- are all its rows among p_useful. Its rows read by doc_id instead
-- (dedup_document_clauses) cost a scan of a BRIN index that grows with the
-- week partition: 0.6 ms at 100k documents, ~3 ms at 1M (BENCHMARKS.md), and
-- far more over the ranges a vacuum had not summarized yet (~21 ms at 300k
-- before revision 0044: dedup_summarize_lookups).
CREATE FUNCTION dedup_found_shared(p_useful bigint[], p_clauses bigint[], p_found_docs bigint[],
                                   p_found_rows integer[], p_doc_id bigint)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_clauses IS NOT NULL THEN dedup_shared_clauses(p_useful, p_clauses)
                ELSE coalesce(p_found_rows[array_position(p_found_docs, p_doc_id)], 0) END
$$;

-- The stored texts holding each of an incoming text's clauses (p_clauses) in
-- its window (p_lo .. p_hi): one probe of document_clauses_hash_idx a clause,
-- at most p_limit holders a clause (dedup_ingest reads a clause held by that
-- many as boilerplate), and a clause no stored text holds once, with NULLs.
-- PostgreSQL inlines it into dedup_ingest's statement. (sql/citus/ has its
-- Citus form.)
CREATE FUNCTION dedup_clause_holders(p_clauses bigint[], p_lo timestamptz, p_hi timestamptz,
                                     p_limit integer)
RETURNS TABLE (clause_hash bigint, doc_id bigint, seen_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT h, x.doc_id, x.seen_at
      FROM unnest(p_clauses) h
      LEFT JOIN LATERAL (SELECT dc.doc_id, dc.seen_at FROM document_clauses dc
                          WHERE dc.clause_hash = h AND dc.seen_at BETWEEN p_lo AND p_hi
                          LIMIT p_limit) x ON true
$$;

-- The containment layer's candidates (the stored texts p_docs / p_seen that
-- its clause probe found, p_rows of their rows each) with what the layer's
-- rules read of their documents rows: external id, digest, clause count, and
-- the clauses each shares with the incoming text's p_useful (counted on a
-- long text's array, else the rows the probe found of it). Each row is read
-- by its key (a subquery a candidate, LIMIT 1: not flattened into a join): as
-- a join, a day partition not yet analyzed (a new day's, before autovacuum's
-- first ANALYZE) was planned as holding no rows, and every check read all of
-- it (a seq scan of 3,917 rows: 1.5 ms against 0.07; revision 0050).
-- PostgreSQL inlines it into dedup_ingest's statement. (sql/citus/ has its
-- Citus form.)
CREATE FUNCTION dedup_containment_candidates(p_docs bigint[], p_seen timestamptz[], p_rows integer[],
                                             p_useful bigint[], p_lo timestamptz, p_hi timestamptz)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, external_id text, content_sha1 bytea,
               clause_count integer, shared integer)
LANGUAGE sql STABLE AS $$
    SELECT c.doc_id, c.seen_at, d.external_id, d.content_sha1, d.clause_count,
           CASE WHEN d.clauses IS NULL THEN c.n_rows ELSE dedup_shared_clauses(p_useful, d.clauses) END
      FROM unnest(p_docs, p_seen, p_rows) c(doc_id, seen_at, n_rows)
     CROSS JOIN LATERAL (
           SELECT d.external_id, d.content_sha1, d.clause_count, d.clauses
             FROM documents d
            WHERE d.doc_id = c.doc_id AND d.seen_at = c.seen_at
              AND d.seen_at BETWEEN p_lo AND p_hi  -- only the window's partitions
            LIMIT 1) d
$$;

-- SimHash: one row per band of every stored document (band_key = band number
-- << 16 | the band's 16 bits; tail = the next two bands' 32 bits,
-- dedup_simhash_tail). The index holds band_key, tail and seen_at: a probe
-- reads the entries of its band keys in the window's one or two week
-- partitions and keeps, from the index alone, those whose band and tail are
-- within distance (48 of the 64 bits, a lower bound of the distance); it
-- reads the rows of those few for the whole simhash. Until revision 0067 the
-- index carried simhash, seen_at and doc_id (44 bytes an entry against 28):
-- the same entries, and a row read for none of them. One cost came with the
-- key: an index-only scan checks the visibility map page of each entry's row,
-- and entries of one band_key are now in tail order, not row order, so the
-- scan switches map pages at nearly every entry once a week partition's rows
-- span several (~255 MB of heap each): 521 buffer hits a probe at 10M
-- documents against 59 (BENCHMARKS.md, revision 0067); at 1M documents a
-- week, one or two. It replaced four band
-- indexes on documents, whose probe was four index scans per day partition
-- (32 at 8 days): at 1M documents over 8 days ingest ran at 58% of its first
-- 100k's speed with nothing read from outside shared_buffers
-- (bench/growth.py, BENCHMARKS.md).
CREATE TABLE document_simhash_bands (
    band_key integer NOT NULL,
    simhash  bigint NOT NULL,
    doc_id   bigint NOT NULL,
    seen_at  timestamptz NOT NULL,
    tail     integer NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_simhash_bands_key_idx ON document_simhash_bands (band_key, tail) INCLUDE (seen_at);
CREATE INDEX document_simhash_bands_doc_id_idx ON document_simhash_bands USING brin (doc_id);
COMMENT ON TABLE document_simhash_bands IS
    'SimHash bands of stored documents (4 per document: band_key = band number << 16 | its 16 bits, see dedup_simhash_band_keys; tail = the next two bands, see dedup_simhash_tail): the SimHash layer''s candidate lookup; partitioned by ISO week';
COMMENT ON COLUMN document_simhash_bands.tail IS
    'the 32 bits of simhash after the band''s (bands b+1 and b+2, mod 4: dedup_simhash_tail(simhash, b)) as a signed integer: a probe tells from the index alone which entries are within distance';

-- The 12 band keys of a MinHash signature (document_minhash_bands.signature):
-- band b is values 3b+1 .. 3b+3, the signature's bits 48b to 48b+47, read as
-- a number, with b above them (bits 48-51). The bands cover the first 36
-- values (the similarity is estimated on all 128); two texts share a key
-- exactly when they share a band's three values. 12 bands of 3 (revision
-- 0069; 16 from 0021, 32 of 4 before) cost three quarters of 16's GIN
-- entries and find fewer pairs near the thresholds (bench/candidate_recall.py);
-- the other layers find most of those, and the verdicts that moved are in
-- BENCHMARKS.md (revision 0069). The bands are 16's first 12, so a GIN index
-- built under 16 finds the same texts for 12's keys. The GIN
-- index of document_minhash_bands is over this expression, not a stored
-- column (revision 0049): the column cost 152 bytes a document; a hash of the
-- values' text (revisions 0021 to 0048) cost ~28 us a signature where this
-- expression, inlined, costs ~1 (7,673 signatures in one query: 212 ms
-- against 7). One expression, no subquery: PostgreSQL
-- inlines it in the index and in a query alike, so a query's
-- dedup_minhash_bands(b.signature) && keys uses the index. A signature of
-- fewer than 36 values has none (NULL). The lock stripes
-- (dedup_lock_stripes_of) follow the same layout.
CREATE FUNCTION dedup_minhash_bands(p_signature bit varying)
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

-- MinHash: a signature of 128 minimums over the text's character 5-grams
-- (computed in Python, dedup_pg/minhash.py), cut into 12 bands of 3 values
-- (dedup_minhash_bands). A document's signature is one row here, its band
-- keys under a GIN index (over the expression): two texts sharing a band are
-- compared on the whole signature (estimated Jaccard). It finds what changes a
-- word in most clauses: synonym rewrites, reworded leads.
-- A signature's values are 16 bits each: equal minimums are what the estimate
-- counts, and two unequal ones agree on 16 bits once in 65,536. 32-bit values
-- (before revision 0026) cost a document 525 bytes where these cost 280; the
-- 11,377 verdicts of bench/bytes.py are the same either way. They are stored
-- as 2,048 bits (revision 0040; dedup_minhash_values gives them as smallint[]).
-- One row a document, not one a band: a row a band cost its 52 bytes of heap
-- and ~52 of btree for each of its then 32 values (3,298 bytes a document on
-- sina2018, bench/bytes.py); an array of them and its GIN entries ~1,650. The
-- signature is on this row, not on the document's (until revision 0041 it
-- was documents.minhash): the probe's bitmap scan reads the rows of the texts
-- sharing a band anyway, so it ranks them by similarity there, and only the
-- best one's document is read (a candidate's documents row cost ~7 us, 18
-- candidates a check that has any at 1M documents, BENCHMARKS.md). fastupdate
-- off: a pending list would be scanned by every probe.
CREATE TABLE document_minhash_bands (
    doc_id    bigint NOT NULL,
    seen_at   timestamptz NOT NULL,
    signature bit varying NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_minhash_bands_keys_idx ON document_minhash_bands
    USING gin (dedup_minhash_bands(signature)) WITH (fastupdate = off);
-- A text's row by doc_id (dedup_ingest's comparison of another layer's review
-- candidate, revision 0070; the removal of a document) reads one BRIN range:
-- 8 pages, ~200 rows, where the default 128 read ~3,300 rows (0.07-0.31 ms
-- on an 11,000-document store; revision 0071).
CREATE INDEX document_minhash_bands_doc_id_idx ON document_minhash_bands USING brin (doc_id) WITH (pages_per_range = 8);
COMMENT ON TABLE document_minhash_bands IS
    'MinHash signatures of stored documents (one row a document with a signature), their 12 band keys (dedup_minhash_bands(signature)) under a GIN index: the MinHash layer''s candidate lookup and comparison; partitioned by ISO week';
COMMENT ON COLUMN document_minhash_bands.signature IS
    'MinHash signature over character 5-grams of the normalized text as 2,048 bits: 128 values of 16 bits (the low bits of each minimum, dedup_pg/minhash.py), value i in bits 16i to 16i+15; dedup_minhash_values(signature) gives them as smallint[]';

-- Summarize the new block ranges of the lookup tables' BRIN doc_id indexes in
-- the week partitions that hold the times p_seen; returns how many. A BRIN
-- scan reads every page of the ranges not yet summarized, and autovacuum
-- summarizes a partition only when it vacuums it, after its rows grew by a
-- fifth: at 300k documents a stored text's clause rows read by doc_id
-- (dedup_document_clauses: the lead rule, the fact check) took ~21 ms, 3,199
-- pages of the week, and 0.33 ms once summarized (BENCHMARKS.md).
-- dedup_ingest calls it with its batch's times, after storing them. Rows are
-- appended, so the ranges left to summarize are the last ones: it walks back
-- from the range that holds the last page (summarized while it still fills:
-- inserts then keep its summary current) and stops at the first range
-- already summarized. Until revision 0045 it called brin_summarize_new_values,
-- which reads the entry of every range of the partition, and found the
-- indexes by a join of the partition names to all of pg_index, planned anew
-- at every call: 0.42 ms a call at 300k documents with nothing to summarize,
-- and growing with the week; a batch of one text paid it whole. Now 0.08 ms.
-- A range left behind (its summarizing skipped, see below) is the next
-- vacuum's. An index another session is summarizing, or a vacuum holds, is
-- left to it (a lock wait of 10 ms at most); one this role does not own, to
-- autovacuum (only the owner may summarize: "must be owner of index",
-- PostgreSQL 18 with MAINTAIN granted too).
CREATE FUNCTION dedup_summarize_lookups(p_seen timestamptz[])
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_table regclass;
    r record;
    v_block bigint;
    v_got integer;
    v_step integer;
    v_n integer := 0;
    v_timeout text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', '10ms', true);
    -- the week partitions by name, then each one's BRIN index through the
    -- index on pg_index.indrelid
    FOR v_table IN
        SELECT DISTINCT to_regclass(format('%s_w%s', t, to_char(w.monday, 'YYYYMMDD')))
          FROM (SELECT DISTINCT date_trunc('week', s AT TIME ZONE 'UTC') AS monday FROM unnest(p_seen) s) w
         CROSS JOIN unnest(ARRAY['document_clauses', 'document_minhash_bands', 'document_simhash_bands']) t
    LOOP
        FOR r IN
            SELECT i.indexrelid::regclass AS index_name, c.reloptions
              FROM pg_index i
              JOIN pg_class c ON c.oid = i.indexrelid
             WHERE i.indrelid = v_table
               AND c.relam = (SELECT a.oid FROM pg_am a WHERE a.amname = 'brin')
        LOOP
            -- from the range of the last page back to one already summarized
            v_block := pg_relation_size(v_table) / current_setting('block_size')::integer - 1;
            v_step := coalesce(substring(array_to_string(r.reloptions, ',')
                                         FROM 'pages_per_range=(\d+)')::integer, 128);
            BEGIN
                WHILE v_block >= 0 LOOP
                    v_got := brin_summarize_range(r.index_name, v_block);
                    EXIT WHEN v_got = 0;
                    v_n := v_n + v_got;
                    v_block := v_block - v_step;
                END LOOP;
            EXCEPTION WHEN lock_not_available OR insufficient_privilege THEN
                NULL;
            END;
        END LOOP;
    END LOOP;
    PERFORM set_config('lock_timeout', v_timeout, true);
    RETURN v_n;
END $$;

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

-- The four band keys of a signed 64-bit SimHash: (band number << 16) | the
-- band's 16 bits, band b = bits 16b .. 16b+15; the keys of its rows in
-- document_simhash_bands and what the probe looks up at radius 0. One SELECT
-- without FROM: PostgreSQL inlines it where it is called, at no cost
-- (dedup_simhash_band_keys, which also takes a radius, costs ~30 us a call).
CREATE FUNCTION dedup_simhash_bands(p_simhash bigint)
RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY[(p_simhash & 65535)::integer,
                 65536 | ((p_simhash >> 16) & 65535)::integer,
                 131072 | ((p_simhash >> 32) & 65535)::integer,
                 196608 | ((p_simhash >> 48) & 65535)::integer]
$$;

-- The tail of band p_band (0-3) of a signed 64-bit SimHash: the next two
-- bands' bits as one signed 32-bit integer, band p_band + 1 (mod 4) in the
-- low 16 bits and band p_band + 2 (mod 4) in the high 16
-- (document_simhash_bands.tail). A band key and its tail are 48 of the 64
-- bits: their distance to another's is a lower bound of the two simhashes'
-- distance. One SELECT without FROM, inlined where it is called. No array
-- (one element of an array of the four, in an UPDATE of every shard, brought
-- a Citus 13 coordinator down).
CREATE FUNCTION dedup_simhash_tail(p_simhash bigint, p_band integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (((p_simhash >> (16 * ((p_band + 1) % 4))) & 65535)
            + (((p_simhash >> (16 * ((p_band + 2) % 4))) & 65535) << 16)
            - (((p_simhash >> (16 * ((p_band + 2) % 4) + 15)) & 1) << 32))::integer
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

-- SimHash duplicate and review distances by text length, one row a step of
-- simhash_distance_by_length (from min_length characters on) and one for texts
-- shorter than every step (min_length NULL, duplicate distance 0): the
-- duplicate distance is the step's, capped by simhash_distance; the review
-- distance that plus simhash_review_margin, capped by simhash_review_distance
-- (and 7, the most the band layout can find). A set-returning function of one
-- SELECT: PostgreSQL inlines it into a query that passes it a value or a
-- parameter (checked in dedup_ingest's plan), not a subquery. dedup_ingest reads
-- the steps once a source (until revision 0048 it called
-- dedup_simhash_distances for each text of a one-text batch: ~0.1 ms).
CREATE FUNCTION dedup_simhash_distance_steps(p_settings jsonb)
RETURNS TABLE (min_length integer, duplicate_distance integer, review_distance integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT s.min_length, d.dup,
           greatest(d.dup, least(7, (p_settings ->> 'simhash_review_distance')::integer,
                                 d.dup + coalesce((p_settings ->> 'simhash_review_margin')::integer, 3)))
      FROM (SELECT NULL::integer AS min_length, 0 AS dist
            UNION ALL
            SELECT (r ->> 0)::integer, (r ->> 1)::integer
              FROM jsonb_array_elements(p_settings -> 'simhash_distance_by_length') r
             WHERE r ->> 0 IS NOT NULL) s
     CROSS JOIN LATERAL (SELECT least(coalesce(s.dist, 0), (p_settings ->> 'simhash_distance')::integer) AS dup) d
$$;

COMMENT ON FUNCTION dedup_simhash_distance_steps(jsonb) IS
    'SimHash duplicate and review distances for each length step of the given settings, and for texts shorter than every step (min_length NULL): SELECT * FROM dedup_simhash_distance_steps((SELECT jsonb_object_agg(name, value) FROM dedup_settings))';

-- The distances for one text length: the step of the longest min_length not
-- above it.
CREATE FUNCTION dedup_simhash_distances(p_length integer, p_settings jsonb,
                                                   OUT duplicate_distance integer, OUT review_distance integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT x.duplicate_distance, x.review_distance
      FROM dedup_simhash_distance_steps(p_settings) x
     WHERE x.min_length IS NULL OR x.min_length <= p_length
     ORDER BY x.min_length DESC NULLS LAST
     LIMIT 1
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

-- A signature as document_minhash_bands.signature stores it: its 16-bit values one after
-- the other, value i in bits 16i to 16i+15 (2,048 bits for 128 values), and
-- back. dedup_pg sends an item's bits ready (dedup_item.signature); these
-- serve the items made in SQL (restored candidates, the rebuild).
CREATE FUNCTION dedup_minhash_bits(p_minhash smallint[])
RETURNS bit varying
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_minhash IS NOT NULL
                THEN ('x' || coalesce(string_agg(lpad(to_hex(v::integer & 65535), 4, '0'), '' ORDER BY i), ''))::bit varying END
      FROM unnest(p_minhash) WITH ORDINALITY u(v, i)
$$;

CREATE FUNCTION dedup_minhash_values(p_bits bit varying)
RETURNS smallint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_bits IS NOT NULL
                THEN ARRAY(SELECT ((substring(p_bits FROM 16 * i + 1 FOR 16)::bit(16)::integer # 32768) - 32768)::smallint
                             FROM generate_series(0, length(p_bits) / 16 - 1) i ORDER BY i) END
$$;

-- Estimated Jaccard of two signatures (document_minhash_bands.signature): the share of
-- equal values. Two unequal minimums agree on the 16 bits kept with
-- probability 2^-16: the estimate is high by (1 - J) / 65536 on average, 1/128
-- for ~1 pair in 500. The XOR of two signatures is zero on every value they
-- share; four ORs of shifted copies fold each value's 16 bits onto its first
-- bit, and the values that differ are the first bits set. 2.5-6 us a pair, where
-- the values as smallint[] arrays compared by unnest took 17-29 (revision 0040;
-- the MinHash layer compares every stored text sharing a band with the
-- incoming one: 18 a check that has any at 1M documents, BENCHMARKS.md). A
-- signature of another length is compared value by value.
CREATE FUNCTION dedup_minhash_similarity(p_a bit varying, p_b bit varying)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    d bit varying;
BEGIN
    IF length(p_a) IS DISTINCT FROM 2048 OR length(p_b) IS DISTINCT FROM 2048 THEN
        RETURN (SELECT count(*) FILTER (WHERE x = y)::double precision
                       / greatest(cardinality(dedup_minhash_values(p_a)), 1)
                  FROM unnest(dedup_minhash_values(p_a), dedup_minhash_values(p_b)) u(x, y));
    END IF;
    d := p_a # p_b;
    d := d | (d << 1);
    d := d | (d << 2);
    d := d | (d << 4);
    d := d | (d << 8);
    -- the first bit of each value: X'8000' 128 times (folded to a constant once a session)
    RETURN (128 - bit_count(d & ('x' || repeat('8000', 128))::bit varying))::double precision / 128;
END $$;

-- Facts: numbers, proper names and titles of a text (dedup_pg/facts.py). A
-- near-duplicate match (SimHash, containment, MinHash) where each text holds
-- facts the other lacks is two stories on one template: review, not duplicate.
-- A fact is stored and compared as its key (integer: the first 4 bytes of its
-- SHA-256, dedup_pg.facts.fact_key): the rules only ask which facts two texts
-- share, and a key costs 4 bytes where a fact in a text[] cost ~14 (revision
-- 0027: documents 4,002 -> 3,823 bytes a kept document on sina2018, the same
-- verdicts). Two of a pair's ~40 facts share a key once in ~5 million pairs.
-- The review page shows the facts themselves, read again from the two texts.
--
-- Are these two texts different stories? p_a is the incoming text's facts,
-- p_b the matched one's. Yes when each holds facts the other lacks (at least
-- p_share of its own, and at least one): two stories on one template. Also
-- when the incoming text adds many facts (at least 10, and p_added_share of
-- its own): a new text that quotes or appends an old one. A copy that adds a
-- banner or an ad, or drops paragraphs, differs on one side by a few facts.
-- Null share or facts: no; null p_added_share: the second rule is off.
-- (dedup_facts_verdict below applies it; the review page asks that)
CREATE FUNCTION dedup_facts_disagree(p_a integer[], p_b integer[], p_share double precision,
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


-- How alike two texts open: the Jaccard of the character bigrams of their
-- first 100 characters (whitespace removed, digit runs read as one '#'). A
-- templated item keeps its opening frame and swaps a date, a figure or a name
-- ("新浪娱乐讯 北京时间11月1日消息，A加盟..." / "...11月2日消息，B加盟..."): alike.
-- A lead written in other words over a copied body: unlike (issue 21's
-- generated lead rewrites: 0.28 or less for 9 in 10).
CREATE FUNCTION dedup_opening_similarity(p_a text, p_b text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH o AS (
        SELECT regexp_replace(left(regexp_replace(coalesce(p_a, ''), '\s+', '', 'g'), 100), '[0-9]+', '#', 'g') AS a,
               regexp_replace(left(regexp_replace(coalesce(p_b, ''), '\s+', '', 'g'), 100), '[0-9]+', '#', 'g') AS b
    ), ga AS (
        SELECT DISTINCT substr(o.a, i, 2) AS g FROM o, generate_series(1, length(o.a) - 1) i
    ), gb AS (
        SELECT DISTINCT substr(o.b, i, 2) AS g FROM o, generate_series(1, length(o.b) - 1) i
    )
    SELECT coalesce((SELECT count(*) FROM ga JOIN gb USING (g))::double precision
                    / nullif((SELECT count(*) FROM (SELECT g FROM ga UNION SELECT g FROM gb) u), 0), 0)
$$;

-- A body as the fact check's text rules read it: NFKC-folded (full-width
-- digits are digits), without the invisible characters normalization drops
-- (dedup_pg/normalize.py, _INVISIBLE: soft hyphen, zero-width space and
-- joiners, direction marks, word joiner, BOM). A zero-width space a crawled
-- page carries inside "2018" would else make it "2" and "018".
CREATE FUNCTION dedup_fact_text(p_text text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT regexp_replace(normalize(coalesce(p_text, ''), NFKC),
                          '[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]', '', 'g')
$$;

-- The distinct numbers of a text (NFKC-folded, so full-width digits count;
-- leading zeros dropped), one-digit numbers included: the facts leave those
-- out, but "11月1日" against "11月2日" is the date a templated item differs in.
-- A number that ends the text is left out: a truncated copy may have cut it
-- ("...计划招录34" of "...计划招录3441人").
-- A number followed by 月, 日 or 号 (a month, a day) is also read with that
-- unit ("11月", "1日"): a daily bulletin dated the 24th whose figures did not change holds
-- no bare number the 18th's lacks when "截至3月18日24时" has a 24 too, but
-- "24日" it does (revision 0030: on the validation set, templated pairs merged
-- 31 -> 17 of 846, same-story pairs found 339 of 559 before and after; on the
-- tuning set no verdict moved; BENCHMARKS.md).
-- dedup_folded_numbers reads a text already folded by dedup_fact_text (the
-- fact check folds each body once for every rule that reads it: folding is
-- most of the cost, ~180 us of ~250 for a 1,300-character body).
CREATE FUNCTION dedup_folded_numbers(p_folded text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH t AS (SELECT regexp_replace(p_folded, '[0-9.]+\s*$', '') AS t)
    SELECT coalesce(array_agg(DISTINCT n), '{}') FROM (
        SELECT CASE WHEN m[1] LIKE '%.%' THEN m[1]
                    ELSE coalesce(nullif(ltrim(m[1], '0'), ''), '0') END AS n
          FROM t, regexp_matches(t.t, '([0-9]+(?:\.[0-9]+)?)', 'g') m
        UNION ALL
        SELECT coalesce(nullif(ltrim(m[1], '0'), ''), '0') || m[2]
          FROM t, regexp_matches(t.t, '([0-9]+)\s*(月|日|号)', 'g') m) x
$$;

CREATE FUNCTION dedup_text_numbers(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT dedup_folded_numbers(dedup_fact_text(p_text))
$$;

-- The sums of money a text names: "¥N", "N元", "N万元", "N亿元", "N万亿元"
-- (read as the fact check reads texts, dedup_fact_text: NFKC, so "￥" is
-- "¥" and full-width digits are digits; spaces allowed before the unit and
-- "元", none inside N, so "T900 2250元" is 2250; thousands separators
-- dropped, "1,280元" is "1280"; the unit kept, "3750亿"). N
-- without a unit has two or more digits before any decimal point: "1元" or
-- "5元" is too small a price to tell two items apart. "元旦" (New Year's
-- Day) is not one.
-- Two copies of one story name the same sums; two price notes for one
-- product on one spec sheet, or two items of one template, name others
-- (revision 0033, facts_money_amounts). dedup_folded_amounts reads a text
-- already folded by dedup_fact_text, as dedup_folded_numbers does.
CREATE FUNCTION dedup_folded_amounts(p_folded text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH m AS (
        SELECT replace(coalesce(m[1], m[2]), ',', '') AS n, coalesce(m[3], '') AS unit
          FROM regexp_matches(p_folded,
                              '¥\s*([0-9][0-9,]*(?:\.[0-9]+)?)|(?<![0-9.,])([0-9][0-9,]*(?:\.[0-9]+)?)\s*(万亿|万|亿)?\s*元(?!旦)',
                              'g') m
    )
    SELECT coalesce(array_agg(DISTINCT m.n || m.unit), '{}')
      FROM m WHERE m.unit <> '' OR length(split_part(m.n, '.', 1)) >= 2
$$;

CREATE FUNCTION dedup_text_amounts(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT dedup_folded_amounts(dedup_fact_text(p_text))
$$;

-- A body as dedup_body_within (below) compares it. Folding costs ~0.3 ms a body
-- of a few thousand characters: dedup_ingest folds the incoming body once a
-- text, not once a candidate (revision 0042: at 1M documents, real articles
-- meeting ~11 candidates a check spent 6.5 ms a check folding).
CREATE FUNCTION dedup_folded_body(p_text text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT regexp_replace(dedup_fact_text(p_text), '\s+', '', 'g')
$$;

-- dedup_body_within on two folded bodies (dedup_folded_body).
CREATE FUNCTION dedup_folded_within(p_a text, p_b text, p_min integer)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(CASE WHEN length(p_a) <= length(p_b)
                         THEN length(p_a) >= p_min AND strpos(p_b, p_a) > 0
                         ELSE length(p_b) >= p_min AND strpos(p_a, p_b) > 0 END, false)
$$;

-- Can the body p_body lie whole inside the text whose folded body
-- (dedup_folded_body) is p_folded? Read from its opening alone: folded, its
-- first 16 characters must occur in p_folded. Folding p_body's first 96
-- characters gives the folded body's first 16 when it gives 40 or more:
-- NFKC acts on a character with the marks that follow it, and the removals
-- on a character alone, so only the end of a folded opening differs from the
-- whole body's (by one character's expansion, 18 at most, or its marks).
-- With fewer than 40, true: the whole body decides. ~5 us, where folding a
-- body of a few thousand characters costs ~0.3 ms.
CREATE FUNCTION dedup_head_within(p_folded text, p_body text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN length(dedup_folded_body(left(p_body, 96))) >= 40
                THEN strpos(p_folded, left(dedup_folded_body(left(p_body, 96)), 16)) > 0
                ELSE true END
$$;

-- Whole-text containment of a pair (dedup_ingest): does the shorter of the
-- incoming body (p_folded, folded) and a stored one (p_body) lie whole inside
-- the other (dedup_folded_within)? p_stored_shorter: only the stored body can
-- be the shorter (the incoming text has more than three clauses): a stored
-- body whose opening is not in the incoming one is then not folded whole
-- (dedup_head_within). Revision 0046: at 1M documents (bench/growth.py), real
-- articles whose clauses many stored texts hold had ~70 such candidates a
-- check, and folding their bodies cost ~7 ms a check.
CREATE FUNCTION dedup_whole_within(p_folded text, p_body text, p_min integer,
                                   p_stored_shorter boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_stored_shorter AND NOT dedup_head_within(p_folded, p_body) THEN false
                ELSE dedup_folded_within(p_folded, dedup_folded_body(p_body), p_min) END
$$;

-- Does the shorter of two bodies lie whole inside the other? Both read as
-- the fact check reads them (dedup_fact_text: NFKC, invisible characters
-- dropped), whitespace removed (dedup_folded_body); the shorter must have at
-- least p_min characters. Containment counts shared clauses and needs two: a
-- short item of one or two clauses (a bulletin line, a wire flash) shares one
-- with its repost under a hashtag line, or with the first sentence a copy kept
-- of it (revision 0031, containment_whole_text_chars). Null p_min: never.
CREATE FUNCTION dedup_body_within(p_a text, p_b text, p_min integer)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT dedup_folded_within(dedup_folded_body(p_a), dedup_folded_body(p_b), p_min)
$$;

-- A copied body under a rewritten lead: the incoming text p_a keeps at least
-- facts_copied_body_share of its clauses in common with the matched one
-- (p_shared of p_a_n, boilerplate left out; 3 or more), the matched text p_b
-- at least facts_copied_body_matched_share of its own (p_b_n; null: the same
-- share as the incoming text's), and their openings are unlike
-- (dedup_opening_similarity below facts_rewritten_lead_similarity). A copy
-- that keeps most of the body whole is a copy whatever its first lines add:
-- the fact check lets it through, and containment's review band takes it as
-- a duplicate. The matched text's share is the lower one because the lead
-- the copy dropped is a large part of a short text (revision 0020: of
-- bench/quality.py's lead rewrites sent to review, 11 of 23 kept 60% of the
-- copy's clauses but only 33-57% of the original's). Null settings: never.
CREATE FUNCTION dedup_copied_body(p_a_body text, p_b_body text, p_shared integer,
                                  p_a_n integer, p_b_n integer, p_settings jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(p_shared >= 3
                    AND p_shared >= (p_settings ->> 'facts_copied_body_share')::double precision * p_a_n
                    AND p_shared >= coalesce((p_settings ->> 'facts_copied_body_matched_share')::double precision,
                                             (p_settings ->> 'facts_copied_body_share')::double precision) * p_b_n
                    AND dedup_opening_similarity(p_a_body, p_b_body)
                        < (p_settings ->> 'facts_rewritten_lead_similarity')::double precision, false)
$$;

-- How alike two texts are once their numbers are masked: the Jaccard of
-- their clause sets (NFKC, whitespace removed, digit runs read as one '#',
-- cut at 。！？；，：and line ends, clauses of 8 characters or more). Two
-- templated pages that differ only in their figures (another day's price
-- over one spec sheet) score near 1; two outlets' versions of one story
-- that also differ in a few figures score lower, as their sentences differ
-- too (the tuning set's long same-story pairs whose numbers differ on both
-- sides: 0.35-0.77, and 0.86 for bench/quality.py's recrawl of a story whose
-- later version dropped a figure, ad script numbers on the other side; its
-- long templates: 0.82 and 1.0).
-- (dedup_folded_masked_similarity reads texts already folded by
-- dedup_fact_text, as dedup_folded_numbers does.)
CREATE FUNCTION dedup_folded_masked_similarity(p_fa text, p_fb text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH m AS (
        SELECT regexp_replace(regexp_replace(p_fa, '[ \t\r\f\v]+', '', 'g'),
                              '[0-9]+(\.[0-9]+)?', '#', 'g') AS a,
               regexp_replace(regexp_replace(p_fb, '[ \t\r\f\v]+', '', 'g'),
                              '[0-9]+(\.[0-9]+)?', '#', 'g') AS b
    ), ca AS (
        SELECT DISTINCT c FROM m, regexp_split_to_table(m.a, '[。!?;,:\n]') c WHERE length(c) >= 8
    ), cb AS (
        SELECT DISTINCT c FROM m, regexp_split_to_table(m.b, '[。!?;,:\n]') c WHERE length(c) >= 8
    )
    SELECT coalesce((SELECT count(*) FROM ca JOIN cb USING (c))::double precision
                    / nullif((SELECT count(*) FROM (SELECT c FROM ca UNION SELECT c FROM cb) u), 0), 0)
$$;

CREATE FUNCTION dedup_masked_similarity(p_a text, p_b text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT dedup_folded_masked_similarity(dedup_fact_text(p_a), dedup_fact_text(p_b))
$$;

-- The fact check of a near-duplicate match (dedup_ingest's, and the
-- rebuild's): 'differ' when the texts are two stories, 'added' when the
-- incoming text p_a adds many facts (dedup_facts_disagree's second rule;
-- p_added null: not checked), else null. Two stories:
-- - each text holds facts the other lacks (dedup_facts_disagree's first
--   rule), unless the match is a copied body under a rewritten lead
--   (dedup_copied_body);
-- - or a templated item: each text holds a number the other lacks
--   (dedup_text_numbers), the copied-body exception aside, and either the
--   shorter body has at most facts_template_max_chars characters (another
--   day's figure, another date's poster, another actor's casting) or, longer,
--   the two are alike once their numbers are masked (dedup_masked_similarity
--   at least facts_template_masked_similarity: another day's price over one
--   spec sheet, whose many shared facts keep the first rule's share low);
-- - or both texts name sums of money and none is in both (dedup_text_amounts;
--   facts_money_amounts): another price for one product whose note was
--   reworded around it, which the masked similarity misses, or another
--   amount over one template. A copied body is no exception here: a copy
--   keeps the sums of the body it copied, so sums that all differ are in
--   what each text says of its own (two price notes over one spec sheet,
--   each opening with its price, read as a rewritten lead otherwise).
-- Null settings turn each rule off (facts_money_amounts: false or null).
CREATE FUNCTION dedup_facts_verdict(p_a integer[], p_b integer[], p_share double precision,
                                    p_added double precision, p_a_body text, p_b_body text,
                                    p_shared integer, p_a_n integer, p_b_n integer, p_settings jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v_max_chars integer := (p_settings ->> 'facts_template_max_chars')::integer;
    v_masked double precision := (p_settings ->> 'facts_template_masked_similarity')::double precision;
    v_both boolean;
    v_template boolean := false;
    v_a text[];
    v_b text[];
    v_fa text;  -- the bodies as the number, masked-similarity and money
    v_fb text;  -- rules read them (dedup_fact_text), folded once for all
BEGIN
    IF p_share IS NULL OR p_a IS NULL OR p_b IS NULL THEN
        RETURN NULL;
    END IF;
    v_both := dedup_facts_disagree(p_a, p_b, p_share, NULL);
    IF (v_max_chars IS NOT NULL AND least(length(p_a_body), length(p_b_body)) <= v_max_chars)
       OR v_masked IS NOT NULL THEN
        v_fa := dedup_fact_text(p_a_body);
        v_fb := dedup_fact_text(p_b_body);
        v_a := dedup_folded_numbers(v_fa);
        v_b := dedup_folded_numbers(v_fb);
        v_template := EXISTS (SELECT unnest(v_a) EXCEPT SELECT unnest(v_b))
                      AND EXISTS (SELECT unnest(v_b) EXCEPT SELECT unnest(v_a));
        IF v_template AND NOT coalesce(least(length(p_a_body), length(p_b_body)) <= v_max_chars, false) THEN
            -- longer than the short rule's cap (or that rule off): only when
            -- the texts are the same but for their numbers
            v_template := dedup_folded_masked_similarity(v_fa, v_fb) >= v_masked;
        END IF;
    END IF;
    IF (v_both OR v_template)
       AND NOT dedup_copied_body(p_a_body, p_b_body, p_shared, p_a_n, p_b_n, p_settings) THEN
        RETURN 'differ';
    END IF;
    -- sums of money, none in both: a copied body does not excuse them (it
    -- would have kept the original's sums; the ones that differ are what the
    -- two texts report)
    IF coalesce((p_settings ->> 'facts_money_amounts')::boolean, false) THEN
        IF v_fa IS NULL THEN  -- the number rules off
            v_fa := dedup_fact_text(p_a_body);
            v_fb := dedup_fact_text(p_b_body);
        END IF;
        v_a := dedup_folded_amounts(v_fa);
        v_b := dedup_folded_amounts(v_fb);
        IF cardinality(v_a) > 0 AND cardinality(v_b) > 0 AND NOT (v_a && v_b) THEN
            RETURN 'differ';
        END IF;
    END IF;
    IF p_added IS NOT NULL AND dedup_facts_disagree(p_a, p_b, 2.0, p_added) THEN
        RETURN 'added';  -- a share of 2 never holds: the added rule alone
    END IF;
    RETURN NULL;
END $$;
