-- dedup-pg revision 0008: the MinHash layer and fact verification (applied by
-- migrations/versions/0008_minhash.py).
--
-- MinHash: a signature of 128 minimums over the text's character 5-grams
-- (computed in Python, dedup_pg/minhash.py) is stored with the document and
-- cut into 32 bands of 4 values, kept in document_minhash_bands (day
-- partitions, one b-tree over the band values): two texts sharing a band value
-- are compared on the whole signature (estimated Jaccard). It finds what
-- changes a word in most clauses: synonym rewrites, reworded leads.
--
-- Facts: numbers, proper names and titles of a text (dedup_pg/facts.py). A
-- near-duplicate match (SimHash, containment, MinHash) where each text holds
-- facts the other lacks is two stories on one template: review, not duplicate.
--
-- dedup_ingest, dedup_store_document, dedup_record_candidate,
-- dedup_candidate_item, dedup_document_item, dedup_demote_document,
-- confirm_candidate and dedup_ensure_partitions are redefined here in full;
-- the downgrade re-applies the definitions before this revision.

INSERT INTO dedup_settings (name, value, description) VALUES
 ('minhash_threshold', '0.5',
  'estimated Jaccard similarity of character 5-grams (MinHash) at or above which a text is a duplicate (after fact verification); null = MinHash layer off'),
 ('minhash_review_threshold', '0.4',
  'estimated 5-gram Jaccard at or above which a text is queued for review'),
 ('facts_disagreement_share', '0.15',
  'a near-duplicate match (simhash, containment, minhash) goes to review instead of duplicate when each text holds facts (numbers, proper names) the other lacks, at least this share of its own facts; null = no fact check'),
 ('facts_added_share', '0.3',
  'a near-duplicate match also goes to review when the incoming text adds at least 10 facts the matched one lacks and at least this share of its own: a new text quoting or appending an old one; null = not checked');

-- The SimHash review band (4-6 bits for long texts) asked for a radius-1 band
-- probe: 17 values a band, whose rows grow with the table (131 -> 821 rows a
-- check from 100k to 600k documents, bench/results/growth.md). With the
-- MinHash layer's own review band in place it found nothing more on the
-- labelled Sina data (bench/semantic_quality.py: same recall, same false
-- duplicates, 1.4 vs 1.5% reviews). The review distance becomes a margin over
-- each length's duplicate distance (simhash_review_margin, 3 as before) capped
-- by simhash_review_distance, whose default drops from 6 to 3: one exact probe
-- a band, and short texts keep their 1-3 bit review band. A database whose
-- values were changed keeps its band: the margin is what it had.
INSERT INTO dedup_settings (name, value, description)
SELECT 'simhash_review_margin',
       to_jsonb(greatest(0, (SELECT value::integer FROM dedup_settings WHERE name = 'simhash_review_distance')
                          - (SELECT value::integer FROM dedup_settings WHERE name = 'simhash_distance'))),
       'SimHash review band above a text''s duplicate distance (bits), capped by simhash_review_distance';
SELECT set_config('dedup_pg.reason', 'migration 0008: the MinHash layer replaces the SimHash radius-1 review probe', true);
UPDATE dedup_settings
   SET value = '3',
       description = 'largest SimHash distance queued for review (at most 7); above 3 the probe also reads each band''s one-bit neighbours, whose rows grow with the table'
 WHERE name = 'simhash_review_distance' AND value = '6';
SELECT set_config('dedup_pg.reason', '', true);

