-- dedup-pg revision 0065: dedup_ensure_partitions described as it is (applied by
-- migrations/versions/0065_dedup_ensure_partitions_described_as.py).
--
-- Why: the function's COMMENT (what psql's \df+ shows an analyst) still said
-- it creates day partitions of four tables, as in revision 0001. Since
-- revision 0010 it also creates the ISO-week partitions of the lookup tables,
-- and document_embeddings (0004), document_minhash_bands (0008) and
-- document_simhash_bands (0012) were added to it. The function is unchanged;
-- a test now checks that the comment names every table it partitions.
--
-- No hand-written changes: the definition below is the whole revision.

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
                        'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                        v_name, v_table,
                        v_start::timestamp AT TIME ZONE 'UTC',
                        (v_start + CASE WHEN v_weekly THEN 7 ELSE 1 END)::timestamp AT TIME ZONE 'UTC');
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
