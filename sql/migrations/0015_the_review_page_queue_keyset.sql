-- dedup-pg revision 0015: The review page: queue keyset index, undo and the decision log (applied by
-- migrations/versions/0015_the_review_page_queue_keyset.py).
--
-- Why: the review page (dedup-pg serve, /review) pages through a queue of
-- 100,000 candidates by keyset, which the partial index on pending created_at
-- alone cannot do for the other statuses nor for (created_at, candidate_id)
-- ties; its undo needs the status a candidate had before a decision (a new verb,
-- reopen_candidate, puts it back) and whose decision it was (the log).

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

-- index:duplicate_candidates_queue_idx, from sql/schema/20_tables.sql
DROP INDEX IF EXISTS duplicate_candidates_queue_idx;
CREATE INDEX duplicate_candidates_queue_idx ON duplicate_candidates (status, created_at, candidate_id);
COMMENT ON INDEX duplicate_candidates_queue_idx IS NULL;

-- index:duplicate_candidates_counts_idx, from sql/schema/20_tables.sql
DROP INDEX IF EXISTS duplicate_candidates_counts_idx;
CREATE INDEX duplicate_candidates_counts_idx ON duplicate_candidates (status, layer, source, score);
COMMENT ON INDEX duplicate_candidates_counts_idx IS NULL;

-- function:reopen_candidate, from sql/schema/70_review.sql
CREATE OR REPLACE FUNCTION reopen_candidate(p_id bigint, p_status text)
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
            PERFORM dedup_store_document(v_item, v_doc_id);
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

-- function:dedup_review_decide, from sql/schema/70_review.sql
CREATE OR REPLACE FUNCTION dedup_review_decide(p_id bigint, p_verb text, p_expected text, p_note text, p_by text)
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
COMMENT ON FUNCTION dedup_review_decide(bigint, text, text, text, text) IS NULL;

-- function:dedup_review_undo, from sql/schema/70_review.sql
CREATE OR REPLACE FUNCTION dedup_review_undo(p_by text)
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
COMMENT ON FUNCTION dedup_review_undo(text) IS NULL;
