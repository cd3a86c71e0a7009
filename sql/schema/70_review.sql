-- dedup-pg schema: working the review queue from psql, provenance and numbers.
--
-- A reviewer's three verbs, each one transaction, each safe to call twice:
--   restore_candidate(id, note)  a duplicate that is not one: store it as a
--                                document, keep the link, whitelist it
--   confirm_candidate(id, note)  it is a duplicate: (a kept review document is
--                                removed again; any earlier restore is undone)
--   dismiss_candidate(id, note)  a review that is not a duplicate: keep the
--                                document, whitelist the pair
-- Each returns the candidate row as it is afterwards.

-- The candidate as an item that can be stored (its body is the matched
-- document's when it was not stored separately).
CREATE FUNCTION dedup_candidate_item(p_c duplicate_candidates)
RETURNS dedup_item
LANGUAGE sql STABLE AS $$
    SELECT ROW(0, p_c.external_id, p_c.title,
               coalesce(p_c.body, (SELECT d.body FROM documents d
                                    WHERE d.doc_id = p_c.matched_doc_id AND d.seen_at = p_c.matched_seen_at)),
               p_c.url, p_c.source, p_c.seen_at, p_c.published_at, encode(p_c.content_sha1, 'hex'),
               encode(p_c.title_sha1, 'hex'), p_c.simhash, p_c.text_length, p_c.clauses,
               p_c.norm_version, p_c.minhash, p_c.facts, p_c.lead, NULL)::dedup_item
$$;

-- Lock and fetch a candidate, or fail naming it.
CREATE FUNCTION dedup_lock_candidate(p_id bigint)
RETURNS duplicate_candidates
LANGUAGE plpgsql AS $$
DECLARE
    v_c duplicate_candidates;
BEGIN
    SELECT * INTO v_c FROM duplicate_candidates c WHERE c.candidate_id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'duplicate candidate % does not exist', p_id
            USING ERRCODE = 'no_data_found', HINT = 'SELECT * FROM review_queue lists the pending ones';
    END IF;
    RETURN v_c;
END $$;

-- Keep the candidate's text as a document (storing it if it is not stored) and
-- whitelist it: the pair (incoming, matched) for a near duplicate, the text
-- itself for an exact one (the pair would be the text with itself).
CREATE FUNCTION dedup_keep_candidate(p_c duplicate_candidates, p_status text, p_note text, p_by text)
RETURNS duplicate_candidates
LANGUAGE plpgsql AS $$
DECLARE
    v_doc_id bigint := p_c.doc_id;
    v_item dedup_item;
    v_matched_sha1 bytea;
BEGIN
    IF v_doc_id IS NULL THEN
        v_item := dedup_candidate_item(p_c);
        IF v_item.body IS NULL THEN
            RAISE EXCEPTION 'duplicate candidate %: its text was the matched document %''s, which is gone',
                p_c.candidate_id, p_c.matched_doc_id;
        END IF;
        PERFORM dedup_ensure_partitions((p_c.seen_at AT TIME ZONE 'UTC')::date,
                                        (p_c.seen_at AT TIME ZONE 'UTC')::date);
        v_doc_id := nextval('documents_doc_id_seq');
        PERFORM dedup_store_document(v_item, v_doc_id, v_item.lead);
        -- the text's digest, unless another document holds it (an exact duplicate's original)
        INSERT INTO document_digests (content_sha1, doc_id, seen_at)
        VALUES (p_c.content_sha1, v_doc_id, p_c.seen_at)
        ON CONFLICT (content_sha1) DO NOTHING;
    END IF;
    SELECT d.content_sha1 INTO v_matched_sha1 FROM documents d
     WHERE d.doc_id = p_c.matched_doc_id AND d.seen_at = p_c.matched_seen_at;
    IF p_c.layer = 'exact' OR v_matched_sha1 IS NULL OR v_matched_sha1 = p_c.content_sha1 THEN
        INSERT INTO dedup_whitelist (kind, content_sha1, created_by, note, candidate_id)
        VALUES ('text', p_c.content_sha1, p_by, p_note, p_c.candidate_id)
        ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO dedup_whitelist (kind, content_sha1, other_sha1, created_by, note, candidate_id)
        VALUES ('pair', least(p_c.content_sha1, v_matched_sha1), greatest(p_c.content_sha1, v_matched_sha1),
                p_by, p_note, p_c.candidate_id)
        ON CONFLICT DO NOTHING;
    END IF;
    UPDATE document_sightings s
       SET doc_id = v_doc_id, verdict = CASE WHEN p_status = 'restored' THEN 'restored' ELSE s.verdict END
     WHERE s.candidate_id = p_c.candidate_id;
    UPDATE duplicate_candidates c
       SET status = p_status, doc_id = v_doc_id, decided_by = p_by, decided_at = now(), note = p_note
     WHERE c.candidate_id = p_c.candidate_id
    RETURNING * INTO p_c;
    RETURN p_c;
