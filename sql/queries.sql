-- Runtime queries, one named block each (parsed by dedup_pg.sqlfiles.queries).
-- Python passes data; the functions they call decide.

-- name: ingest
-- Check and store one batch (see dedup_ingest in 0001_functions.sql).
SELECT pos, verdict, layer, doc_id, matched_doc_id, matched_external_id, score, distance, candidate_id
  FROM dedup_ingest(%(items)s, %(dry_run)s, %(overrides)s);

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
SELECT day, source, ingested, new, exact, simhash, containment, semantic, review, review_pending,
       restored, dismissed, confirmed, errors
  FROM dedup_daily_stats
 ORDER BY day DESC, source NULLS FIRST;

-- name: totals
SELECT (SELECT count(*) FROM documents) AS documents,
       (SELECT count(*) FROM document_sightings) AS sightings,
       (SELECT count(*) FROM duplicate_candidates WHERE status = 'auto') AS near_duplicates,
       (SELECT count(*) FROM duplicate_candidates WHERE status = 'pending') AS pending_review,
       (SELECT count(*) FROM ingest_errors) AS errors;

-- name: review_list
SELECT id, queued_at, layer, score, source, external_id, title, matched_doc_id, matched_title
  FROM review_queue
 LIMIT %(limit)s;

-- name: review_show
-- One candidate with both texts in full.
SELECT c.candidate_id, c.status, c.layer, c.score, c.distance, c.created_at, c.decided_by, c.decided_at, c.note,
       c.external_id, c.source, c.url, c.title, coalesce(c.body, d.body) AS body, c.doc_id,
       c.matched_doc_id, d.external_id AS matched_external_id, d.source AS matched_source,
       d.url AS matched_url, d.title AS matched_title, d.body AS matched_body, c.thresholds
  FROM duplicate_candidates c
  LEFT JOIN documents d ON d.doc_id = c.matched_doc_id AND d.seen_at = c.matched_seen_at
 WHERE c.candidate_id = %(id)s;

-- name: restore
SELECT candidate_id, status, doc_id FROM restore_candidate(%(id)s, %(note)s, %(by)s);

-- name: confirm
SELECT candidate_id, status, doc_id FROM confirm_candidate(%(id)s, %(note)s, %(by)s);

-- name: dismiss
SELECT candidate_id, status, doc_id FROM dismiss_candidate(%(id)s, %(note)s, %(by)s);

-- name: metric_verdicts
-- Sightings by source, verdict and layer (everything still in the database).
SELECT coalesce(source, ''), verdict, coalesce(layer, ''), count(*)
  FROM document_sightings GROUP BY 1, 2, 3;

-- name: metric_pending
SELECT coalesce(source, ''), count(*) FROM duplicate_candidates WHERE status = 'pending' GROUP BY 1;

-- name: metric_errors
SELECT coalesce(source, ''), count(*) FROM ingest_errors GROUP BY 1;

-- name: metric_documents
SELECT count(*) FROM documents;

-- name: partitions
SELECT table_name, day, partition_name, approx_rows, bytes
  FROM dedup_partitions ORDER BY day, table_name;

-- name: window_days
SELECT (value #>> '{}')::integer FROM dedup_settings WHERE name = 'window_days';
