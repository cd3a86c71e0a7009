-- dedup-pg revision 0054: dedup_store_document takes the clauses held from every caller (applied by
-- migrations/versions/0054_dedup_store_document_takes_the.py).
--
-- Why: readability. dedup_store_document's third argument, the clauses that
-- get rows beside the sample, defaulted to NULL, which stood for the item's
-- lead: dedup_ingest passed the clauses its probe found held (or '{}'), the
-- review verbs and the rebuild's load passed nothing. Every caller now says
-- what it passes (the restores: the item's lead). The same rows are stored.
--
-- The default cannot be removed in place (CREATE OR REPLACE keeps it), so the
-- function is made again.
DROP FUNCTION dedup_store_document(dedup_item, bigint, bigint[]);

-- function:dedup_store_document, from sql/schema/60_ingest.sql
CREATE OR REPLACE FUNCTION dedup_store_document(p_item dedup_item, p_doc_id bigint, p_held bigint[])
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO documents (doc_id, seen_at, external_id, title, body, url, source, published_at,
                           content_sha1, title_sha1, simhash, text_length, clause_count, norm_version,
                           facts, clauses)
    VALUES (p_doc_id, p_item.seen_at, p_item.external_id, p_item.title, p_item.body, p_item.url,
            p_item.source, p_item.published_at, decode(p_item.sha1, 'hex'), decode(p_item.title_sha1, 'hex'),
            p_item.simhash, p_item.length, cardinality(coalesce(p_item.clauses, '{}')), p_item.norm_version,
            p_item.facts, dedup_clause_array(p_item.clauses));
    INSERT INTO document_clauses (clause_hash, doc_id, seen_at)
    SELECT DISTINCT h, p_doc_id, p_item.seen_at
      FROM unnest(dedup_clause_rows(p_item.clauses, p_item.lead, p_held)) h;
    -- a text with a signature has a row
    INSERT INTO document_minhash_bands (doc_id, seen_at, signature)
    SELECT p_doc_id, p_item.seen_at, x.signature
      FROM (SELECT coalesce(p_item.signature, dedup_minhash_bits(p_item.minhash)) AS signature) x
     WHERE x.signature IS NOT NULL;
    INSERT INTO document_simhash_bands (band_key, simhash, doc_id, seen_at)
    SELECT k, p_item.simhash, p_doc_id, p_item.seen_at
      FROM unnest(dedup_simhash_bands(p_item.simhash)) k;
$$;
COMMENT ON FUNCTION dedup_store_document(dedup_item, bigint, bigint[]) IS NULL;

-- function:dedup_keep_candidate, from sql/schema/70_review.sql
CREATE OR REPLACE FUNCTION dedup_keep_candidate(p_c duplicate_candidates, p_status text, p_note text, p_by text)
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
COMMENT ON FUNCTION dedup_keep_candidate(duplicate_candidates, text, text, text) IS NULL;

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

-- function:dedup_rebuild_load, from sql/schema/90_rebuild.sql
CREATE OR REPLACE FUNCTION dedup_rebuild_load(p_items jsonb)
RETURNS TABLE (pos integer, doc_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    it dedup_item;
    v_doc_id bigint;
BEGIN
    LOCK TABLE dedup_lock_stripes IN EXCLUSIVE MODE;
    FOR it IN SELECT * FROM jsonb_populate_recordset(NULL::dedup_item, p_items) x ORDER BY x.pos LOOP
        v_doc_id := nextval('documents_doc_id_seq');
        pos := it.pos;
        doc_id := v_doc_id;
        PERFORM dedup_store_document(it, v_doc_id, it.lead);
        INSERT INTO document_digests AS g (content_sha1, doc_id, seen_at)
        VALUES (decode(it.sha1, 'hex'), v_doc_id, it.seen_at)
        ON CONFLICT (content_sha1) DO UPDATE
           SET doc_id = EXCLUDED.doc_id, seen_at = EXCLUDED.seen_at
         WHERE g.seen_at <= EXCLUDED.seen_at;
        INSERT INTO document_sightings (seen_at, doc_id, external_id, url, source, verdict)
        VALUES (it.seen_at, v_doc_id, it.external_id, it.url, it.source, 'new');
        RETURN NEXT;
    END LOOP;
END $$;
COMMENT ON FUNCTION dedup_rebuild_load(jsonb) IS NULL;