-- SimHash duplicate and review distances for a text length: the duplicate
-- distance by length (simhash_distance_by_length, capped by simhash_distance),
-- the review distance that plus simhash_review_margin, capped by
-- simhash_review_distance (and 7, the most the band layout can find).
CREATE OR REPLACE FUNCTION dedup_simhash_distances(p_length integer, p_settings jsonb,
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

ALTER TYPE dedup_item ADD ATTRIBUTE minhash integer[], ADD ATTRIBUTE facts text[];

ALTER TABLE documents ADD COLUMN minhash integer[], ADD COLUMN facts text[];
COMMENT ON COLUMN documents.minhash IS
    'MinHash signature (128 x 32-bit) over character 5-grams of the normalized text; null for texts too short';
COMMENT ON COLUMN documents.facts IS
    'numbers, proper names and titles of the text, for verifying near-duplicate matches';
ALTER TABLE duplicate_candidates ADD COLUMN minhash integer[], ADD COLUMN facts text[];

-- The MinHash bands of every stored document: one row per band value.
CREATE TABLE document_minhash_bands (
    band_key bigint NOT NULL,
    doc_id   bigint NOT NULL,
    seen_at  timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_minhash_bands_key_idx ON document_minhash_bands (band_key) INCLUDE (seen_at, doc_id);
CREATE INDEX document_minhash_bands_doc_id_idx ON document_minhash_bands USING brin (doc_id);
COMMENT ON TABLE document_minhash_bands IS
    'MinHash band values of stored documents (32 per document with a signature): the MinHash layer''s candidate lookup';

-- The new layer in the CHECK constraints, the stats and the clusters view.
ALTER TABLE document_sightings DROP CONSTRAINT document_sightings_layer_check,
    ADD CONSTRAINT document_sightings_layer_check
        CHECK (layer IN ('exact', 'simhash', 'containment', 'minhash', 'semantic'));
ALTER TABLE duplicate_candidates DROP CONSTRAINT duplicate_candidates_layer_check,
    ADD CONSTRAINT duplicate_candidates_layer_check
        CHECK (layer IN ('exact', 'simhash', 'containment', 'minhash', 'semantic'));

CREATE OR REPLACE VIEW document_clusters AS
SELECT d.doc_id,
       d.title,
       d.seen_at AS first_seen_at,
       d.source AS first_source,
       d.url AS first_url,
       count(s.*) AS sightings,
       count(DISTINCT s.source) AS sources,
       count(s.*) FILTER (WHERE s.verdict = 'duplicate') AS duplicates,
       count(s.*) FILTER (WHERE s.layer = 'exact' AND s.verdict = 'duplicate') AS exact,
       count(s.*) FILTER (WHERE s.layer IN ('simhash', 'containment', 'minhash', 'semantic') AND s.verdict = 'duplicate')
           AS near,
       max(s.seen_at) AS last_seen_at,
       array_agg(DISTINCT s.source) FILTER (WHERE s.source IS NOT NULL) AS source_list
  FROM documents d
  LEFT JOIN document_sightings s ON s.doc_id = d.doc_id
 GROUP BY d.doc_id, d.title, d.seen_at, d.source, d.url;

DROP VIEW dedup_daily_stats;
CREATE VIEW dedup_daily_stats AS
WITH seen AS (
    SELECT (s.seen_at AT TIME ZONE 'UTC')::date AS day, coalesce(s.source, '') AS source,
           count(*) AS received,
           count(*) FILTER (WHERE s.verdict = 'new') AS new,
           count(*) FILTER (WHERE s.verdict = 'review') AS review,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'exact') AS exact,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'simhash') AS simhash,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'containment') AS containment,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'minhash') AS minhash,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'semantic') AS semantic,
           count(*) FILTER (WHERE s.verdict = 'restored') AS restored
      FROM document_sightings s
     GROUP BY 1, 2
), queue AS (
    SELECT (c.seen_at AT TIME ZONE 'UTC')::date AS day, coalesce(c.source, '') AS source,
           count(*) FILTER (WHERE c.status = 'pending') AS review_pending,
           count(*) FILTER (WHERE c.status = 'dismissed') AS dismissed,
           count(*) FILTER (WHERE c.status = 'confirmed') AS confirmed
      FROM duplicate_candidates c
     GROUP BY 1, 2
), errors AS (
    SELECT (e.seen_at AT TIME ZONE 'UTC')::date AS day, coalesce(e.source, '') AS source, count(*) AS errors
      FROM ingest_errors e
     GROUP BY 1, 2
)
SELECT day,
       nullif(source, '') AS source,
       coalesce(seen.received, 0) + coalesce(errors.errors, 0) AS ingested,
       coalesce(seen.new, 0) AS new,
       coalesce(seen.exact, 0) AS exact,
       coalesce(seen.simhash, 0) AS simhash,
       coalesce(seen.containment, 0) AS containment,
       coalesce(seen.minhash, 0) AS minhash,
       coalesce(seen.semantic, 0) AS semantic,
       coalesce(seen.review, 0) AS review,
       coalesce(queue.review_pending, 0) AS review_pending,
       coalesce(seen.restored, 0) AS restored,
       coalesce(queue.dismissed, 0) AS dismissed,
       coalesce(queue.confirmed, 0) AS confirmed,
       coalesce(errors.errors, 0) AS errors
  FROM seen
  FULL JOIN queue USING (day, source)
  FULL JOIN errors USING (day, source);

COMMENT ON VIEW dedup_daily_stats IS
    'Per UTC day and source: ingested (incl. errors), new, duplicates by layer, reviews, still pending, restored, dismissed, confirmed, errors.';

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

