-- Week partitions for the lookup tables (revision 0010).
--
-- Why: every lookup key of a check (about 20 clause hashes and 32 MinHash band
-- values a text) descends one btree per partition in the window. With day
-- partitions that is 7-8 descents a key at a 7-day window, and the check's cost
-- grew with the number of populated days, not with the data: at 60k documents,
-- all in shared_buffers, ingest went from 633 docs/s over 1-2 days to 231 over 7
-- (bench/growth.py). document_clauses and document_minhash_bands are now
-- partitioned by ISO week (Monday 00:00 UTC to the next Monday): a check meets
-- one or two of them. Retention stays a partition drop: a week partition is
-- dropped once all of its seven days are past the cutoff (its expired days are
-- outside every window meanwhile, and the lookups filter on seen_at).
--
-- documents, document_sightings, duplicate_candidates and document_embeddings
-- (one HNSW index per day) keep their day partitions.

-- Partitions with the days they hold: "_pYYYYMMDD" is one day, "_wYYYYMMDD" the
-- week starting that Monday. day = the first day, last_day = the last one.
CREATE OR REPLACE VIEW dedup_partitions AS
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
                          'document_embeddings', 'document_minhash_bands')
   AND parent.relnamespace = 'public'::regnamespace;

COMMENT ON VIEW dedup_partitions IS
    'Partitions of the per-document tables: one day each (_pYYYYMMDD), or one ISO week for the lookup tables document_clauses and document_minhash_bands (_wYYYYMMDD, the Monday); day .. last_day (dedup-pg partitions list).';

-- Create the partitions that hold p_from .. p_to: a day partition of each
-- day-partitioned table per day, and the week partitions of the lookup tables.
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
                                       'document_minhash_bands'] LOOP
            v_weekly := v_table IN ('document_clauses', 'document_minhash_bands');
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

-- Move both lookup tables onto week partitions: the day-partitioned ones are
-- renamed aside, the new ones created and filled, the old ones dropped.
ALTER TABLE document_clauses RENAME TO document_clauses_by_day;
ALTER INDEX document_clauses_hash_idx RENAME TO document_clauses_by_day_hash_idx;
ALTER INDEX document_clauses_doc_id_idx RENAME TO document_clauses_by_day_doc_id_idx;
ALTER TABLE document_minhash_bands RENAME TO document_minhash_bands_by_day;
ALTER INDEX document_minhash_bands_key_idx RENAME TO document_minhash_bands_by_day_key_idx;
ALTER INDEX document_minhash_bands_doc_id_idx RENAME TO document_minhash_bands_by_day_doc_id_idx;
DO $$
DECLARE
    p record;
BEGIN
    -- the day partitions keep their names (and their indexes' names): rename
    -- them too, so the new tables' partitions cannot collide with them
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent IN ('document_clauses_by_day'::regclass, 'document_minhash_bands_by_day'::regclass)
    LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', p.relname, 'old_' || p.relname);
    END LOOP;
END $$;

-- Every clause of every stored document (boilerplate lines included). The
-- index carries doc_id and seen_at, so counting a clause's holders and
-- grouping shared clauses by document read the index alone.
CREATE TABLE document_clauses (
    clause_hash bigint NOT NULL,
    doc_id      bigint NOT NULL,
    seen_at     timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_clauses_hash_idx ON document_clauses (clause_hash) INCLUDE (seen_at, doc_id);
CREATE INDEX document_clauses_doc_id_idx ON document_clauses USING brin (doc_id) WITH (pages_per_range = 8);
COMMENT ON TABLE document_clauses IS
    'Clause hashes of stored documents (the containment layer''s lookup); partitioned by ISO week';

CREATE TABLE document_minhash_bands (
    band_key bigint NOT NULL,
    doc_id   bigint NOT NULL,
    seen_at  timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_minhash_bands_key_idx ON document_minhash_bands (band_key) INCLUDE (seen_at, doc_id);
CREATE INDEX document_minhash_bands_doc_id_idx ON document_minhash_bands USING brin (doc_id);
COMMENT ON TABLE document_minhash_bands IS
    'MinHash band values of stored documents (32 per document with a signature): the MinHash layer''s candidate lookup; partitioned by ISO week';

-- week partitions for every day any table holds
SELECT dedup_ensure_partitions(min(day), max(last_day)) FROM dedup_partitions HAVING count(*) > 0;

INSERT INTO document_clauses (clause_hash, doc_id, seen_at)
SELECT clause_hash, doc_id, seen_at FROM document_clauses_by_day;
INSERT INTO document_minhash_bands (band_key, doc_id, seen_at)
SELECT band_key, doc_id, seen_at FROM document_minhash_bands_by_day;
DROP TABLE document_clauses_by_day;
DROP TABLE document_minhash_bands_by_day;
ANALYZE document_clauses;
ANALYZE document_minhash_bands;

-- Generic plans for the statements inside dedup_ingest. Under the default
-- (auto) the plan cache compares a generic plan's cost, which counts every
-- partition the window might hold, with a custom plan's, which counts the few
-- the values select; it keeps choosing custom plans, and planning over the day
-- partitions then costs more than running the statement. Run-time pruning
-- gives generic plans the same partitions. Measured on 7k documents over 7
-- days, ingest: 4.26 -> 3.25 ms a document (under auto_explain); 1 day: 2.48 ->
-- 1.92. (A later CREATE OR REPLACE of dedup_ingest must set this again.)
ALTER FUNCTION dedup_ingest(jsonb, boolean, jsonb) SET plan_cache_mode = force_generic_plan;
