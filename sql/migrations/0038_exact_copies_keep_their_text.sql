-- dedup-pg revision 0038: Exact copies keep their text when the document they point to goes (applied by
-- migrations/versions/0038_exact_copies_keep_their_text.py).
--
-- Why: an exact copy is kept as a candidate whose text is its matched
-- document's (body NULL: not stored twice). Two paths removed that document
-- and left the copy without a text, which restore_candidate() then refused:
-- confirm_candidate() and reopen_candidate(..., 'auto') on a review whose
-- document had exact copies recorded against it (dedup_remove_document now
-- gives them the text first, as dedup_demote_document already did for the
-- semantic layer), and retention, when the matched document's day was
-- dropped and the copy's day kept (dedup_keep_texts_of_days, called by
-- `dedup-pg partitions drop` before any day goes). tests/test_review.py and
-- tests/test_partitions.py have the three cases; each failed on 0037.
--
-- Hand-written changes (ALTER TABLE, settings rows, data) go here, above the
-- definitions copied from sql/schema/ below.

-- function:dedup_remove_document, from sql/schema/60_ingest.sql
CREATE OR REPLACE FUNCTION dedup_remove_document(p_doc_id bigint, p_seen_at timestamptz)
RETURNS void
LANGUAGE sql AS $$
    UPDATE duplicate_candidates c
       SET body = (SELECT d.body FROM documents d WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at)
     WHERE c.matched_doc_id = p_doc_id AND c.matched_seen_at = p_seen_at AND c.body IS NULL;
    DELETE FROM document_clauses c WHERE c.doc_id = p_doc_id AND c.seen_at = p_seen_at;
    DELETE FROM document_minhash_bands b WHERE b.doc_id = p_doc_id AND b.seen_at = p_seen_at;
    DELETE FROM document_simhash_bands b WHERE b.doc_id = p_doc_id AND b.seen_at = p_seen_at;
    DELETE FROM document_embeddings e WHERE e.doc_id = p_doc_id AND e.seen_at = p_seen_at;
    DELETE FROM document_digests g USING documents d
     WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at
       AND g.content_sha1 = d.content_sha1 AND g.doc_id = p_doc_id;
    DELETE FROM documents d WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at;
$$;
COMMENT ON FUNCTION dedup_remove_document(bigint, timestamptz) IS NULL;

-- function:dedup_keep_texts_of_days, from sql/schema/30_partitions.sql
CREATE OR REPLACE FUNCTION dedup_keep_texts_of_days(p_cutoff timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    v_body text;
    v_n integer := 0;
BEGIN
    FOR r IN SELECT c.candidate_id, c.seen_at, c.matched_doc_id, c.matched_seen_at
               FROM duplicate_candidates c
              WHERE c.body IS NULL AND c.seen_at >= p_cutoff AND c.matched_seen_at < p_cutoff LOOP
        SELECT d.body INTO v_body FROM documents d
         WHERE d.doc_id = r.matched_doc_id AND d.seen_at = r.matched_seen_at;
        CONTINUE WHEN v_body IS NULL;
        UPDATE duplicate_candidates c SET body = v_body
         WHERE c.candidate_id = r.candidate_id AND c.seen_at = r.seen_at;
        v_n := v_n + 1;
    END LOOP;
    RETURN v_n;
END $$;
COMMENT ON FUNCTION dedup_keep_texts_of_days(timestamptz) IS NULL;