-- Store an item as a kept document with doc_id p_doc_id (clauses and MinHash
-- bands included).
CREATE OR REPLACE FUNCTION dedup_store_document(p_item dedup_item, p_doc_id bigint)
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO documents (doc_id, seen_at, external_id, title, body, url, source, published_at,
                           content_sha1, title_sha1, simhash, text_length, clause_count, norm_version,
                           minhash, facts)
    VALUES (p_doc_id, p_item.seen_at, p_item.external_id, p_item.title, p_item.body, p_item.url,
            p_item.source, p_item.published_at, decode(p_item.sha1, 'hex'), decode(p_item.title_sha1, 'hex'),
            p_item.simhash, p_item.length, cardinality(coalesce(p_item.clauses, '{}')), p_item.norm_version,
            p_item.minhash, p_item.facts);
    INSERT INTO document_clauses (clause_hash, doc_id, seen_at)
    SELECT DISTINCT h, p_doc_id, p_item.seen_at FROM unnest(p_item.clauses) h;
    INSERT INTO document_minhash_bands (band_key, doc_id, seen_at)
    SELECT DISTINCT k, p_doc_id, p_item.seen_at FROM unnest(dedup_minhash_bands(p_item.minhash)) k;
$$;

-- Record a duplicate or review decision about an item: a candidate row with
-- everything needed to restore it, and its sighting. Returns the candidate_id.
-- p_doc_id: the item's own document when it was kept (review).
-- p_matched_body: the matched document's body; equal to the item's, the item's
-- is not stored twice.
CREATE OR REPLACE FUNCTION dedup_record_candidate(
    p_item dedup_item, p_status text, p_layer text, p_doc_id bigint,
    p_matched_doc_id bigint, p_matched_seen_at timestamptz, p_matched_body text,
    p_score double precision, p_distance integer, p_thresholds jsonb)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    INSERT INTO duplicate_candidates AS c (
        seen_at, external_id, title, body, url, source, published_at, content_sha1, title_sha1,
        simhash, text_length, clauses, norm_version, minhash, facts, doc_id, matched_doc_id,
        matched_seen_at, layer, score, distance, thresholds, status)
    VALUES (p_item.seen_at, p_item.external_id, p_item.title,
            CASE WHEN p_item.body IS NOT DISTINCT FROM p_matched_body THEN NULL ELSE p_item.body END,
            p_item.url, p_item.source, p_item.published_at, decode(p_item.sha1, 'hex'),
            decode(p_item.title_sha1, 'hex'), p_item.simhash, p_item.length,
            coalesce(p_item.clauses, '{}'), p_item.norm_version, p_item.minhash, p_item.facts,
            p_doc_id, p_matched_doc_id, p_matched_seen_at, p_layer, p_score, p_distance,
            p_thresholds, p_status)
    RETURNING c.candidate_id INTO v_id;
    INSERT INTO document_sightings (seen_at, doc_id, external_id, url, source, verdict, layer, score, candidate_id)
    VALUES (p_item.seen_at, coalesce(p_doc_id, p_matched_doc_id), p_item.external_id, p_item.url,
            p_item.source, CASE p_status WHEN 'pending' THEN 'review' ELSE 'duplicate' END,
            p_layer, p_score, v_id);
    RETURN v_id;
END $$;

-- The candidate as an item that can be stored (its body is the matched
-- document's when it was not stored separately).
CREATE OR REPLACE FUNCTION dedup_candidate_item(p_c duplicate_candidates)
RETURNS dedup_item
LANGUAGE sql STABLE AS $$
    SELECT ROW(0, p_c.external_id, p_c.title,
               coalesce(p_c.body, (SELECT d.body FROM documents d
                                    WHERE d.doc_id = p_c.matched_doc_id AND d.seen_at = p_c.matched_seen_at)),
               p_c.url, p_c.source, p_c.seen_at, p_c.published_at, encode(p_c.content_sha1, 'hex'),
               encode(p_c.title_sha1, 'hex'), p_c.simhash, p_c.text_length, p_c.clauses,
               p_c.norm_version, p_c.minhash, p_c.facts)::dedup_item
$$;

-- A kept document as an item, to record it as a candidate.
CREATE OR REPLACE FUNCTION dedup_document_item(p_doc_id bigint, p_seen_at timestamptz)
RETURNS dedup_item
LANGUAGE sql STABLE AS $$
    SELECT ROW(0, d.external_id, d.title, d.body, d.url, d.source, d.seen_at, d.published_at,
               encode(d.content_sha1, 'hex'), encode(d.title_sha1, 'hex'), d.simhash, d.text_length,
               ARRAY(SELECT c.clause_hash FROM document_clauses c
                      WHERE c.doc_id = d.doc_id AND c.seen_at = d.seen_at ORDER BY 1),
               d.norm_version, d.minhash, d.facts)::dedup_item
      FROM documents d
     WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at
$$;

-- Remove a stored document's rows from the per-document tables (not its
-- sightings or candidates): a document turned back into a candidate.
CREATE FUNCTION dedup_remove_document(p_doc_id bigint, p_seen_at timestamptz)
RETURNS void
LANGUAGE sql AS $$
    DELETE FROM document_clauses c WHERE c.doc_id = p_doc_id AND c.seen_at = p_seen_at;
    DELETE FROM document_minhash_bands b WHERE b.doc_id = p_doc_id AND b.seen_at = p_seen_at;
    DELETE FROM document_embeddings e WHERE e.doc_id = p_doc_id AND e.seen_at = p_seen_at;
    DELETE FROM document_digests g USING documents d
     WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at
       AND g.content_sha1 = d.content_sha1 AND g.doc_id = p_doc_id;
    DELETE FROM documents d WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at;
