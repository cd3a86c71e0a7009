-- dedup-pg schema: the documents and what was decided about them.
-- Tables are named for the people who query them from psql.
--
-- Day partitions: every per-document table is range-partitioned on seen_at
-- (UTC days; the lookup tables of 40_hash_layers.sql by ISO week);
-- dedup_ensure_partitions() (30_partitions.sql) creates them on demand.

CREATE SEQUENCE documents_doc_id_seq AS bigint;

-- Kept documents: what the crawler gave (title, body as received) plus the
-- fingerprints of the normalized text.
CREATE TABLE documents (
    doc_id          bigint NOT NULL DEFAULT nextval('documents_doc_id_seq'),
    seen_at         timestamptz NOT NULL,
    external_id     text,
    title           text,
    body            text NOT NULL,
    url             text,
    source          text,
    published_at    timestamptz,
    content_sha1    bytea NOT NULL,
    title_sha1      bytea,
    -- its four 16-bit bands (band b: simhash >> 16b & 65535) are the keys of
    -- document_simhash_bands, where ingest finds them (stored here as generated
    -- columns until revision 0051)
    simhash         bigint NOT NULL,
    text_length     integer NOT NULL,
    clause_count    integer NOT NULL,
    norm_version    smallint NOT NULL,
    ingested_at     timestamptz NOT NULL DEFAULT now(),
    facts           integer[],
    -- every distinct clause hash of a text whose rows in document_clauses are
    -- a sample (dedup_clause_rows: 16 clauses or more), ascending; NULL when
    -- document_clauses holds a row for each (dedup_document_clauses reads both)
    clauses         bigint[]
) PARTITION BY RANGE (seen_at);
COMMENT ON COLUMN documents.facts IS
    'keys of the numbers, proper names and titles of the text (each one''s SHA-256, first 4 bytes, signed: dedup_pg.facts.fact_key), for verifying near-duplicate matches';
-- doc_id is unique by construction (one sequence). There is deliberately no
-- (doc_id, seen_at) primary key: with it, a fresh partition without statistics
-- lets the planner scan the window by seen_at instead of probing the bands.
CREATE INDEX documents_doc_id_idx ON documents (doc_id);
ALTER SEQUENCE documents_doc_id_seq OWNED BY documents.doc_id;
CREATE INDEX documents_external_id_idx ON documents (external_id);
-- No index on content_sha1: a text is looked up by its digest in
-- document_digests (the exact layer); until revision 0024 one here cost 65
-- bytes a document and an insert, for the rebuild's whitelist query alone.

-- The exact layer: one row per distinct normalized text still in play. Not
-- partitioned, so the unique index spans all days; the insert is the check.
CREATE TABLE document_digests (
    content_sha1 bytea PRIMARY KEY,
    doc_id       bigint NOT NULL,
    seen_at      timestamptz NOT NULL
);

-- Every time a text was seen: the first sighting of a kept document and every
-- duplicate of it. "Which sites carried this story, and who was first" is a
-- query over this table.
CREATE TABLE document_sightings (
    sighting_id  bigint GENERATED ALWAYS AS IDENTITY,
    seen_at      timestamptz NOT NULL,
    doc_id       bigint NOT NULL,
    external_id  text,
    url          text,
    source       text,
    verdict      text NOT NULL CONSTRAINT document_sightings_verdict_check
                 CHECK (verdict IN ('new', 'duplicate', 'review', 'restored')),
    layer        text CONSTRAINT document_sightings_layer_check
                 CHECK (layer IN ('exact', 'simhash', 'containment', 'minhash', 'semantic')),
    score        double precision,
    candidate_id bigint
) PARTITION BY RANGE (seen_at);
-- A document's sightings are read by doc_id. sighting_id is unique by
-- construction (an identity column) and nothing reads by it, so there is
-- deliberately no (sighting_id, seen_at) primary key: until revision 0072 it
-- cost ~47 index bytes a kept document on sina2018 and an entry an insert.
CREATE INDEX document_sightings_doc_id_idx ON document_sightings (doc_id);

CREATE SEQUENCE duplicate_candidates_candidate_id_seq AS bigint;

