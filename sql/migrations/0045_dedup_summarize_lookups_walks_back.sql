-- dedup-pg revision 0045: dedup_summarize_lookups walks back from the last range (applied by
-- migrations/versions/0045_dedup_summarize_lookups_walks_back.py).
--
-- Why: dedup_ingest calls dedup_summarize_lookups after every batch (revision
-- 0044), a batch of one text included, and it cost more as the store grew:
-- brin_summarize_new_values reads the revmap entry of every block range of a
-- week partition (the clause index has ranges of 8 pages: ~2,300 of them at
-- 300k documents), and the query that found the indexes joined the partition
-- names to all of pg_index and was planned anew at every call. On the 300k
-- store of bench/growth.py, the function alone with nothing new: 416 -> 79 us
-- a call (medians of 6 rounds of 200 calls); single-document ingests of real
-- sina2018 articles, blocks of 49 alternating: mean 6.01 -> 5.11 ms, p50
-- 4.70 -> 4.27 ms. Now each partition's BRIN index is found through the index
-- on pg_index.indrelid, and the summarizing walks back from the range of the
-- last page to the first range already summarized (rows are appended, and the
-- last range keeps its summary as it fills).
--
-- No hand-written changes: the definitions below are the whole revision.

-- function:dedup_summarize_lookups, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_summarize_lookups(p_seen timestamptz[])
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
COMMENT ON FUNCTION dedup_summarize_lookups(timestamptz[]) IS NULL;
