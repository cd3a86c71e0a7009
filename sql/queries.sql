-- Runtime queries, one named block each (parsed by dedup_pg.sqlfiles.queries).
-- Python passes data; the functions they call decide.

-- name: ingest
-- Check and store one batch (see dedup_ingest in 0001_functions.sql).
SELECT pos, verdict, layer, doc_id, matched_doc_id, matched_external_id, score, distance, candidate_id
  FROM dedup_ingest(%(items)s, %(dry_run)s);

-- name: ensure_partitions
SELECT dedup_ensure_partitions(%(from)s, %(to)s);

-- name: settings
SELECT name, value FROM dedup_settings;

-- name: set_setting
UPDATE dedup_settings SET value = %(value)s, updated_at = now() WHERE name = %(name)s RETURNING name;

-- name: record_error
INSERT INTO ingest_errors (external_id, source, error, payload)
VALUES (%(external_id)s, %(source)s, %(error)s, %(payload)s);

-- name: stats
SELECT day, source, ingested, new, review, exact, simhash, containment, semantic
  FROM dedup_daily_stats
 ORDER BY day DESC, source NULLS FIRST;

-- name: totals
SELECT (SELECT count(*) FROM documents) AS documents,
       (SELECT count(*) FROM document_sightings) AS sightings,
       (SELECT count(*) FROM duplicate_candidates WHERE status = 'auto') AS near_duplicates,
       (SELECT count(*) FROM duplicate_candidates WHERE status = 'pending') AS pending_review,
       (SELECT count(*) FROM ingest_errors) AS errors;