-- Every duplicate and review decision, with what is needed to undo it: the
-- incoming text in full (for an exact duplicate whose body is byte-identical
-- to the matched document's, body is NULL: the text is that document's) and its
-- fingerprints. status: auto (judged duplicate, not stored as a document),
-- pending (kept, waiting for a reviewer), confirmed, restored, dismissed.
CREATE TABLE duplicate_candidates (
    candidate_id    bigint NOT NULL DEFAULT nextval('duplicate_candidates_candidate_id_seq'),
    seen_at         timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    external_id     text,
    title           text,
    body            text,
    url             text,
    source          text,
    published_at    timestamptz,
    content_sha1    bytea NOT NULL,
    title_sha1      bytea,
    simhash         bigint NOT NULL,
    text_length     integer NOT NULL,
    clauses         bigint[] NOT NULL,
    norm_version    smallint NOT NULL,
    doc_id          bigint,  -- the incoming text's own document, while it is kept (review, restored)
    matched_doc_id  bigint NOT NULL,
    matched_seen_at timestamptz NOT NULL,
    layer           text NOT NULL CONSTRAINT duplicate_candidates_layer_check
                    CHECK (layer IN ('exact', 'simhash', 'containment', 'minhash', 'semantic')),
    score           double precision NOT NULL,
    distance        integer,
    thresholds      jsonb NOT NULL,
    status          text NOT NULL CONSTRAINT duplicate_candidates_status_check
                    CHECK (status IN ('auto', 'pending', 'confirmed', 'restored', 'dismissed')),
    decided_by      text,
    decided_at      timestamptz,
    note            text,
    minhash         smallint[],
    facts           integer[],
    lead            bigint[],  -- the text's first clauses, in order (dedup_clause_rows keeps them)
    CONSTRAINT duplicate_candidates_pkey PRIMARY KEY (candidate_id, seen_at)
) PARTITION BY RANGE (seen_at);
ALTER SEQUENCE duplicate_candidates_candidate_id_seq OWNED BY duplicate_candidates.candidate_id;
-- A candidate is read by its id through the primary key (it starts with
-- candidate_id) and the pending ones in order through the queue index below;
-- until revision 0063 an index on candidate_id alone and one on created_at of
-- the pending rows repeated them, two more entries for every candidate.
CREATE INDEX duplicate_candidates_matched_doc_id_idx ON duplicate_candidates (matched_doc_id);
-- The review page's queues (one a status, in order of arrival; review_queue is
-- the pending one), read by keyset: equality on status, then a range on
-- (created_at, candidate_id), so the first page and a deep one read the same
-- few entries (bench/review_queue.py).
CREATE INDEX duplicate_candidates_queue_idx ON duplicate_candidates (status, created_at, candidate_id);
-- Its counts per layer under the filters (source, score range; the day prunes
-- partitions), from the index alone: 100,000 candidates, 205 -> 4 ms.
CREATE INDEX duplicate_candidates_counts_idx ON duplicate_candidates (status, layer, source, score);

-- Texts (by normalized digest) that are never duplicates, and pairs of texts
-- that are not duplicates of each other. Checked inside the ingest transaction.
CREATE TABLE dedup_whitelist (
    whitelist_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind           text NOT NULL CONSTRAINT dedup_whitelist_kind_check CHECK (kind IN ('text', 'pair')),
    content_sha1   bytea NOT NULL,
    other_sha1     bytea,
    created_at     timestamptz NOT NULL DEFAULT now(),
    created_by     text NOT NULL DEFAULT current_user,
    note           text,
    candidate_id   bigint,  -- the review decision that added it (undone with it)
    CONSTRAINT dedup_whitelist_shape_check CHECK (
        (kind = 'text' AND other_sha1 IS NULL)
        OR (kind = 'pair' AND other_sha1 IS NOT NULL AND content_sha1 < other_sha1))
);
CREATE UNIQUE INDEX dedup_whitelist_text_key ON dedup_whitelist (content_sha1) WHERE kind = 'text';
CREATE UNIQUE INDEX dedup_whitelist_pair_key ON dedup_whitelist (content_sha1, other_sha1) WHERE kind = 'pair';

-- Items that could not be ingested, with what was received (as bytes: it may
-- hold NUL characters or undecodable bytes that text columns reject).
CREATE TABLE ingest_errors (
    error_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seen_at     timestamptz NOT NULL DEFAULT now(),
    external_id text,
    source      text,
    error       text NOT NULL,
    payload     bytea
);
CREATE INDEX ingest_errors_seen_at_idx ON ingest_errors (seen_at);

-- One fingerprinted document, as dedup_pg.deduper sends it (see dedup_ingest).
-- Its MinHash signature comes twice: minhash (smallint[]), what the bands and
-- lock stripes are cut from, and signature, the same 128 values as the 2,048
-- bits document_minhash_bands.signature stores them in (dedup_minhash_bits;
-- null: computed from minhash where stored).
CREATE TYPE dedup_item AS (
    pos integer, external_id text, title text, body text, url text, source text,
    seen_at timestamptz, published_at timestamptz, sha1 text, title_sha1 text,
    simhash bigint, length integer, clauses bigint[], norm_version smallint,
    minhash smallint[], facts integer[], lead bigint[], signature bit varying);
