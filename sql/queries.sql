-- Runtime queries, one named block each (parsed by dedup_pg.sqlfiles.queries).
-- Python passes data; the functions they call decide.

-- name: ingest
-- Check and store one batch (see dedup_ingest in sql/schema/60_ingest.sql): the
-- hash layers, and which items the semantic layer must embed. Every column of
-- its RETURNS TABLE, read by name (dedup_pg.verdicts.VerdictRow).
SELECT * FROM dedup_ingest(%(items)s, %(dry_run)s, %(overrides)s);

-- name: ingest_semantic
-- The semantic layer, next in the same transaction (dedup_ingest_semantic in
-- sql/schema/50_semantic.sql); read as dedup_pg.verdicts.VerdictRow too.
SELECT * FROM dedup_ingest_semantic(%(items)s, %(stored)s, %(model_id)s::smallint, %(dry_run)s, %(overrides)s);

-- name: documents_without_embedding
SELECT d.doc_id, d.seen_at, d.title, d.body
  FROM documents d
 WHERE d.doc_id = ANY (%(doc_ids)s)
   AND NOT EXISTS (SELECT 1 FROM document_embeddings e
                    WHERE e.doc_id = d.doc_id AND e.seen_at = d.seen_at AND e.model_id = %(model_id)s);

-- name: models
SELECT model_id, name, dimensions, strategy, status, thresholds, index_kind FROM embedding_models ORDER BY model_id;

-- name: active_model
SELECT model_id, name, dimensions, strategy, status, thresholds, index_kind FROM embedding_models WHERE status = 'active';

-- name: register_model
INSERT INTO embedding_models (name, dimensions, strategy, thresholds, index_kind)
VALUES (%(name)s, %(dimensions)s, %(strategy)s, %(thresholds)s, %(index_kind)s)
RETURNING model_id, name, dimensions, strategy, status, thresholds, index_kind;

-- name: set_index_kind
UPDATE embedding_models SET index_kind = %(index_kind)s WHERE model_id = %(model_id)s;

-- name: model_index_sql
SELECT dedup_model_index_sql(%(model_id)s::smallint, %(table)s::regclass, %(index)s, %(concurrently)s, %(only)s);

-- name: model_index_name
SELECT dedup_model_index_name(%(model_id)s::smallint);

-- name: partitions_without_index
-- Day partitions of document_embeddings that have no partition of the index yet.
SELECT p.partition_name
  FROM dedup_partitions p
 WHERE p.table_name = 'document_embeddings'
   AND NOT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                    WHERE i.inhparent = to_regclass(%(index)s) AND x.indrelid = p.partition_name::regclass)
 ORDER BY p.day;

-- name: retire_active_model
UPDATE embedding_models SET status = 'retired', retired_at = now()
 WHERE status = 'active' AND model_id <> %(model_id)s;

-- name: activate_model
UPDATE embedding_models SET status = 'active', activated_at = now(), retired_at = NULL
 WHERE model_id = %(model_id)s;

-- name: delete_model_embeddings
DELETE FROM document_embeddings WHERE model_id = %(model_id)s;

-- name: delete_model
DELETE FROM embedding_models WHERE model_id = %(model_id)s;

-- name: reembed_count
-- Stored documents in the look-back window before the newest (or all) without
-- a vector of the model.
SELECT count(*)
  FROM documents d,
       (SELECT value::text::integer AS days, (SELECT max(seen_at) FROM documents) AS newest
          FROM dedup_settings WHERE name = 'window_days') w
 WHERE (%(all)s OR w.days = 0 OR d.seen_at >= w.newest - make_interval(days => w.days))
   AND NOT EXISTS (SELECT 1 FROM document_embeddings e
                    WHERE e.doc_id = d.doc_id AND e.seen_at = d.seen_at AND e.model_id = %(model_id)s);

-- name: reembed_batch
SELECT d.doc_id, d.seen_at, d.title, d.body
  FROM documents d,
       (SELECT value::text::integer AS days, (SELECT max(seen_at) FROM documents) AS newest
          FROM dedup_settings WHERE name = 'window_days') w
 WHERE (%(all)s OR w.days = 0 OR d.seen_at >= w.newest - make_interval(days => w.days))
   AND NOT EXISTS (SELECT 1 FROM document_embeddings e
                    WHERE e.doc_id = d.doc_id AND e.seen_at = d.seen_at AND e.model_id = %(model_id)s)
 ORDER BY d.seen_at DESC, d.doc_id
 LIMIT %(limit)s;

