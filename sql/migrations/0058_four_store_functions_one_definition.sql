-- dedup-pg revision 0058: Four store functions one definition for one node and Citus (applied by
-- migrations/versions/0058_four_store_functions_one_definition.py).
--
-- Why: four functions had a SQL definition for one node and a PL/pgSQL one
-- in sql/citus/60_ingest.sql, because a Citus coordinator plans no
-- distributed query inside a SQL function that has parameters (and two of
-- them read their rows in an order Citus can plan). The PL/pgSQL forms run
-- on one node as well, so each is now one definition, here and on Citus:
-- dedup_remove_document, dedup_document_item, dedup_redelivered and
-- dedup_document_clauses. Same results; measured: BENCHMARKS.md, revision
-- 0058.
--
-- No hand-written changes: the definitions below are the whole revision.

-- function:dedup_remove_document, from sql/schema/60_ingest.sql
CREATE OR REPLACE FUNCTION dedup_remove_document(p_doc_id bigint, p_seen_at timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_sha1 bytea;
    v_body text;
BEGIN
    SELECT d.content_sha1, d.body INTO v_sha1, v_body FROM documents d
     WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at;
    UPDATE duplicate_candidates c SET body = v_body
     WHERE c.matched_doc_id = p_doc_id AND c.matched_seen_at = p_seen_at AND c.body IS NULL;
    DELETE FROM document_clauses c WHERE c.doc_id = p_doc_id AND c.seen_at = p_seen_at;
    DELETE FROM document_minhash_bands b WHERE b.doc_id = p_doc_id AND b.seen_at = p_seen_at;
    DELETE FROM document_simhash_bands b WHERE b.doc_id = p_doc_id AND b.seen_at = p_seen_at;
    DELETE FROM document_embeddings e WHERE e.doc_id = p_doc_id AND e.seen_at = p_seen_at;
    DELETE FROM document_digests g WHERE g.content_sha1 = v_sha1 AND g.doc_id = p_doc_id;
    DELETE FROM documents d WHERE d.doc_id = p_doc_id AND d.seen_at = p_seen_at;
END $$;
COMMENT ON FUNCTION dedup_remove_document(bigint, timestamptz) IS NULL;

-- function:dedup_document_item, from sql/schema/60_ingest.sql
CREATE OR REPLACE FUNCTION dedup_document_item(p_doc_id bigint, p_seen_at timestamptz)
RETURNS dedup_item
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_rows bigint[];
    v_clauses bigint[];
    d record;
BEGIN
    v_rows := ARRAY(SELECT c.clause_hash FROM document_clauses c
                     WHERE c.doc_id = p_doc_id AND c.seen_at = p_seen_at);
    SELECT x.external_id, x.title, x.body, x.url, x.source, x.seen_at, x.published_at, x.content_sha1,
           x.title_sha1, x.simhash, x.text_length, x.clauses, x.norm_version, m.signature, x.facts
      INTO d
      FROM documents x
      LEFT JOIN document_minhash_bands m ON m.doc_id = x.doc_id AND m.seen_at = x.seen_at
     WHERE x.doc_id = p_doc_id AND x.seen_at = p_seen_at;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_clauses := coalesce(d.clauses, ARRAY(SELECT h FROM unnest(v_rows) h ORDER BY 1));
    RETURN ROW(0, d.external_id, d.title, d.body, d.url, d.source, d.seen_at, d.published_at,
               encode(d.content_sha1, 'hex'), encode(d.title_sha1, 'hex'), d.simhash, d.text_length,
               v_clauses, d.norm_version, dedup_minhash_values(d.signature), d.facts,
               ARRAY(SELECT h FROM unnest(v_rows) h
                      WHERE h <> ALL (dedup_clause_rows(v_clauses, '{}'))),
               d.signature)::dedup_item;
END $$;
COMMENT ON FUNCTION dedup_document_item(bigint, timestamptz) IS NULL;

-- function:dedup_redelivered, from sql/schema/60_ingest.sql
CREATE OR REPLACE FUNCTION dedup_redelivered(
    p_external_id text, p_source text, p_sha1 bytea, p_matched_doc_id bigint,
    p_lo timestamptz, p_hi timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_external_id IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN (SELECT c.candidate_id FROM duplicate_candidates c
             WHERE c.matched_doc_id = p_matched_doc_id AND c.seen_at BETWEEN p_lo AND p_hi
               AND c.external_id = p_external_id AND c.source IS NOT DISTINCT FROM p_source
               AND c.content_sha1 = p_sha1
             ORDER BY c.candidate_id
             LIMIT 1);
END $$;
COMMENT ON FUNCTION dedup_redelivered(text, text, bytea, bigint, timestamptz, timestamptz) IS NULL;

-- function:dedup_document_clauses, from sql/schema/40_hash_layers.sql
CREATE OR REPLACE FUNCTION dedup_document_clauses(p_doc_id bigint, p_seen_at timestamptz, p_clauses bigint[])
RETURNS bigint[]
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_clauses IS NOT NULL THEN
        RETURN p_clauses;
    END IF;
    RETURN ARRAY(SELECT c.clause_hash FROM document_clauses c
                  WHERE c.doc_id = p_doc_id AND c.seen_at = p_seen_at ORDER BY 1);
END $$;
COMMENT ON FUNCTION dedup_document_clauses(bigint, timestamptz, bigint[]) IS NULL;
