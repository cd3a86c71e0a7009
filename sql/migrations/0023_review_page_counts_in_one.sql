-- dedup-pg revision 0023: Review page counts in one statement (applied by
-- migrations/versions/0023_review_page_counts_in_one.py).
--
-- Why: the review page counted its queue a layer in five statements (one
-- capped count each), since Citus refuses a count correlated with a list of
-- layers. On one node each statement was planned over every day partition:
-- bench/review_queue.py's queue pages (100,310 candidates over 30 days) cost
-- 13-19 ms more than with one statement.
--
-- Now: review_layer_counts counts the five layers in one statement on one node
-- (planned once); its Citus form (sql/citus/70_review.sql) runs the five
-- statements inside the function. The page makes one call either way.

-- function:review_layer_counts, from sql/schema/70_review.sql
CREATE OR REPLACE FUNCTION review_layer_counts(p_status text, p_source text DEFAULT NULL,
                                    p_min_score double precision DEFAULT NULL,
                                    p_max_score double precision DEFAULT NULL,
                                    p_day date DEFAULT NULL, p_cap bigint DEFAULT 10000)
RETURNS TABLE (layer text, n bigint)
LANGUAGE sql STABLE AS $$
    SELECT l.layer, k.n
      FROM unnest(ARRAY['exact', 'simhash', 'containment', 'minhash', 'semantic'])
               WITH ORDINALITY AS l(layer, o),
           LATERAL (SELECT count(*) AS n FROM (
               SELECT 1 FROM duplicate_candidates c
                WHERE c.status = p_status AND c.layer = l.layer
                  AND (p_source IS NULL OR c.source = p_source)
                  AND (p_min_score IS NULL OR c.score >= p_min_score)
                  AND (p_max_score IS NULL OR c.score <= p_max_score)
                  AND (p_day IS NULL OR (c.seen_at >= (p_day::timestamp AT TIME ZONE 'UTC')
                                         AND c.seen_at < ((p_day + 1)::timestamp AT TIME ZONE 'UTC')))
                LIMIT p_cap) x) k
     ORDER BY l.o
$$;
COMMENT ON FUNCTION review_layer_counts(text, text, double precision, double precision, date, bigint) IS
    'Candidates of one status per layer under the review page''s filters (source, score range, UTC day), each counted up to p_cap.';