-- name: insert_embedding
INSERT INTO document_embeddings (doc_id, seen_at, model_id, embedding)
VALUES (%(doc_id)s, %(seen_at)s, %(model_id)s, %(embedding)s::halfvec)
ON CONFLICT DO NOTHING;

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
SELECT day, source, ingested, new, exact, simhash, containment, minhash, semantic, review, review_pending,
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

-- name: restore
SELECT candidate_id, status, doc_id FROM restore_candidate(%(id)s, %(note)s, %(by)s);

-- name: confirm
SELECT candidate_id, status, doc_id FROM confirm_candidate(%(id)s, %(note)s, %(by)s);

-- name: dismiss
SELECT candidate_id, status, doc_id FROM dismiss_candidate(%(id)s, %(note)s, %(by)s);

-- name: review_queue_up
-- The review page's queue (dedup_pg/web/review.py): candidates of one status
-- after the keyset (created_at, candidate_id), ascending (duplicate_candidates_queue_idx;
-- bench/review_queue.py). A NULL filter matches everything; day is the UTC day
-- of seen_at, the partition key. The matched documents' titles and sources
-- come from review_matched_titles (a candidate and its matched document are
-- distributed apart on Citus, where the two do not join).
SELECT c.candidate_id, c.created_at, c.seen_at, c.status, c.layer, c.score, c.distance, c.source,
       c.external_id, c.title, left(c.body, 120) AS snippet, c.text_length, c.matched_doc_id,
       c.matched_seen_at, c.decided_by, c.decided_at
  FROM duplicate_candidates c
 WHERE c.status = %(status)s
   AND (c.created_at, c.candidate_id) > (coalesce(%(at)s::timestamptz, '-infinity'), coalesce(%(id)s::bigint, 0))
   AND (%(layer)s::text IS NULL OR c.layer = %(layer)s)
   AND (%(source)s::text IS NULL OR c.source = %(source)s)
   AND (%(min_score)s::float8 IS NULL OR c.score >= %(min_score)s)
   AND (%(max_score)s::float8 IS NULL OR c.score <= %(max_score)s)
   AND (%(day)s::date IS NULL OR (c.seen_at >= (%(day)s::date::timestamp AT TIME ZONE 'UTC')
                                  AND c.seen_at < ((%(day)s::date + 1)::timestamp AT TIME ZONE 'UTC')))
 ORDER BY c.created_at, c.candidate_id
 LIMIT %(limit)s;

-- name: review_queue_down
-- The same, before the keyset, descending.
SELECT c.candidate_id, c.created_at, c.seen_at, c.status, c.layer, c.score, c.distance, c.source,
       c.external_id, c.title, left(c.body, 120) AS snippet, c.text_length, c.matched_doc_id,
       c.matched_seen_at, c.decided_by, c.decided_at
  FROM duplicate_candidates c
 WHERE c.status = %(status)s
   AND (c.created_at, c.candidate_id) < (coalesce(%(at)s::timestamptz, 'infinity'),
                                         coalesce(%(id)s::bigint, 9223372036854775807))
   AND (%(layer)s::text IS NULL OR c.layer = %(layer)s)
   AND (%(source)s::text IS NULL OR c.source = %(source)s)
   AND (%(min_score)s::float8 IS NULL OR c.score >= %(min_score)s)
   AND (%(max_score)s::float8 IS NULL OR c.score <= %(max_score)s)
   AND (%(day)s::date IS NULL OR (c.seen_at >= (%(day)s::date::timestamp AT TIME ZONE 'UTC')
                                  AND c.seen_at < ((%(day)s::date + 1)::timestamp AT TIME ZONE 'UTC')))
 ORDER BY c.created_at DESC, c.candidate_id DESC
 LIMIT %(limit)s;

-- name: review_layer_counts
-- The queue's counts a layer (sql/schema/70_review.sql review_layer_counts).
SELECT layer, n
  FROM review_layer_counts(%(status)s, %(source)s, %(min_score)s, %(max_score)s, %(day)s, %(cap)s);

-- name: review_pending_total
SELECT count(*) AS n FROM duplicate_candidates WHERE status = 'pending';

-- name: review_key
-- A candidate's place in its queue (the keyset of next / previous).
SELECT c.created_at, c.candidate_id FROM duplicate_candidates c WHERE c.candidate_id = %(id)s;

