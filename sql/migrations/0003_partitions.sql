-- dedup-pg revision 0003: day partitions as an operation (applied by
-- migrations/versions/0003_partitions.py). Creating is dedup_ensure_partitions();
-- dropping is done by dedup_pg.partitions (DETACH ... CONCURRENTLY cannot run
-- inside a function or a transaction block).

-- Every day partition of the per-document tables, with its size.
CREATE VIEW dedup_partitions AS
SELECT parent.relname AS table_name,
       to_date(substring(child.relname FROM '_p(\d{8})$'), 'YYYYMMDD') AS day,
       child.relname AS partition_name,
       greatest(child.reltuples, 0)::bigint AS approx_rows,
       pg_total_relation_size(child.oid) AS bytes
  FROM pg_inherits i
  JOIN pg_class parent ON parent.oid = i.inhparent
  JOIN pg_class child ON child.oid = i.inhrelid
 WHERE parent.relname IN ('documents', 'document_clauses', 'document_sightings', 'duplicate_candidates')
   AND parent.relnamespace = 'public'::regnamespace;

COMMENT ON VIEW dedup_partitions IS
    'Day partitions of documents, document_clauses, document_sightings and duplicate_candidates (dedup-pg partitions list).';