$$;

-- Turn a document stored earlier in this transaction back into a duplicate
-- candidate of p_matched_doc_id: the semantic layer's verdict came after the
-- hash layers stored it. What the batch already matched to it (exact copies,
-- near copies) is re-pointed at the original. Returns the candidate_id.
CREATE OR REPLACE FUNCTION dedup_demote_document(
    p_doc_id bigint, p_seen_at timestamptz, p_review_candidate_id bigint,
    p_matched_doc_id bigint, p_matched_seen_at timestamptz, p_layer text,
    p_score double precision, p_thresholds jsonb)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_item dedup_item := dedup_document_item(p_doc_id, p_seen_at);
BEGIN
    IF v_item.sha1 IS NULL THEN
        RAISE EXCEPTION 'dedup_demote_document: document % (%) does not exist', p_doc_id, p_seen_at;
    END IF;
    DELETE FROM document_sightings s
     WHERE s.doc_id = p_doc_id AND s.seen_at = p_seen_at
       AND (s.verdict = 'new' OR s.candidate_id = p_review_candidate_id);
    DELETE FROM duplicate_candidates c WHERE c.candidate_id = p_review_candidate_id;
    UPDATE duplicate_candidates c
       SET matched_doc_id = p_matched_doc_id, matched_seen_at = p_matched_seen_at,
           body = coalesce(c.body, v_item.body)
     WHERE c.matched_doc_id = p_doc_id;
    UPDATE document_sightings s SET doc_id = p_matched_doc_id WHERE s.doc_id = p_doc_id;
    PERFORM dedup_remove_document(p_doc_id, p_seen_at);
    RETURN dedup_record_candidate(v_item, 'auto', p_layer, NULL, p_matched_doc_id, p_matched_seen_at,
                                  NULL, p_score, NULL, p_thresholds);
END $$;

-- It is a duplicate. A kept document of it (a review, or an earlier restore) is
-- removed again; its sightings go to the matched document; whitelist entries
-- this candidate added are withdrawn.
CREATE OR REPLACE FUNCTION confirm_candidate(p_id bigint, p_note text DEFAULT NULL, p_by text DEFAULT current_user)
RETURNS duplicate_candidates
LANGUAGE plpgsql AS $$
DECLARE
    v_c duplicate_candidates := dedup_lock_candidate(p_id);
BEGIN
    IF v_c.status = 'confirmed' THEN
        RETURN v_c;
    END IF;
    IF v_c.doc_id IS NOT NULL THEN
        UPDATE document_sightings s
           SET doc_id = v_c.matched_doc_id,
               verdict = CASE WHEN s.candidate_id = p_id THEN 'duplicate' ELSE s.verdict END
         WHERE s.doc_id = v_c.doc_id;
        PERFORM dedup_remove_document(v_c.doc_id, v_c.seen_at);
    END IF;
    DELETE FROM dedup_whitelist w WHERE w.candidate_id = p_id;
    UPDATE duplicate_candidates c
       SET status = 'confirmed', doc_id = NULL, decided_by = p_by, decided_at = now(), note = p_note
     WHERE c.candidate_id = p_id
    RETURNING * INTO v_c;
    RETURN v_c;
END $$;

CREATE OR REPLACE VIEW dedup_partitions AS
SELECT parent.relname AS table_name,
       to_date(substring(child.relname FROM '_p(\d{8})$'), 'YYYYMMDD') AS day,
       child.relname AS partition_name,
       greatest(child.reltuples, 0)::bigint AS approx_rows,
       pg_total_relation_size(child.oid) AS bytes
  FROM pg_inherits i
  JOIN pg_class parent ON parent.oid = i.inhparent
  JOIN pg_class child ON child.oid = i.inhrelid
 WHERE parent.relname IN ('documents', 'document_clauses', 'document_sightings', 'duplicate_candidates',
                          'document_embeddings', 'document_minhash_bands')
   AND parent.relnamespace = 'public'::regnamespace;

CREATE OR REPLACE FUNCTION dedup_ensure_partitions(p_from date, p_to date)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_day date;
    v_table text;
    v_created integer := 0;
