-- dedup-pg revision 0068: SimHash band partitions vacuumed every 20,000 rows (applied by
-- migrations/versions/0068_simhash_band_partitions_vacuumed_every.py).
--
-- Why: issue 19 (reads from outside shared_buffers at 10M documents). The
-- SimHash probe is an index-only scan since revision 0067: it reads the band
-- rows' heap only for entries within distance. But an index-only scan reads
-- the heap page of any entry whose page the visibility map does not mark
-- all-visible, and only VACUUM marks pages. Autovacuum vacuums a table that
-- only grows after its rows grew by a fifth (autovacuum_vacuum_insert_scale_factor
-- 0.2), so the rows written since, up to a sixth of a week partition, cost
-- the probe a heap read for each of their entries it meets: a text's four
-- band keys meet ~670 entries at 10M documents a week. On the 10M store
-- (305 of the big week partition's 318,221 pages unmarked), 20 probes read
-- 476-706 entries and fetched 0-3 heap rows each: a probe's heap fetches are
-- its entries times the unmarked share, so ~110 at a sixth. A week partition
-- of document_simhash_bands is now vacuumed after every 20,000 rows (5,000
-- documents; in practice at most once an autovacuum_naptime, a minute by
-- default): such a vacuum reads the pages written since the last one, and
-- the btree's cleanup does not scan an index no row was deleted from. Measured numbers: BENCHMARKS.md, revision
-- 0068.
--
-- The week partitions that exist get the same settings; dedup_ensure_partitions
-- gives them to the ones it creates. (Storage settings of a partitioned table
-- are not inherited: PostgreSQL takes them only on a partition.)
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT i.inhrelid::regclass AS part FROM pg_inherits i
              WHERE i.inhparent = 'document_simhash_bands'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_vacuum_insert_threshold = 20000,'
                       ' autovacuum_vacuum_insert_scale_factor = 0)', r.part);
    END LOOP;
END $$;

-- function:dedup_ensure_partitions, from sql/schema/30_partitions.sql
CREATE OR REPLACE FUNCTION dedup_ensure_partitions(p_from date, p_to date)
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