-- name: review_candidate
-- One candidate with everything the page shows of it (its body is NULL when it
-- is the matched document's: an exact duplicate), the thresholds it was
-- decided under and what review_fact_check needs (its clauses). The matched
-- document is review_matched_document's.
SELECT c.candidate_id, c.status, c.layer, c.score, c.distance, c.thresholds, c.created_at, c.seen_at,
       c.published_at, c.decided_by, c.decided_at, c.note, c.external_id, c.source, c.url, c.title,
       c.body, c.text_length, c.facts, c.doc_id, c.matched_doc_id, c.matched_seen_at, c.clauses
  FROM duplicate_candidates c
 WHERE c.candidate_id = %(id)s;

-- name: review_matched_document
-- A candidate's matched document, by its key (no row once its day is dropped).
SELECT d.external_id AS matched_external_id, d.source AS matched_source, d.url AS matched_url,
       d.title AS matched_title, d.body AS matched_body, d.published_at AS matched_published_at,
       d.ingested_at AS matched_ingested_at, d.text_length AS matched_text_length,
       d.facts AS matched_facts, d.clause_count AS matched_clause_count
  FROM documents d
 WHERE d.doc_id = %(doc_id)s AND d.seen_at = %(seen_at)s;

-- name: review_matched_titles
-- The matched documents of a queue page: title and source by key (the
-- seen_at list keeps the read to those days' partitions).
SELECT d.doc_id, d.seen_at, d.source, d.title
  FROM documents d
 WHERE d.doc_id = ANY (%(docs)s::bigint[]) AND d.seen_at = ANY (%(seen)s::timestamptz[]);

-- name: review_fact_check
-- The fact check of a candidate's pair as dedup_ingest makes it: SQL's
-- dedup_facts_verdict ('differ', 'added' or NULL) and dedup_copied_body, on
-- review_candidate's and review_matched_document's rows. Its shares are those in force at the decision
-- (%(thresholds)s); the rules it holds no threshold for
-- (facts_template_max_chars, facts_template_masked_similarity,
-- facts_copied_body_share, ...) are the source's settings now. Clauses that
-- containment_boilerplate_docs stored documents other than the incoming
-- text's own hold are left out, as ingest does (holders counted up to 1,000);
-- the lead clauses are not stored, so the added-facts rule is asked as if the
-- incoming text did not open with the matched one's. Each CTE is one plain
-- statement (Citus plans them one by one).
WITH s AS MATERIALIZED (
    SELECT dedup_effective_settings(%(source)s) || %(thresholds)s::jsonb AS s
), held AS MATERIALIZED (
    SELECT r.clause_hash AS h, count(*) AS n
      FROM (SELECT dc.clause_hash, row_number() OVER (PARTITION BY dc.clause_hash) AS rn
              FROM document_clauses dc
             WHERE dc.clause_hash = ANY (%(clauses)s::bigint[])
               AND dc.doc_id IS DISTINCT FROM %(own)s::bigint) r
     WHERE r.rn <= 1000
     GROUP BY r.clause_hash
), matched_rows AS MATERIALIZED (
    SELECT dc.clause_hash AS h FROM document_clauses dc
     WHERE dc.clause_hash = ANY (%(clauses)s::bigint[])
       AND dc.doc_id = %(matched)s::bigint AND dc.seen_at = %(matched_seen_at)s::timestamptz
), matched_array AS MATERIALIZED (
    -- a long text's clauses beyond its rows (documents.clauses)
    SELECT h FROM documents d, unnest(d.clauses) h
     WHERE d.doc_id = %(matched)s::bigint AND d.seen_at = %(matched_seen_at)s::timestamptz
       AND h = ANY (%(clauses)s::bigint[])
), matched AS MATERIALIZED (
    SELECT h FROM matched_rows UNION SELECT h FROM matched_array
), n AS (
    SELECT (SELECT count(*) FROM matched m
             WHERE NOT EXISTS (SELECT 1 FROM held x, s WHERE x.h = m.h
                                  AND x.n >= (s.s ->> 'containment_boilerplate_docs')::integer))::integer AS shared,
           (SELECT count(*) FROM held x, s WHERE x.n >= (s.s ->> 'containment_boilerplate_docs')::integer)::integer
               AS boiler
)
SELECT dedup_facts_verdict(%(facts)s::integer[], %(matched_facts)s::integer[],
                           (s.s ->> 'facts_disagreement_share')::double precision,
                           (s.s ->> 'facts_added_share')::double precision,
                           %(body)s::text, %(matched_body)s::text, n.shared,
                           cardinality(%(clauses)s::bigint[]) - n.boiler,
                           %(matched_clause_count)s::integer - n.boiler, s.s) AS verdict,
       dedup_copied_body(%(body)s::text, %(matched_body)s::text, n.shared,
                         cardinality(%(clauses)s::bigint[]) - n.boiler,
                         %(matched_clause_count)s::integer - n.boiler, s.s) AS copied_body
  FROM s, n;

-- name: review_sightings
-- The story's sightings, first first: the matched document's and, while it is
-- kept, the candidate's own document's (its duplicates).
SELECT s.seen_at, s.source, s.url, s.external_id, s.verdict, s.layer, s.score, s.candidate_id, s.doc_id,
       count(*) OVER () AS total
  FROM document_sightings s
 WHERE s.doc_id = ANY(%(docs)s)
 ORDER BY s.seen_at, s.sighting_id
 LIMIT %(limit)s;

-- name: review_decide
-- A decision from the page, applied only if the candidate still has the
-- status the reviewer saw (dedup_review_decide in sql/schema/70_review.sql).
SELECT outcome, candidate_id, status, doc_id, decided_by, decided_at, note, action_id
  FROM dedup_review_decide(%(id)s, %(verb)s, %(expected)s, %(note)s, %(by)s);

-- name: review_undo
SELECT outcome, candidate_id, status, decided_by, decided_at, action_id, verb
  FROM dedup_review_undo(%(by)s);

-- name: review_action
-- One logged decision (the page's "you restored 5" after the redirect).
SELECT l.action_id, l.candidate_id, l.verb, l.from_status, l.to_status, l.acted_by, l.acted_at, l.note,
       l.undone_at
  FROM dedup_review_log l
 WHERE l.action_id = %(id)s;

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
SELECT table_name, day, partition_name, approx_rows, bytes, last_day
  FROM dedup_partitions ORDER BY day, table_name;

-- name: closed_week_btrees
-- Compaction (dedup_pg/partitions.py): the btree indexes of the lookup tables'
-- week partitions whose last day is before %(today)s, with whether they were
-- compacted already (fillfactor 100 among their options).
SELECT p.table_name, p.partition_name, i.relname AS index_name,
       coalesce('fillfactor=100' = ANY (i.reloptions), false) AS compacted
  FROM dedup_partitions p
  JOIN pg_index x ON x.indrelid = p.partition_name::regclass
  JOIN pg_class i ON i.oid = x.indexrelid
  JOIN pg_am a ON a.oid = i.relam
 WHERE p.table_name = ANY (%(tables)s) AND p.last_day < %(today)s AND a.amname = 'btree'
 ORDER BY p.day, p.table_name, i.relname;

-- name: invalid_rebuilds
-- Compaction (dedup_pg/partitions.py), after a REINDEX CONCURRENTLY failed:
-- the new index it left on %(index)s's table, invalid (named <index>_ccnew,
-- the name cut to fit and a number added when taken).
SELECT c.relname
  FROM pg_index x
  JOIN pg_class c ON c.oid = x.indexrelid
 WHERE x.indrelid = (SELECT indrelid FROM pg_index WHERE indexrelid = %(index)s::regclass)
   AND NOT x.indisvalid
   AND c.relname LIKE '%%\_ccnew%%';

-- name: keep_texts_of_days
-- Retention (dedup_pg/partitions.py), before any day is dropped.
SELECT dedup_keep_texts_of_days(%(cutoff)s);

-- name: drop_old_digests
-- Retention (dedup_pg/partitions.py): the digests of the days just dropped.
DELETE FROM document_digests g WHERE g.seen_at < %(cutoff)s;

-- name: window_days
SELECT (value #>> '{}')::integer FROM dedup_settings WHERE name = 'window_days';

-- name: template_patterns
-- Learned template noise (dedup_pg/templates.py): the enabled patterns.
SELECT source, kind, pattern_text FROM source_templates WHERE enabled;

-- name: template_versions
SELECT source, version FROM source_template_state;

-- name: template_states
SELECT source, docs_counted, last_doc_id FROM source_template_state
 WHERE %(source)s::text IS NULL OR source = %(source)s;

-- name: template_documents
-- Documents not yet counted, oldest first (doc_id follows arrival).
SELECT doc_id, source, body FROM documents
 WHERE doc_id > %(after)s AND source IS NOT NULL
   AND (%(source)s::text IS NULL OR source = %(source)s)
   AND seen_at >= now() - make_interval(days => %(days)s)
 ORDER BY doc_id;

-- name: template_count_lines
INSERT INTO source_template_lines AS l (source, line_hash, line_text, doc_count, docs_before)
SELECT %(source)s, h, t, c, %(docs_before)s
  FROM unnest(%(hashes)s::bigint[], %(texts)s::text[], %(counts)s::bigint[]) AS u(h, t, c)
    ON CONFLICT (source, line_hash)
    DO UPDATE SET doc_count = l.doc_count + excluded.doc_count, last_seen = now();

-- name: template_advance
INSERT INTO source_template_state AS s (source, docs_counted, last_doc_id, learned_at)
VALUES (%(source)s, %(docs)s, %(last_doc_id)s, now())
    ON CONFLICT (source) DO UPDATE
   SET docs_counted = excluded.docs_counted, last_doc_id = excluded.last_doc_id, learned_at = now();

-- name: template_promote
-- Refresh the counts of existing line patterns; add the lines now frequent
-- enough. Returns how many were added.
WITH stats AS (
    SELECT line_text, doc_count, last_seen, %(total)s - docs_before AS observed,
           least(1, doc_count::real / greatest(%(total)s - docs_before, 1)) AS share
      FROM source_template_lines WHERE source = %(source)s
), refreshed AS (
    UPDATE source_templates t SET doc_count = s.doc_count, share = s.share, last_seen = s.last_seen
      FROM stats s
     WHERE t.source = %(source)s AND t.kind = 'line' AND md5(t.pattern_text) = md5(s.line_text)
    RETURNING t.pattern_id
), added AS (
    INSERT INTO source_templates (source, kind, pattern_text, doc_count, share)
    SELECT %(source)s, 'line', line_text, doc_count, share FROM stats
     WHERE observed >= %(min_docs)s AND share >= %(min_share)s
        ON CONFLICT DO NOTHING
    RETURNING pattern_id
)
SELECT (SELECT count(*) FROM added), (SELECT count(*) FROM refreshed);

-- name: template_prune
-- Lines seen once and not since a day: not template, and most lines are these.
DELETE FROM source_template_lines
 WHERE source = %(source)s AND doc_count < 2 AND first_seen < now() - interval '1 day';

-- name: template_version
SELECT version FROM source_template_state WHERE source = %(source)s;

-- name: template_list
SELECT pattern_id, source, kind, enabled, round(share::numeric, 3) AS share, doc_count,
       learned_version, pattern_text
  FROM source_templates
 WHERE %(source)s::text IS NULL OR source = %(source)s
 ORDER BY source, share DESC, pattern_id;

-- name: template_set_enabled
UPDATE source_templates SET enabled = %(enabled)s WHERE pattern_id = ANY(%(ids)s) RETURNING pattern_id;

-- name: rebuild_pairs
-- A rebuild's candidate pairs from the hash layers (dedup_rebuild_pairs, sql/schema/90_rebuild.sql).
SELECT doc_id, seen_at, matched_doc_id, matched_seen_at, verdict, layer, score, distance, thresholds
  FROM dedup_rebuild_pairs(%(since)s, %(overrides)s);

-- name: rebuild_vector_pairs
-- A rebuild's semantic pairs: HNSW neighbours of the active model.
SELECT doc_id, seen_at, matched_doc_id, matched_seen_at, verdict, layer, score, distance, thresholds
  FROM dedup_rebuild_vector_pairs(%(since)s, %(overrides)s);

-- name: rebuild_documents
-- Every stored document in scope, oldest first: the order clusters are kept in.
SELECT doc_id, seen_at FROM documents
 WHERE seen_at >= coalesce(%(since)s, '-infinity'::timestamptz) ORDER BY seen_at, doc_id;

-- name: rebuild_lead_texts
-- Texts whose lead clauses the lead rule needs (they are not stored).
SELECT doc_id, title, body, source FROM documents WHERE doc_id = ANY (%(doc_ids)s);

-- name: rebuild_clauses_of
-- Their clause rows (rebuild_clause_arrays_of: a long text's clauses beyond them).
SELECT doc_id, array_agg(clause_hash) FROM document_clauses
 WHERE doc_id = ANY (%(doc_ids)s) AND seen_at BETWEEN %(lo)s AND %(hi)s GROUP BY doc_id;

-- name: rebuild_clause_arrays_of
SELECT doc_id, clauses FROM documents
 WHERE doc_id = ANY (%(doc_ids)s) AND seen_at BETWEEN %(lo)s AND %(hi)s AND clauses IS NOT NULL;

-- name: rebuild_demote
SELECT doc_id, candidate_id FROM dedup_rebuild_demote(%(links)s);

-- name: rebuild_review
SELECT doc_id, candidate_id FROM dedup_rebuild_review(%(reviews)s);

-- name: rebuild_load
SELECT pos, doc_id FROM dedup_rebuild_load(%(items)s);

-- name: rebuild_protected
-- Documents a rebuild never demotes: whitelisted texts, and documents a
-- reviewer kept (restored, dismissed).
-- (The whitelist as an array, not a correlated EXISTS: Citus cannot join a
-- distributed table with the coordinator's whitelist directly.)
SELECT d.doc_id FROM documents d
 WHERE d.content_sha1 = ANY (ARRAY(SELECT w.content_sha1 FROM dedup_whitelist w WHERE w.kind = 'text'))
UNION
SELECT c.doc_id FROM duplicate_candidates c
 WHERE c.status IN ('restored', 'dismissed') AND c.doc_id IS NOT NULL;

-- name: rebuild_reviewed
-- Documents that have a candidate of their own (queued, or decided by a
-- reviewer): a rebuild queues no second review for them.
SELECT DISTINCT doc_id FROM duplicate_candidates WHERE doc_id IS NOT NULL;

-- name: rebuild_start
INSERT INTO dedup_rebuild_runs (kind, fingerprint_key, since, total, last_seen_at, last_doc_id)
VALUES (%(kind)s, %(key)s, %(since)s, %(total)s, NULL, 0)
RETURNING run_id, last_seen_at, last_doc_id, done, changed;

-- name: rebuild_resumable
-- The unfinished re-fingerprint run under the same fingerprint key, if any.
SELECT run_id, last_seen_at, last_doc_id, done, changed FROM dedup_rebuild_runs
 WHERE kind = 'refingerprint' AND finished_at IS NULL AND fingerprint_key = %(key)s
 ORDER BY run_id DESC LIMIT 1;

-- name: rebuild_last_refingerprint
SELECT fingerprint_key, finished_at FROM dedup_rebuild_runs
 WHERE kind = 'refingerprint' ORDER BY run_id DESC LIMIT 1;

-- name: rebuild_abandon
-- Unfinished re-fingerprint runs under another key: superseded.
UPDATE dedup_rebuild_runs
   SET finished_at = now(), updated_at = now(), summary = '{"superseded": true}'
 WHERE kind = 'refingerprint' AND finished_at IS NULL AND fingerprint_key <> %(key)s;

-- name: rebuild_progress
UPDATE dedup_rebuild_runs
   SET last_seen_at = %(seen_at)s, last_doc_id = %(doc_id)s, done = done + %(done)s,
       changed = changed + %(changed)s, updated_at = now()
 WHERE run_id = %(run_id)s;

-- name: rebuild_finish
UPDATE dedup_rebuild_runs SET finished_at = now(), updated_at = now(), summary = %(summary)s
 WHERE run_id = %(run_id)s;

-- name: refingerprint_keys
-- Every stored document's key, in the order a re-fingerprint run walks them.
SELECT seen_at, doc_id FROM documents
 WHERE (seen_at, doc_id) > (%(seen_at)s, %(doc_id)s) ORDER BY seen_at, doc_id;

-- name: refingerprint_texts
SELECT doc_id, seen_at, title, body, source FROM documents
 WHERE doc_id = ANY (%(doc_ids)s) AND seen_at BETWEEN %(lo)s AND %(hi)s;

-- name: refingerprint
SELECT dedup_refingerprint(%(items)s);

-- name: seen
-- Deduper.seen: the exact layer alone, read-only (a whitelisted text is never
-- a duplicate; window_days 0 = all history).
SELECT g.doc_id, d.external_id
  FROM document_digests g
  LEFT JOIN documents d ON d.doc_id = g.doc_id AND d.seen_at = g.seen_at
 WHERE g.content_sha1 = %(sha1)s
   AND (%(window)s = 0 OR g.seen_at BETWEEN now() - make_interval(days => %(window)s)
                                       AND now() + make_interval(days => %(window)s))
   AND NOT EXISTS (SELECT 1 FROM dedup_whitelist w WHERE w.kind = 'text' AND w.content_sha1 = %(sha1)s);