END $$;

CREATE FUNCTION restore_candidate(p_id bigint, p_note text DEFAULT NULL, p_by text DEFAULT current_user)
RETURNS duplicate_candidates
LANGUAGE plpgsql AS $$
DECLARE
    v_c duplicate_candidates := dedup_lock_candidate(p_id);
BEGIN
    IF v_c.status IN ('restored', 'dismissed') THEN
        RETURN v_c;  -- already kept: calling twice changes nothing
    ELSIF v_c.status = 'pending' THEN
        RAISE EXCEPTION 'duplicate candidate % is pending review: its document % is already kept', p_id, v_c.doc_id
            USING HINT = 'dismiss_candidate() keeps it and clears the review; confirm_candidate() drops it';
    END IF;
    RETURN dedup_keep_candidate(v_c, 'restored', p_note, p_by);
END $$;

COMMENT ON FUNCTION restore_candidate(bigint, text, text) IS
    'Not a duplicate after all: store the text as a document, keep the link, whitelist it. Safe to call twice.';

CREATE FUNCTION dismiss_candidate(p_id bigint, p_note text DEFAULT NULL, p_by text DEFAULT current_user)
RETURNS duplicate_candidates
LANGUAGE plpgsql AS $$
DECLARE
    v_c duplicate_candidates := dedup_lock_candidate(p_id);
BEGIN
    IF v_c.status IN ('dismissed', 'restored') THEN
        RETURN v_c;
    ELSIF v_c.status <> 'pending' THEN
        RAISE EXCEPTION 'duplicate candidate % was judged a duplicate (status %), not queued for review', p_id, v_c.status
            USING HINT = 'restore_candidate() stores it as a document';
    END IF;
    RETURN dedup_keep_candidate(v_c, 'dismissed', p_note, p_by);
END $$;

COMMENT ON FUNCTION dismiss_candidate(bigint, text, text) IS
    'A review that is not a duplicate: keep the document, whitelist the pair. Safe to call twice.';

-- It is a duplicate. A kept document of it (a review, or an earlier restore) is
-- removed again; its sightings go to the matched document; whitelist entries
-- this candidate added are withdrawn.
CREATE FUNCTION confirm_candidate(p_id bigint, p_note text DEFAULT NULL, p_by text DEFAULT current_user)
RETURNS duplicate_candidates
LANGUAGE plpgsql AS $$
DECLARE
    v_c duplicate_candidates := dedup_lock_candidate(p_id);
BEGIN
    IF v_c.status = 'confirmed' THEN
        RETURN v_c;
    END IF;
    IF v_c.doc_id IS NOT NULL THEN
        UPDATE document_sightings s
           SET doc_id = v_c.matched_doc_id,
               verdict = CASE WHEN s.candidate_id = p_id THEN 'duplicate' ELSE s.verdict END
         WHERE s.doc_id = v_c.doc_id;
        PERFORM dedup_remove_document(v_c.doc_id, v_c.seen_at);
    END IF;
    DELETE FROM dedup_whitelist w WHERE w.candidate_id = p_id;
    UPDATE duplicate_candidates c
       SET status = 'confirmed', doc_id = NULL, decided_by = p_by, decided_at = now(), note = p_note
     WHERE c.candidate_id = p_id
    RETURNING * INTO v_c;
    RETURN v_c;
END $$;

COMMENT ON FUNCTION confirm_candidate(bigint, text, text) IS
    'A duplicate: drop its kept document if it has one (review, earlier restore). Safe to call twice.';

