-- dedup-pg on Citus: the review views (sql/schema/70_review.sql) as a Citus
-- coordinator can run them; the review functions themselves run unchanged
-- (tests/test_citus.py). Only what is marked "Citus:" differs.

-- from sql/schema/70_review.sql review_queue: sha256 cb7d0b07c036148b
CREATE OR REPLACE VIEW review_queue AS
-- Citus: the pending candidates first (a CTE Citus runs on its own), then their
-- matched documents: a LEFT JOIN of two tables distributed by other columns
-- is refused ("complex joins are only supported when ..."). The columns it
-- shows, named (not *: a view on every column would hold up a revision's
-- ALTER TABLE ... DROP COLUMN)
WITH c AS MATERIALIZED (
    SELECT candidate_id, created_at, layer, score, distance, source, external_id, title, body,
           matched_doc_id, matched_seen_at
      FROM duplicate_candidates WHERE status = 'pending')
SELECT c.candidate_id AS id,
       c.created_at::timestamp(0) AS queued_at,
       c.layer,
       round(c.score::numeric, 3) AS score,
       c.distance,
       c.source,
       c.external_id,
       c.title,
       length(c.body) AS length,
       left(regexp_replace(c.body, '\s+', ' ', 'g'), 80) AS text,
       c.matched_doc_id,
       d.source AS matched_source,
       d.external_id AS matched_external_id,
       d.title AS matched_title,
       length(d.body) AS matched_length,
       left(regexp_replace(d.body, '\s+', ' ', 'g'), 80) AS matched_text
  FROM c
  LEFT JOIN documents d ON d.doc_id = c.matched_doc_id AND d.seen_at = c.matched_seen_at
 ORDER BY c.created_at, c.candidate_id;
COMMENT ON VIEW review_queue IS
    'Pending reviews, oldest first: incoming and matched text side by side. Work it with dismiss_candidate(id, note) / confirm_candidate(id, note).';

-- from sql/schema/70_review.sql document_clusters: sha256 590f9770116a4dc4
-- Citus: the sightings as a subquery Citus runs first and sends to the
-- documents' shards (the LEFT JOIN of tables distributed by other columns is
-- refused): every query of the view reads all sightings, so filter sightings,
-- not this view, on a large cluster
CREATE OR REPLACE VIEW document_clusters AS
SELECT d.doc_id,
       d.title,
       d.seen_at AS first_seen_at,
       d.source AS first_source,
       d.url AS first_url,
       count(s.*) AS sightings,
       count(DISTINCT s.source) AS sources,
       count(s.*) FILTER (WHERE s.verdict = 'duplicate') AS duplicates,
       count(s.*) FILTER (WHERE s.layer = 'exact' AND s.verdict = 'duplicate') AS exact,
       count(s.*) FILTER (WHERE s.layer IN ('simhash', 'containment', 'minhash', 'semantic') AND s.verdict = 'duplicate')
           AS near,
       max(s.seen_at) AS last_seen_at,
       array_agg(DISTINCT s.source) FILTER (WHERE s.source IS NOT NULL) AS source_list
  FROM documents d
  LEFT JOIN (SELECT * FROM document_sightings) s ON s.doc_id = d.doc_id
 GROUP BY d.doc_id, d.title, d.seen_at, d.source, d.url;
COMMENT ON VIEW document_clusters IS
    'Each kept document with its duplicates: how many sites carried the story, who first, when last.';

-- from sql/schema/70_review.sql review_layer_counts: sha256 3e6281782afebe0c
CREATE OR REPLACE FUNCTION review_layer_counts(p_status text, p_source text DEFAULT NULL,
                                               p_min_score double precision DEFAULT NULL,
                                               p_max_score double precision DEFAULT NULL,
                                               p_day date DEFAULT NULL, p_cap bigint DEFAULT 10000)
RETURNS TABLE (layer text, n bigint)
-- Citus: one capped count a layer, each its own statement: a count correlated
-- with a list of layers (unnest or VALUES) is refused ("correlated subqueries
-- are not supported ...")
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_layer text;
BEGIN
    FOREACH v_layer IN ARRAY ARRAY['exact', 'simhash', 'containment', 'minhash', 'semantic'] LOOP
        layer := v_layer;
        SELECT count(*) INTO n FROM (
            SELECT 1 FROM duplicate_candidates c
             WHERE c.status = p_status AND c.layer = v_layer
               AND (p_source IS NULL OR c.source = p_source)
               AND (p_min_score IS NULL OR c.score >= p_min_score)
               AND (p_max_score IS NULL OR c.score <= p_max_score)
               AND (p_day IS NULL OR (c.seen_at >= (p_day::timestamp AT TIME ZONE 'UTC')
                                      AND c.seen_at < ((p_day + 1)::timestamp AT TIME ZONE 'UTC')))
             LIMIT p_cap) x;
        RETURN NEXT;
    END LOOP;
END $$;
