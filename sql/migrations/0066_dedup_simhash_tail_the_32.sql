-- dedup-pg revision 0066: dedup_simhash_tail: the 32 bits after a SimHash band (applied by
-- migrations/versions/0066_dedup_simhash_tail_the_32.py).
--
-- Why: issue 19 (the index a check reads at 10M documents). Revision 0067
-- gives each row of document_simhash_bands a tail, the 32 bits of its simhash
-- after its band's, and its index carries the tail in place of simhash and
-- doc_id; this function makes a band's tail. It is a revision of its own
-- because 0067 fills the tails of the stored rows with it, and a revision's
-- hand-written statements come before its definitions.
--
-- No hand-written changes: the definition below is the whole revision.

-- function:dedup_simhash_tail, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_simhash_tail(p_simhash bigint, p_band integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (((p_simhash >> (16 * ((p_band + 1) % 4))) & 65535)
            + (((p_simhash >> (16 * ((p_band + 2) % 4))) & 65535) << 16)
            - (((p_simhash >> (16 * ((p_band + 2) % 4) + 15)) & 1) << 32))::integer
$$;
COMMENT ON FUNCTION dedup_simhash_tail(bigint, integer) IS NULL;
