-- dedup-pg views, revision 0001 (applied by migrations/versions/0001_core.py;
-- revision 0002 replaces dedup_daily_stats and its downgrade re-applies this file).

-- Per day and source: what came in and what was decided.
CREATE VIEW dedup_daily_stats AS
SELECT (s.seen_at AT TIME ZONE 'UTC')::date AS day,
       s.source,
       count(*) AS ingested,
       count(*) FILTER (WHERE s.verdict = 'new') AS new,
       count(*) FILTER (WHERE s.verdict = 'review') AS review,
       count(*) FILTER (WHERE s.layer = 'exact' AND s.verdict = 'duplicate') AS exact,
       count(*) FILTER (WHERE s.layer = 'simhash' AND s.verdict = 'duplicate') AS simhash,
       count(*) FILTER (WHERE s.layer = 'containment' AND s.verdict = 'duplicate') AS containment,
       count(*) FILTER (WHERE s.layer = 'semantic' AND s.verdict = 'duplicate') AS semantic
  FROM document_sightings s
 GROUP BY 1, 2;

COMMENT ON VIEW dedup_daily_stats IS 'Ingest verdicts per UTC day and source (from document_sightings).';
