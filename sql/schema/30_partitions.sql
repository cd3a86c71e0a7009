-- dedup-pg schema: partitions as an operation. Creating is
-- dedup_ensure_partitions(); dropping is done by dedup_pg.partitions (DETACH
-- ... CONCURRENTLY cannot run inside a function or a transaction block).
--
-- documents, document_sightings, duplicate_candidates and document_embeddings
-- (one HNSW index per day) have day partitions. The lookup tables
-- (document_clauses, document_minhash_bands, document_simhash_bands) have
-- ISO-week partitions (Monday 00:00 UTC to the next Monday), because every
-- lookup key of a check descends one btree per partition in the window: with
-- day partitions that was 7-8 descents a key at a 7-day window, and the check's
-- cost grew with the number of populated days, not with the data (at 60k
-- documents, all in shared_buffers, ingest went from 633 docs/s over 1-2 days
-- to 231 over 7, bench/growth.py). A check meets one or two week partitions.
-- Retention stays a partition drop: a week partition is dropped once all of its
-- seven days are past the cutoff (its expired days are outside every window
-- meanwhile, and the lookups filter on seen_at).
--
-- A week partition of document_simhash_bands is vacuumed by autovacuum after
-- every 20,000 rows inserted (5,000 documents), not after its rows grew by a
-- fifth (the default): the SimHash probe is an index-only scan (revision
-- 0067), and an entry whose heap page is not yet marked all-visible in the
-- visibility map, which only VACUUM does, costs the probe a read of that
-- page. A text's four band keys meet ~670 entries at 10M documents a week,
-- nearly all unrelated, so under the default up to a sixth of them (the rows
-- written since the last vacuum) could each cost a heap read; such a vacuum
-- reads only the pages written since the last one (revision 0068).

-- Create the partitions that hold p_from .. p_to: a day partition of each
-- day-partitioned table per day, and the week partitions of the lookup tables.
CREATE FUNCTION dedup_ensure_partitions(p_from date, p_to date)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_day date;
    v_start date;
    v_table text;
    v_name text;
    v_weekly boolean;
    v_created integer := 0;
BEGIN
    IF p_to - p_from > 3660 THEN
        RAISE EXCEPTION 'dedup_ensure_partitions: % .. % spans more than ten years', p_from, p_to;
    END IF;
    FOR v_day IN SELECT generate_series(p_from, p_to, interval '1 day')::date LOOP
        FOREACH v_table IN ARRAY ARRAY['documents', 'document_clauses', 'document_sightings',
                                       'duplicate_candidates', 'document_embeddings',
                                       'document_minhash_bands', 'document_simhash_bands'] LOOP
            v_weekly := v_table IN ('document_clauses', 'document_minhash_bands', 'document_simhash_bands');
            v_start := CASE WHEN v_weekly THEN date_trunc('week', v_day)::date ELSE v_day END;
            v_name := format('%s_%s%s', v_table, CASE WHEN v_weekly THEN 'w' ELSE 'p' END,
                             to_char(v_start, 'YYYYMMDD'));
            IF to_regclass(v_name) IS NULL THEN
                -- Another session may create it at the same moment: serialise on
                -- the first day, and take "already exists" (its commit raced our
                -- check) as success.
                PERFORM pg_advisory_xact_lock(hashtext('dedup_ensure_partitions'), v_start - date '2000-01-01');
                BEGIN
                    EXECUTE format(
                        'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)%s',
                        v_name, v_table,
                        v_start::timestamp AT TIME ZONE 'UTC',
                        (v_start + CASE WHEN v_weekly THEN 7 ELSE 1 END)::timestamp AT TIME ZONE 'UTC',
                        CASE WHEN v_table = 'document_simhash_bands'
                             THEN ' WITH (autovacuum_vacuum_insert_threshold = 20000,'
                                  ' autovacuum_vacuum_insert_scale_factor = 0)'
                             ELSE '' END);
                    v_created := v_created + 1;
                EXCEPTION WHEN duplicate_table THEN
                    NULL;
                END;
            END IF;
        END LOOP;
    END LOOP;
    RETURN v_created;
END $$;

COMMENT ON FUNCTION dedup_ensure_partitions(date, date) IS
    'Create the missing partitions that hold the UTC days p_from .. p_to: a day partition each of documents, document_sightings, duplicate_candidates and document_embeddings, and the ISO-week partitions of document_clauses, document_minhash_bands and document_simhash_bands; returns how many were created (dedup-pg partitions ensure).';

-- Retention, before the days older than p_cutoff are dropped: an exact copy
-- kept in a later day whose text is its matched document's (body NULL) gets
-- that text, or dropping the document's day would take it from a candidate
-- that stays (dedup_pg.partitions calls it before dropping any day; before
-- revision 0038 nothing did). One row at a time, each by its keys, so that
-- Citus routes every statement. Returns how many candidates got their text.
CREATE FUNCTION dedup_keep_texts_of_days(p_cutoff timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    v_body text;
    v_n integer := 0;
BEGIN
    FOR r IN SELECT c.candidate_id, c.seen_at, c.matched_doc_id, c.matched_seen_at
               FROM duplicate_candidates c
              WHERE c.body IS NULL AND c.seen_at >= p_cutoff AND c.matched_seen_at < p_cutoff LOOP
        SELECT d.body INTO v_body FROM documents d
         WHERE d.doc_id = r.matched_doc_id AND d.seen_at = r.matched_seen_at;
        CONTINUE WHEN v_body IS NULL;
        UPDATE duplicate_candidates c SET body = v_body
         WHERE c.candidate_id = r.candidate_id AND c.seen_at = r.seen_at;
        v_n := v_n + 1;
    END LOOP;
    RETURN v_n;
END $$;

-- Partitions with the days they hold: "_pYYYYMMDD" is one day, "_wYYYYMMDD" the
-- week starting that Monday. day = the first day, last_day = the last one.
CREATE VIEW dedup_partitions AS
SELECT parent.relname AS table_name,
       to_date(substring(child.relname FROM '_[pw](\d{8})$'), 'YYYYMMDD') AS day,
       child.relname AS partition_name,
       greatest(child.reltuples, 0)::bigint AS approx_rows,
       pg_total_relation_size(child.oid) AS bytes,
       to_date(substring(child.relname FROM '_[pw](\d{8})$'), 'YYYYMMDD')
           + CASE WHEN child.relname ~ '_w\d{8}$' THEN 6 ELSE 0 END AS last_day
  FROM pg_inherits i
  JOIN pg_class parent ON parent.oid = i.inhparent
  JOIN pg_class child ON child.oid = i.inhrelid
 WHERE parent.relname IN ('documents', 'document_clauses', 'document_sightings', 'duplicate_candidates',
                          'document_embeddings', 'document_minhash_bands', 'document_simhash_bands')
   AND parent.relnamespace = 'public'::regnamespace;

COMMENT ON VIEW dedup_partitions IS
    'Partitions of the per-document tables: one day each (_pYYYYMMDD), or one ISO week for the lookup tables document_clauses, document_minhash_bands and document_simhash_bands (_wYYYYMMDD, the Monday); day .. last_day (dedup-pg partitions list).';
