-- dedup-pg revision 0035: The fact check folds each body once (applied by
-- migrations/versions/0035_the_fact_check_folds_each.py).
--
-- Why: each rule of the fact check that reads the bodies folded them anew
-- (dedup_fact_text: NFKC and the invisible characters, ~180 us of ~220 for a
-- 1,300-character sina2018 body): the number rules, the masked similarity of
-- long templated pages, and revision 0033's money rule, up to three times a
-- body. Their readers now take folded texts (dedup_folded_numbers,
-- dedup_folded_masked_similarity, dedup_folded_amounts; the dedup_text_numbers,
-- dedup_masked_similarity and dedup_text_amounts of before fold and call them),
-- and dedup_facts_verdict folds each body once. The same answers; nothing
-- stored changes.

-- function:dedup_folded_numbers, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_folded_numbers(p_folded text)
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
COMMENT ON FUNCTION dedup_folded_numbers(text) IS NULL;

-- function:dedup_text_numbers, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_text_numbers(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT dedup_folded_numbers(dedup_fact_text(p_text))
$$;
COMMENT ON FUNCTION dedup_text_numbers(text) IS NULL;

-- function:dedup_folded_masked_similarity, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_folded_masked_similarity(p_fa text, p_fb text)
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
COMMENT ON FUNCTION dedup_folded_masked_similarity(text, text) IS NULL;

-- function:dedup_masked_similarity, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_masked_similarity(p_a text, p_b text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT dedup_folded_masked_similarity(dedup_fact_text(p_a), dedup_fact_text(p_b))
$$;
COMMENT ON FUNCTION dedup_masked_similarity(text, text) IS NULL;

-- function:dedup_folded_amounts, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_folded_amounts(p_folded text)
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
COMMENT ON FUNCTION dedup_folded_amounts(text) IS NULL;

-- function:dedup_text_amounts, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_text_amounts(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT dedup_folded_amounts(dedup_fact_text(p_text))
$$;
COMMENT ON FUNCTION dedup_text_amounts(text) IS NULL;

-- function:dedup_facts_verdict, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_facts_verdict(p_a integer[], p_b integer[], p_share double precision,
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
COMMENT ON FUNCTION dedup_facts_verdict(integer[], integer[], double precision, double precision, text, text, integer, integer, integer, jsonb) IS NULL;