-- Back to a queue: a decided candidate becomes undecided again, 'auto' (judged a
-- duplicate, not kept) or 'pending' (kept, waiting for a reviewer); the undo of
-- the review page. Its whitelist entries are withdrawn; a kept document is
-- removed ('auto') or stored again ('pending'). Duplicates of a review document
-- that confirm_candidate() moved to the matched document stay there.
CREATE FUNCTION reopen_candidate(p_id bigint, p_status text)
RETURNS duplicate_candidates
LANGUAGE plpgsql AS $$
DECLARE
    v_c duplicate_candidates := dedup_lock_candidate(p_id);
    v_doc_id bigint := v_c.doc_id;
    v_item dedup_item;
BEGIN
    IF p_status IS NULL OR p_status NOT IN ('auto', 'pending') THEN
        RAISE EXCEPTION 'duplicate candidate %: reopen it as auto or pending, not %', p_id, coalesce(p_status, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_c.status = p_status THEN
        RETURN v_c;
    END IF;
    DELETE FROM dedup_whitelist w WHERE w.candidate_id = p_id;
    IF p_status = 'auto' AND v_doc_id IS NOT NULL THEN
        UPDATE document_sightings s
           SET doc_id = v_c.matched_doc_id,
               verdict = CASE WHEN s.candidate_id = p_id THEN 'duplicate' ELSE s.verdict END
         WHERE s.doc_id = v_doc_id;
        PERFORM dedup_remove_document(v_doc_id, v_c.seen_at);
        v_doc_id := NULL;
    ELSIF p_status = 'pending' THEN
        IF v_doc_id IS NULL THEN
            v_item := dedup_candidate_item(v_c);
            IF v_item.body IS NULL THEN
                RAISE EXCEPTION 'duplicate candidate %: its text was the matched document %''s, which is gone',
                    p_id, v_c.matched_doc_id;
            END IF;
            PERFORM dedup_ensure_partitions((v_c.seen_at AT TIME ZONE 'UTC')::date,
                                            (v_c.seen_at AT TIME ZONE 'UTC')::date);
            v_doc_id := nextval('documents_doc_id_seq');
            PERFORM dedup_store_document(v_item, v_doc_id, v_item.lead);
            INSERT INTO document_digests (content_sha1, doc_id, seen_at)
            VALUES (v_c.content_sha1, v_doc_id, v_c.seen_at)
            ON CONFLICT (content_sha1) DO NOTHING;
        END IF;
        UPDATE document_sightings s SET doc_id = v_doc_id, verdict = 'review' WHERE s.candidate_id = p_id;
    END IF;
    UPDATE duplicate_candidates c
       SET status = p_status, doc_id = v_doc_id, decided_by = NULL, decided_at = NULL, note = NULL
     WHERE c.candidate_id = p_id
    RETURNING * INTO v_c;
    RETURN v_c;
END $$;

COMMENT ON FUNCTION reopen_candidate(bigint, text) IS
    'Undecide: back to auto (a duplicate, not kept) or pending (kept, in the queue); whitelist entries withdrawn.';

-- What the review page decided, one row a decision, so that a reviewer can undo
-- their own last one (dedup_review_undo) and nobody else's; and the trail of who
-- changed what from the page. The candidate's state before is kept whole.
CREATE TABLE dedup_review_log (
    action_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    candidate_id    bigint NOT NULL,
    verb            text NOT NULL CONSTRAINT dedup_review_log_verb_check
                    CHECK (verb IN ('restore', 'confirm', 'dismiss')),
    from_status     text NOT NULL,
    to_status       text NOT NULL,
    acted_by        text NOT NULL,
    acted_at        timestamptz NOT NULL DEFAULT now(),
    note            text,
    prev_decided_by text,
    prev_decided_at timestamptz,
    prev_note       text,
    undone_at       timestamptz
);
-- a reviewer's newest decision not undone: the undo key's lookup
CREATE INDEX dedup_review_log_acted_by_idx ON dedup_review_log (acted_by, action_id);
COMMENT ON TABLE dedup_review_log IS
    'Decisions made on the review page (dedup-pg serve, /review): verb, status before and after, who, when, note; undone_at once undone.';

-- One decision from the page. p_expected is the status the reviewer saw: when
-- the candidate is no longer in it (another reviewer decided first), nothing is
-- applied and the outcome is 'already', with the decision that stands. A verb
-- that changes nothing (restoring a restored candidate) is 'unchanged'.
CREATE FUNCTION dedup_review_decide(p_id bigint, p_verb text, p_expected text, p_note text, p_by text)
RETURNS TABLE (outcome text, candidate_id bigint, status text, doc_id bigint, decided_by text,
               decided_at timestamptz, note text, action_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    -- the row lock serializes two reviewers: the second waits, then sees the first's status
    v_before duplicate_candidates := dedup_lock_candidate(p_id);
    v_after duplicate_candidates;
    v_action bigint;
BEGIN
    IF p_expected IS NOT NULL AND v_before.status <> p_expected THEN
        RETURN QUERY SELECT 'already', v_before.candidate_id, v_before.status, v_before.doc_id,
                            v_before.decided_by, v_before.decided_at, v_before.note, NULL::bigint;
        RETURN;
    END IF;
    IF p_verb = 'restore' THEN
        v_after := restore_candidate(p_id, p_note, p_by);
    ELSIF p_verb = 'confirm' THEN
        v_after := confirm_candidate(p_id, p_note, p_by);
    ELSIF p_verb = 'dismiss' THEN
        v_after := dismiss_candidate(p_id, p_note, p_by);
    ELSE
        RAISE EXCEPTION 'unknown review verb %', p_verb
            USING ERRCODE = 'invalid_parameter_value', HINT = 'restore, confirm or dismiss';
    END IF;
    IF v_after.status = v_before.status THEN
        RETURN QUERY SELECT 'unchanged', v_after.candidate_id, v_after.status, v_after.doc_id,
                            v_after.decided_by, v_after.decided_at, v_after.note, NULL::bigint;
        RETURN;
    END IF;
    INSERT INTO dedup_review_log (candidate_id, verb, from_status, to_status, acted_by, acted_at, note,
                                  prev_decided_by, prev_decided_at, prev_note)
    VALUES (p_id, p_verb, v_before.status, v_after.status, p_by, v_after.decided_at, p_note,
            v_before.decided_by, v_before.decided_at, v_before.note)
    RETURNING dedup_review_log.action_id INTO v_action;
    RETURN QUERY SELECT 'applied', v_after.candidate_id, v_after.status, v_after.doc_id,
                        v_after.decided_by, v_after.decided_at, v_after.note, v_action;
END $$;

-- Undo p_by's newest decision not yet undone: the candidate goes back to the
-- status (and decision, if it had one) it had before. 'nothing' when there is
-- none; 'superseded' when someone decided the candidate since (nothing is
-- changed: their decision stands).
CREATE FUNCTION dedup_review_undo(p_by text)
RETURNS TABLE (outcome text, candidate_id bigint, status text, decided_by text, decided_at timestamptz,
               action_id bigint, verb text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_a dedup_review_log;
    v_c duplicate_candidates;
BEGIN
    SELECT * INTO v_a FROM dedup_review_log l
     WHERE l.acted_by = p_by AND l.undone_at IS NULL
     ORDER BY l.action_id DESC LIMIT 1
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'nothing', NULL::bigint, NULL::text, NULL::text, NULL::timestamptz, NULL::bigint, NULL::text;
        RETURN;
    END IF;
    v_c := dedup_lock_candidate(v_a.candidate_id);
    IF v_c.status <> v_a.to_status OR v_c.decided_at IS DISTINCT FROM v_a.acted_at
       OR v_c.decided_by IS DISTINCT FROM v_a.acted_by THEN
        RETURN QUERY SELECT 'superseded', v_c.candidate_id, v_c.status, v_c.decided_by, v_c.decided_at,
                            v_a.action_id, v_a.verb;
        RETURN;
    END IF;
    IF v_a.from_status IN ('auto', 'pending') THEN
        v_c := reopen_candidate(v_c.candidate_id, v_a.from_status);
    ELSE
        -- an earlier decision changed: made again, then given back its author, time and note
        IF v_a.from_status = 'dismissed' THEN
            PERFORM reopen_candidate(v_c.candidate_id, 'pending');
            PERFORM dismiss_candidate(v_c.candidate_id, v_a.prev_note, v_a.prev_decided_by);
        ELSIF v_a.from_status = 'restored' THEN
            PERFORM restore_candidate(v_c.candidate_id, v_a.prev_note, v_a.prev_decided_by);
        ELSE
            PERFORM confirm_candidate(v_c.candidate_id, v_a.prev_note, v_a.prev_decided_by);
        END IF;
        UPDATE duplicate_candidates c SET decided_at = v_a.prev_decided_at
         WHERE c.candidate_id = v_c.candidate_id
        RETURNING * INTO v_c;
    END IF;
    UPDATE dedup_review_log l SET undone_at = now() WHERE l.action_id = v_a.action_id;
    RETURN QUERY SELECT 'undone', v_c.candidate_id, v_c.status, v_c.decided_by, v_c.decided_at,
                        v_a.action_id, v_a.verb;
END $$;

-- Candidates of one status a layer, under the review page's other filters (a
-- NULL filter matches everything; p_day is the UTC day of seen_at, the
-- partition key), each counted up to p_cap (the page says "10,000+"), so that
-- the counts stay as fast as the page on a queue of millions of automatic
-- duplicates: each count stops at p_cap rows of duplicate_candidates_counts_idx.
-- One statement, planned once for the five layers (bench/review_queue.py).
CREATE FUNCTION review_layer_counts(p_status text, p_source text DEFAULT NULL,
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

-- The pending queue, oldest first, both texts side by side (trimmed).
CREATE VIEW review_queue AS
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
  FROM duplicate_candidates c
  LEFT JOIN documents d ON d.doc_id = c.matched_doc_id AND d.seen_at = c.matched_seen_at
 WHERE c.status = 'pending'
 ORDER BY c.created_at, c.candidate_id;

COMMENT ON VIEW review_queue IS
    'Pending reviews, oldest first: incoming and matched text side by side. Work it with dismiss_candidate(id, note) / confirm_candidate(id, note).';

CREATE VIEW document_clusters AS
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
  LEFT JOIN document_sightings s ON s.doc_id = d.doc_id
 GROUP BY d.doc_id, d.title, d.seen_at, d.source, d.url;

COMMENT ON VIEW document_clusters IS
    'Each kept document with its duplicates: how many sites carried the story, who first, when last.';

CREATE VIEW dedup_daily_stats AS
WITH seen AS (
    SELECT (s.seen_at AT TIME ZONE 'UTC')::date AS day, coalesce(s.source, '') AS source,
           count(*) AS received,
           count(*) FILTER (WHERE s.verdict = 'new') AS new,
           count(*) FILTER (WHERE s.verdict = 'review') AS review,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'exact') AS exact,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'simhash') AS simhash,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'containment') AS containment,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'minhash') AS minhash,
           count(*) FILTER (WHERE s.verdict = 'duplicate' AND s.layer = 'semantic') AS semantic,
           count(*) FILTER (WHERE s.verdict = 'restored') AS restored
      FROM document_sightings s
     GROUP BY 1, 2
), queue AS (
    SELECT (c.seen_at AT TIME ZONE 'UTC')::date AS day, coalesce(c.source, '') AS source,
           count(*) FILTER (WHERE c.status = 'pending') AS review_pending,
           count(*) FILTER (WHERE c.status = 'dismissed') AS dismissed,
           count(*) FILTER (WHERE c.status = 'confirmed') AS confirmed
      FROM duplicate_candidates c
     GROUP BY 1, 2
), errors AS (
    SELECT (e.seen_at AT TIME ZONE 'UTC')::date AS day, coalesce(e.source, '') AS source, count(*) AS errors
      FROM ingest_errors e
     GROUP BY 1, 2
)
SELECT day,
       nullif(source, '') AS source,
       coalesce(seen.received, 0) + coalesce(errors.errors, 0) AS ingested,
       coalesce(seen.new, 0) AS new,
       coalesce(seen.exact, 0) AS exact,
       coalesce(seen.simhash, 0) AS simhash,
       coalesce(seen.containment, 0) AS containment,
       coalesce(seen.minhash, 0) AS minhash,
       coalesce(seen.semantic, 0) AS semantic,
       coalesce(seen.review, 0) AS review,
       coalesce(queue.review_pending, 0) AS review_pending,
       coalesce(seen.restored, 0) AS restored,
       coalesce(queue.dismissed, 0) AS dismissed,
       coalesce(queue.confirmed, 0) AS confirmed,
       coalesce(errors.errors, 0) AS errors
  FROM seen
  FULL JOIN queue USING (day, source)
  FULL JOIN errors USING (day, source);

COMMENT ON VIEW dedup_daily_stats IS
    'Per UTC day and source: ingested (incl. errors), new, duplicates by layer, reviews, still pending, restored, dismissed, confirmed, errors.';
