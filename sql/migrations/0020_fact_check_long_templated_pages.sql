-- dedup-pg revision 0020: Fact check: long templated pages alike but for their numbers go to review; a copied body keeps a third of the original (applied by
-- migrations/versions/0020_fact_check_long_templated_pages.py).
--
-- Why (issue 21): the short-template rule stopped at 1,000 characters, so a
-- long templated page that differs from another only in its figures (a price
-- note over one spec sheet: many shared facts, so the facts share stays under
-- facts_disagreement_share) was merged; and the copied-body exception asked
-- the original to keep 60% of its clauses, which the lead a copy dropped
-- denies a short text (bench/quality.py's lead rewrites: 92.3% found). Longer
-- texts whose numbers differ on both sides now go to review when, numbers
-- masked, their clause sets are alike (dedup_masked_similarity,
-- facts_template_masked_similarity); the original's share of a copied body is
-- its own setting (facts_copied_body_matched_share). Chosen on the tuning set
-- and bench/quality.py (BENCHMARKS.md, "Quality on pairs the rules never saw").
INSERT INTO dedup_settings (name, value, description) VALUES
 ('facts_template_masked_similarity', '0.9',
  'a near-duplicate match of longer texts (over facts_template_max_chars) goes to review when each holds a number the other lacks and, numbers masked, their clause sets have at least this Jaccard: the same page but for its figures (another day''s price over one spec sheet); null = off'),
 ('facts_copied_body_matched_share', '0.3',
  'for facts_copied_body_share: the share of the matched text''s own clauses a copied body must keep (the lead a copy dropped is a large part of a short text); null = facts_copied_body_share');
UPDATE dedup_settings SET description =
  'a lead rewritten over a copied body is a duplicate: when the incoming text keeps at least this share of its clauses in common with the matched one (3 or more; the matched text facts_copied_body_matched_share of its own) and their openings are unlike (facts_rewritten_lead_similarity), the fact check lets the match through and containment''s review band takes it as a duplicate; null = off'
 WHERE name = 'facts_copied_body_share';

-- function:dedup_copied_body, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_copied_body(p_a_body text, p_b_body text, p_shared integer,
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
COMMENT ON FUNCTION dedup_copied_body(text, text, integer, integer, integer, jsonb) IS NULL;

-- function:dedup_masked_similarity, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_masked_similarity(p_a text, p_b text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH m AS (
        SELECT regexp_replace(regexp_replace(normalize(coalesce(p_a, ''), NFKC), '[ \t\r\f\v]+', '', 'g'),
                              '[0-9]+(\.[0-9]+)?', '#', 'g') AS a,
               regexp_replace(regexp_replace(normalize(coalesce(p_b, ''), NFKC), '[ \t\r\f\v]+', '', 'g'),
                              '[0-9]+(\.[0-9]+)?', '#', 'g') AS b
    ), ca AS (
        SELECT DISTINCT c FROM m, regexp_split_to_table(m.a, '[。!?;,:\n]') c WHERE length(c) >= 8
    ), cb AS (
        SELECT DISTINCT c FROM m, regexp_split_to_table(m.b, '[。!?;,:\n]') c WHERE length(c) >= 8
    )
    SELECT coalesce((SELECT count(*) FROM ca JOIN cb USING (c))::double precision
                    / nullif((SELECT count(*) FROM (SELECT c FROM ca UNION SELECT c FROM cb) u), 0), 0)
$$;
COMMENT ON FUNCTION dedup_masked_similarity(text, text) IS NULL;

-- function:dedup_facts_verdict, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_facts_verdict(p_a text[], p_b text[], p_share double precision,
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
BEGIN
    IF p_share IS NULL OR p_a IS NULL OR p_b IS NULL THEN
        RETURN NULL;
    END IF;
    v_both := dedup_facts_disagree(p_a, p_b, p_share, NULL);
    IF (v_max_chars IS NOT NULL AND least(length(p_a_body), length(p_b_body)) <= v_max_chars)
       OR v_masked IS NOT NULL THEN
        v_a := dedup_text_numbers(p_a_body);
        v_b := dedup_text_numbers(p_b_body);
        v_template := EXISTS (SELECT unnest(v_a) EXCEPT SELECT unnest(v_b))
                      AND EXISTS (SELECT unnest(v_b) EXCEPT SELECT unnest(v_a));
        IF v_template AND NOT coalesce(least(length(p_a_body), length(p_b_body)) <= v_max_chars, false) THEN
            -- longer than the short rule's cap (or that rule off): only when
            -- the texts are the same but for their numbers
            v_template := dedup_masked_similarity(p_a_body, p_b_body) >= v_masked;
        END IF;
    END IF;
    IF (v_both OR v_template)
       AND NOT dedup_copied_body(p_a_body, p_b_body, p_shared, p_a_n, p_b_n, p_settings) THEN
        RETURN 'differ';
    END IF;
    IF p_added IS NOT NULL AND dedup_facts_disagree(p_a, p_b, 2.0, p_added) THEN
        RETURN 'added';  -- a share of 2 never holds: the added rule alone
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION dedup_facts_verdict(text[], text[], double precision, double precision, text, text, integer, integer, integer, jsonb) IS NULL;
