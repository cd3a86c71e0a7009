-- dedup-pg revision 0030: numbers read with their date unit (applied by
-- migrations/versions/0030_numbers_read_with_their_date.py).
--
-- Why: the fact check's number rules (dedup_facts_verdict) compare the
-- numbers two texts hold as bare numbers. A daily bulletin for another day
-- whose figures did not change ("截至2月24日24时" / "截至2月28日24时") then
-- differs on one side only (the 24 of the old date is the other's "24时"),
-- and was merged: 12 of the validation set's Qinghai bulletins. Months and
-- days are now also read with their unit ("24日", "28日"). Validation set
-- (bench/validation.py): templated pairs merged 31 -> 17 of 846, same-story
-- pairs found 339 -> 339 of 559; tuning set, bench/quality.py and the 11,377
-- verdicts of bench/bytes.py: unchanged. Nothing stored changes (the rule
-- reads the bodies).

-- function:dedup_text_numbers, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_text_numbers(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH t AS (SELECT regexp_replace(dedup_fact_text(p_text), '[0-9.]+\s*$', '') AS t)
    SELECT coalesce(array_agg(DISTINCT n), '{}') FROM (
        SELECT CASE WHEN m[1] LIKE '%.%' THEN m[1]
                    ELSE coalesce(nullif(ltrim(m[1], '0'), ''), '0') END AS n
          FROM t, regexp_matches(t.t, '([0-9]+(?:\.[0-9]+)?)', 'g') m
        UNION ALL
        SELECT coalesce(nullif(ltrim(m[1], '0'), ''), '0') || m[2]
          FROM t, regexp_matches(t.t, '([0-9]+)\s*(月|日|号)', 'g') m) x
$$;
COMMENT ON FUNCTION dedup_text_numbers(text) IS NULL;