BEGIN
    IF p_to - p_from > 3660 THEN
        RAISE EXCEPTION 'dedup_ensure_partitions: % .. % spans more than ten years', p_from, p_to;
    END IF;
    FOR v_day IN SELECT generate_series(p_from, p_to, interval '1 day')::date LOOP
        FOREACH v_table IN ARRAY ARRAY['documents', 'document_clauses', 'document_sightings',
                                       'duplicate_candidates', 'document_embeddings',
                                       'document_minhash_bands'] LOOP
            IF to_regclass(format('%I_p%s', v_table, to_char(v_day, 'YYYYMMDD'))) IS NULL THEN
                -- Another session may create it at the same moment: serialise on
                -- the day, and take "already exists" (its commit raced our check)
                -- as success.
                PERFORM pg_advisory_xact_lock(hashtext('dedup_ensure_partitions'), v_day - date '2000-01-01');
                BEGIN
                    EXECUTE format(
                        'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                        format('%s_p%s', v_table, to_char(v_day, 'YYYYMMDD')), v_table,
                        v_day::timestamp AT TIME ZONE 'UTC',
                        (v_day + 1)::timestamp AT TIME ZONE 'UTC');
                    v_created := v_created + 1;
                EXCEPTION WHEN duplicate_table THEN
                    NULL;
                END;
            END IF;
        END LOOP;
    END LOOP;
    RETURN v_created;
END $$;

-- Day partitions of the new table for the days already stored.
SELECT dedup_ensure_partitions(min(day), max(day))
  FROM dedup_partitions WHERE table_name = 'documents' HAVING count(*) > 0;

