-- dedup-pg on Citus: the statements of dedup_ingest's path (sql/schema/) that
-- a Citus coordinator cannot plan, each in a form it can. dedup_ingest itself
-- is the single-node function; it reads the clause holders and the
-- containment candidates through dedup_clause_holders and
-- dedup_containment_candidates, which have their Citus forms here. The
-- verdicts and the contract are the single-node ones: tests/test_citus.py
-- compares every verdict with a single-node database. Above each function,
-- the checksum of the single-node definition it was made from:
-- tests/test_citus_schema.py fails when that changes, until this form is
-- revisited and the checksum renewed.

-- dedup_ingest's plan cache left to choose (the single-node function forces
-- generic plans). A statement whose shards depend on its parameters (a probe
-- of several keys) has no generic distributed plan: Citus makes the generic
-- plan cost the earth so that the cache picks a custom one, and
-- force_generic_plan would override that and fail ("could not create
-- distributed plan").
ALTER FUNCTION dedup_ingest(jsonb, boolean, jsonb) SET plan_cache_mode = auto;

-- from sql/schema/40_hash_layers.sql dedup_clause_holders: sha256 6e12002edfccca37
-- Citus: PL/pgSQL (Citus plans no distributed query inside a SQL function
-- with parameters), and no per-clause LATERAL ... LIMIT, which cannot be
-- planned across shards: the same rows (at most p_limit holders a clause) in
-- one statement pruned to the clauses' shards, the window pushed down
-- (partitioned by the distribution column), then joined here.
CREATE OR REPLACE FUNCTION dedup_clause_holders(p_clauses bigint[], p_lo timestamptz, p_hi timestamptz,
                                                p_limit integer)
RETURNS TABLE (clause_hash bigint, doc_id bigint, seen_at timestamptz)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH fetched AS MATERIALIZED (
        SELECT r.clause_hash AS h, r.doc_id, r.seen_at
          FROM (SELECT dc.clause_hash, dc.doc_id, dc.seen_at,
                       row_number() OVER (PARTITION BY dc.clause_hash) AS rn
                  FROM document_clauses dc
                 WHERE dc.clause_hash = ANY (p_clauses) AND dc.seen_at BETWEEN p_lo AND p_hi) r
         WHERE r.rn <= p_limit)
    SELECT h, x.doc_id, x.seen_at
      FROM unnest(p_clauses) h
      LEFT JOIN fetched x USING (h);
END $$;

-- from sql/schema/40_hash_layers.sql dedup_containment_candidates: sha256 d40e1c61716b8bd7
-- Citus: PL/pgSQL, and the candidates' rows fetched first (pruned to their
-- shards, nothing of the coordinator's in the statement: a router statement
-- is sent whole to its worker), then joined to the candidates here
CREATE OR REPLACE FUNCTION dedup_containment_candidates(p_docs bigint[], p_seen timestamptz[], p_rows integer[],
                                                        p_useful bigint[], p_lo timestamptz, p_hi timestamptz)
RETURNS TABLE (doc_id bigint, seen_at timestamptz, external_id text, content_sha1 bytea,
               clause_count integer, shared integer)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_docs bigint[]; v_seen timestamptz[]; v_ext text[]; v_n integer[]; v_sha1 bytea[]; v_shared integer[];
BEGIN
    SELECT array_agg(d.doc_id), array_agg(d.seen_at), array_agg(d.external_id),
           array_agg(d.clause_count), array_agg(d.content_sha1),
           array_agg(CASE WHEN d.clauses IS NOT NULL THEN dedup_shared_clauses(p_useful, d.clauses) END)
      INTO v_docs, v_seen, v_ext, v_n, v_sha1, v_shared
      FROM documents d
     WHERE d.doc_id = ANY (p_docs)
       AND d.seen_at BETWEEN p_lo AND p_hi;  -- only the window's partitions
    RETURN QUERY
    SELECT c.doc_id, c.seen_at, d.external_id, d.content_sha1, d.clause_count,
           coalesce(d.shared, c.n_rows)
      FROM unnest(p_docs, p_seen, p_rows) c(doc_id, seen_at, n_rows)
      JOIN unnest(v_docs, v_seen, v_ext, v_n, v_sha1, v_shared)
           d(doc_id, seen_at, external_id, clause_count, content_sha1, shared)
        ON d.doc_id = c.doc_id AND d.seen_at = c.seen_at;
END $$;

-- from sql/schema/40_hash_layers.sql dedup_summarize_lookups: sha256 362431623c480381
-- Citus: nothing to summarize on the coordinator. The BRIN indexes that hold
-- rows are the shards', on the workers (the coordinator's partitions are
-- empty); their vacuums summarize them.
CREATE OR REPLACE FUNCTION dedup_summarize_lookups(p_seen timestamptz[])
RETURNS integer
LANGUAGE sql AS $$
    SELECT 0
$$;