-- The ingest function: one call per batch, one transaction (the hash layers;
-- the semantic layer is dedup_ingest_semantic, called next in the same
-- transaction for the items this one flags with "embed"). Layers, in order:
-- whitelist, exact, SimHash, containment, MinHash; a near-duplicate match is
-- then checked on the pair's facts.
CREATE OR REPLACE FUNCTION dedup_ingest(p_items jsonb, p_dry_run boolean DEFAULT false, p_overrides jsonb DEFAULT '{}')
RETURNS TABLE (pos integer, verdict text, layer text, doc_id bigint,
               matched_doc_id bigint, matched_external_id text,
               score double precision, distance integer, candidate_id bigint,
               embed boolean, neighbours bigint[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_settings jsonb;
    v_window interval;
    v_cont_dup double precision;
    v_cont_review double precision;
    v_cont_min integer;
    v_cont_incoming double precision;
    v_boiler_docs integer;
    v_sim_overlap double precision;
    v_useful bigint[];
    v_n_boiler integer;
    v_n_item integer;
    v_shared integer;
    v_stored_n integer;
    v_to_review boolean;
    it dedup_item;
    v_lo timestamptz;
    v_hi timestamptz;
    v_sha1 bytea;
    v_steps integer[];
    v_stripes integer[];
    v_key text;
    v_json jsonb;
    v_dist_cache jsonb := '{}';
    v_dup_dist integer;
    v_review_dist integer;
    v_claimed boolean;
    v_cand record;
    v_n integer[][];
    -- the best match (m_) and the best review-band match (r_) so far
    m_doc_id bigint; m_seen_at timestamptz; m_ext text; m_layer text; m_score double precision; m_dist integer;
    r_doc_id bigint; r_seen_at timestamptz; r_ext text; r_layer text; r_score double precision; r_dist integer;
    v_doc_id bigint;
    v_matched_body text;
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
    v_first boolean;
    v_white boolean;
    v_mh_dup double precision;
    v_mh_review double precision;
    v_facts_share double precision;
    v_facts_added double precision;
    v_mh_bands bigint[];
    v_matched_facts text[];
BEGIN
    -- settings: dedup_settings, then the source's own (dedup_sources), then
    -- this call's overrides; resolved once per source in the batch
    v_by_source := jsonb_build_object('', dedup_effective_settings(NULL, p_overrides));

    IF NOT p_dry_run THEN
        -- Lock every stripe a batch item could collide on, in stripe order (so
        -- two batches cannot deadlock). A large batch would lock most stripes
        -- anyway: it takes the whole table at once instead, which conflicts with
        -- the small batches' row locks and costs one lock instead of thousands.
        v_stripes := ARRAY(
            SELECT DISTINCT k FROM jsonb_array_elements(p_items) e,
                 LATERAL (SELECT ((e ->> 'simhash')::bigint >> (16 * b) & 65535)::integer AS k
                            FROM generate_series(0, 3) b
                          UNION ALL
                          SELECT (get_byte(decode(e ->> 'sha1', 'hex'), 0) << 8
                                  | get_byte(decode(e ->> 'sha1', 'hex'), 1))
                          UNION ALL
                          SELECT (h::bigint & 65535)::integer
                            FROM jsonb_array_elements_text(e -> 'clauses') h
                          UNION ALL
                          SELECT (k & 65535)::integer
                            FROM unnest(dedup_minhash_bands(ARRAY(
                                     SELECT x::integer FROM jsonb_array_elements_text(
                                         CASE jsonb_typeof(e -> 'minhash') WHEN 'array' THEN e -> 'minhash' END) x))) k) keys
             ORDER BY k);
        IF cardinality(v_stripes) > 512 THEN
            LOCK TABLE dedup_lock_stripes IN EXCLUSIVE MODE;
        ELSE
            PERFORM 1 FROM dedup_lock_stripes l WHERE l.stripe = ANY (v_stripes)
             ORDER BY l.stripe FOR UPDATE;
        END IF;
    END IF;

    FOR v_json IN SELECT e FROM jsonb_array_elements(p_items) e ORDER BY (e ->> 'pos')::integer
    LOOP
        it := jsonb_populate_record(NULL::dedup_item, v_json);
        -- the first clauses of the text, in order (the lead rule, below)
        v_lead := ARRAY(SELECT h::bigint FROM jsonb_array_elements_text(v_json -> 'lead') h);
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
            v_sim_overlap := (v_settings ->> 'simhash_min_clause_overlap')::double precision;
            v_gate_dist := (v_settings ->> 'semantic_gate_distance')::integer;
            v_mode := v_settings ->> 'semantic_mode';
            v_mh_dup := (v_settings ->> 'minhash_threshold')::double precision;
            v_mh_review := least(v_mh_dup, (v_settings ->> 'minhash_review_threshold')::double precision);
            v_facts_share := (v_settings ->> 'facts_disagreement_share')::double precision;
            v_facts_added := (v_settings ->> 'facts_added_share')::double precision;
            v_steps := ARRAY(SELECT (r ->> 0)::integer
                               FROM jsonb_array_elements(v_settings -> 'simhash_distance_by_length') r);
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
        -- distances depend on length only through the rule's steps: cache per step
        v_key := v_source_key || '/' || (SELECT count(*) FROM unnest(v_steps) m WHERE m <= it.length)::text;
        IF NOT v_dist_cache ? v_key THEN
            SELECT to_jsonb(x) INTO v_json FROM dedup_simhash_distances(it.length, v_settings) x;
            v_dist_cache := v_dist_cache || jsonb_build_object(v_key, v_json);
        END IF;
        v_dup_dist := (v_dist_cache -> v_key ->> 'duplicate_distance')::integer;
        v_review_dist := (v_dist_cache -> v_key ->> 'review_distance')::integer;
        v_thresholds := jsonb_build_object(
            'simhash_distance', v_dup_dist,
            'simhash_review_distance', v_review_dist,
            'containment_threshold', v_cont_dup,
            'containment_review_threshold', v_cont_review,
            'containment_incoming_share', v_cont_incoming,
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
                SELECT g.doc_id, g.seen_at, d.external_id, d.body
                  INTO matched_doc_id, m_seen_at, matched_external_id, v_matched_body
                  FROM document_digests g
                  LEFT JOIN documents d ON d.doc_id = g.doc_id AND d.seen_at = g.seen_at
                 WHERE g.content_sha1 = v_sha1;
                verdict := 'duplicate'; layer := 'exact'; score := 1.0; distance := 0;
                IF NOT p_dry_run THEN
                    candidate_id := dedup_record_candidate(
                        it, 'auto', 'exact', NULL, matched_doc_id, m_seen_at, v_matched_body,
                        1.0, 0, v_thresholds);
                END IF;
                RETURN NEXT;
                CONTINUE;
            END IF;
        END IF;

        -- Clause evidence, used by both near-duplicate layers. A clause that
        -- v_boiler_docs stored documents already hold is site boilerplate (nav
        -- bars, "related news", copyright lines): it is left out of the
        -- comparison and out of both texts' clause counts.
        IF verdict IS NULL THEN
            SELECT coalesce(array_agg(h) FILTER (WHERE n < v_boiler_docs), '{}'),
                   count(*) FILTER (WHERE n >= v_boiler_docs)
              INTO v_useful, v_n_boiler
              FROM (SELECT h, (SELECT count(*) FROM (SELECT 1 FROM document_clauses dc
                                                     WHERE dc.clause_hash = h AND dc.seen_at BETWEEN v_lo AND v_hi
                                                     LIMIT v_boiler_docs) x) AS n
                      FROM unnest(v_clauses) h) holders;
            v_n_item := cardinality(v_clauses) - v_n_boiler;
        END IF;

        -- SimHash layer: probe the bands (radius 1 when the review distance
        -- needs it), confirm by Hamming distance.
        IF verdict IS NULL THEN
            -- band values to probe, computed once (not per row)
            v_n := ARRAY[
                dedup_band_neighbours((it.simhash & 65535)::integer, v_review_dist / 4),
                dedup_band_neighbours(((it.simhash >> 16) & 65535)::integer, v_review_dist / 4),
                dedup_band_neighbours(((it.simhash >> 32) & 65535)::integer, v_review_dist / 4),
                dedup_band_neighbours(((it.simhash >> 48) & 65535)::integer, v_review_dist / 4)];
            -- the closest candidate decides this layer; the others within the
            -- semantic gate distance are what a gated semantic check compares with
            v_probe_max := CASE WHEN v_mode = 'gated' THEN greatest(v_review_dist, v_gate_dist)
                                ELSE v_review_dist END;
            v_first := true;
            FOR v_cand IN
            -- One index-only scan per band (the band indexes carry simhash,
            -- seen_at and doc_id): no heap page is read for the hundreds of
            -- candidates a radius-1 probe returns; only the few within
            -- distance are looked up.
            SELECT c.doc_id, c.seen_at, d.external_id, c.dist, d.clause_count
              FROM (SELECT b.doc_id, b.seen_at, bit_count((b.simhash # it.simhash)::bit(64))::integer AS dist
                      FROM (SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band0 = ANY (v_n[1:1][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                            UNION
                            SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band1 = ANY (v_n[2:2][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                            UNION
                            SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band2 = ANY (v_n[3:3][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                            UNION
                            SELECT x.doc_id, x.seen_at, x.simhash FROM documents x
                             WHERE x.simhash_band3 = ANY (v_n[4:4][:]::integer[]) AND x.seen_at BETWEEN v_lo AND v_hi
                           ) b
                   ) c
              JOIN documents d ON d.doc_id = c.doc_id AND d.seen_at = c.seen_at
             WHERE c.dist <= v_probe_max
               AND NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
             ORDER BY c.dist, c.seen_at, c.doc_id
             LIMIT 5
            LOOP
            IF v_mode = 'gated' AND v_cand.dist <= v_gate_dist THEN
                v_gate := v_gate || v_cand.doc_id;
            END IF;
            IF v_first AND v_cand.dist <= v_review_dist THEN
                v_to_review := v_cand.dist > v_dup_dist;
                v_stored_n := v_cand.clause_count - v_n_boiler;
                IF NOT v_to_review AND v_n_item >= 5 AND v_stored_n >= 5 THEN
                    -- Same vocabulary is not the same text: long texts must also
                    -- share some clauses (two pieces of one series by one author
                    -- can sit 3 bits apart with no sentence in common).
                    SELECT count(*) INTO v_shared FROM document_clauses dc
                     WHERE dc.doc_id = v_cand.doc_id AND dc.seen_at = v_cand.seen_at
                       AND dc.clause_hash = ANY (v_useful);
                    v_to_review := v_shared < v_sim_overlap * least(v_n_item, v_stored_n);
                END IF;
                IF v_to_review THEN
                    r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_cand.external_id;
                    r_layer := 'simhash'; r_score := 1.0 - v_cand.dist / 64.0; r_dist := v_cand.dist;
                ELSE
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_cand.external_id;
                    m_layer := 'simhash'; m_score := 1.0 - v_cand.dist / 64.0; m_dist := v_cand.dist;
                END IF;
            END IF;
            v_first := false;
            END LOOP;
        END IF;

        -- Containment layer: clauses (boilerplate left out) shared with a stored
        -- text. Catches copies that add or drop paragraphs: site banners, ads,
        -- truncated recrawls. Containment = shared / the smaller text's clauses.
        -- It is a duplicate only when the incoming text is mostly old news too
        -- (containment_incoming_share of its clauses are in the other text): a
        -- long text that merely quotes a short stored one is kept, for review.
        IF verdict IS NULL AND m_doc_id IS NULL AND v_n_item >= 2 THEN
            SELECT c.doc_id, c.seen_at, d.external_id, c.shared, d.clause_count - v_n_boiler AS stored_n,
                   c.shared::double precision
                       / least(v_n_item, greatest(d.clause_count - v_n_boiler, c.shared)) AS ratio,
                   c.shared::double precision / v_n_item AS incoming_share
              INTO v_cand
              FROM (SELECT dc.doc_id, dc.seen_at, count(*) AS shared
                      FROM document_clauses dc
                     WHERE dc.clause_hash = ANY (v_useful) AND dc.seen_at BETWEEN v_lo AND v_hi
                     GROUP BY dc.doc_id, dc.seen_at
                    HAVING count(*) >= 2) c
              JOIN documents d ON d.doc_id = c.doc_id AND d.seen_at = c.seen_at
             WHERE c.shared >= least(v_cont_min, v_n_item, greatest(d.clause_count - v_n_boiler, c.shared))
               AND NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
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
                   AND v_cand.stored_n = (SELECT count(*) FROM document_clauses dc
                                           WHERE dc.doc_id = v_cand.doc_id AND dc.seen_at = v_cand.seen_at
                                             AND dc.clause_hash = ANY (v_lead[1:v_cand.stored_n + 2])) THEN
                    v_cand.incoming_share := 1.0;
                END IF;
                IF v_cand.ratio >= v_cont_dup AND v_cand.incoming_share >= v_cont_incoming THEN
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_cand.external_id;
                    m_layer := 'containment'; m_score := least(v_cand.ratio, 1.0);
                ELSIF v_cand.ratio >= v_cont_review AND r_doc_id IS NULL THEN
                    r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_cand.external_id;
                    r_layer := 'containment'; r_score := least(v_cand.ratio, 1.0);
                END IF;
            END IF;
        END IF;

        -- MinHash layer: stored texts sharing a band of the signature, compared
        -- on the whole signature (estimated Jaccard of character 5-grams).
        -- Catches what changes a word in most clauses: synonyms, reworded leads.
        IF verdict IS NULL AND m_doc_id IS NULL AND it.minhash IS NOT NULL AND v_mh_dup IS NOT NULL THEN
            v_mh_bands := dedup_minhash_bands(it.minhash);
            SELECT c.doc_id, c.seen_at, d.external_id, dedup_minhash_similarity(d.minhash, it.minhash) AS sim
              INTO v_cand
              FROM (SELECT DISTINCT b.doc_id, b.seen_at FROM document_minhash_bands b
                     WHERE b.band_key = ANY (v_mh_bands) AND b.seen_at BETWEEN v_lo AND v_hi) c
              JOIN documents d ON d.doc_id = c.doc_id AND d.seen_at = c.seen_at
             WHERE NOT dedup_pair_whitelisted(v_sha1, d.content_sha1)
             ORDER BY sim DESC, c.seen_at, c.doc_id
             LIMIT 1;
            IF v_cand.doc_id IS NOT NULL THEN
                IF v_mode = 'gated' THEN
                    v_gate := v_gate || v_cand.doc_id;
                END IF;
                IF v_cand.sim >= v_mh_dup THEN
                    m_doc_id := v_cand.doc_id; m_seen_at := v_cand.seen_at; m_ext := v_cand.external_id;
                    m_layer := 'minhash'; m_score := v_cand.sim; m_dist := NULL;
                ELSIF v_cand.sim >= v_mh_review AND r_doc_id IS NULL THEN
                    r_doc_id := v_cand.doc_id; r_seen_at := v_cand.seen_at; r_ext := v_cand.external_id;
                    r_layer := 'minhash'; r_score := v_cand.sim; r_dist := NULL;
                END IF;
            END IF;
        END IF;

        -- Fact check: a near-duplicate match where each text holds numbers or
        -- names the other lacks is two stories on one template (two match
        -- reports, two brochures of one school): review, not duplicate. So is
        -- one where the incoming text adds many facts (a commentary appending
        -- a speech), unless at least half its opening clauses (the lead, with
        -- any banner) are the matched text's: a full recrawl of a page stored
        -- truncated.
        IF verdict IS NULL AND m_doc_id IS NOT NULL AND v_facts_share IS NOT NULL THEN
            SELECT d.facts INTO v_matched_facts
              FROM documents d WHERE d.doc_id = m_doc_id AND d.seen_at = m_seen_at;
            IF dedup_facts_disagree(
                   it.facts, v_matched_facts, v_facts_share,
                   CASE WHEN 2 * (SELECT count(*) FROM document_clauses dc
                                   WHERE dc.clause_hash = ANY (v_lead)
                                     AND dc.doc_id = m_doc_id AND dc.seen_at = m_seen_at)
                             >= cardinality(v_lead)
                        THEN NULL ELSE v_facts_added END) THEN
                r_doc_id := m_doc_id; r_seen_at := m_seen_at; r_ext := m_ext;
                r_layer := m_layer; r_score := m_score; r_dist := m_dist;
                m_doc_id := NULL;
            END IF;
        END IF;

        IF verdict IS NULL AND m_doc_id IS NOT NULL THEN
            -- Near duplicate: not stored as a document; kept in full as a candidate.
            verdict := 'duplicate'; layer := m_layer; score := m_score; distance := m_dist;
            matched_doc_id := m_doc_id; matched_external_id := m_ext;
            IF NOT p_dry_run THEN
                DELETE FROM document_digests g WHERE g.content_sha1 = v_sha1 AND g.doc_id = v_doc_id;
                candidate_id := dedup_record_candidate(
                    it, 'auto', m_layer, NULL, m_doc_id, m_seen_at, NULL, m_score, m_dist, v_thresholds);
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
            PERFORM dedup_store_document(it, v_doc_id);
            doc_id := v_doc_id;
            IF verdict = 'review' THEN
                candidate_id := dedup_record_candidate(
                    it, 'pending', r_layer, v_doc_id, r_doc_id, r_seen_at, NULL, r_score, r_dist,
                    v_thresholds);
            ELSE
                INSERT INTO document_sightings (seen_at, doc_id, external_id, url, source, verdict)
                VALUES (it.seen_at, v_doc_id, it.external_id, it.url, it.source, 'new');
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
COMMENT ON FUNCTION dedup_ingest(jsonb, boolean, jsonb) IS
    'Check and store a batch of fingerprinted documents in one transaction (exact, SimHash, containment, MinHash; fact check); one verdict row per item. Called by dedup_pg.Deduper.';
