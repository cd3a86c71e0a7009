-- dedup-pg schema, revision 0001 (applied by migrations/versions/0001_core.py).
-- Tables are named for the people who query them from psql.
-- Day partitions: every per-document table is range-partitioned on seen_at (UTC
-- days); dedup_ensure_partitions() creates them on demand.

CREATE EXTENSION IF NOT EXISTS vector;  -- the semantic layer stores embeddings here

-- Settings, one row per name. Python reads the normalization ones, SQL the rest.
CREATE TABLE dedup_settings (
    name        text PRIMARY KEY,
    value       jsonb NOT NULL,
    description text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

INSERT INTO dedup_settings (name, value, description) VALUES
 ('window_days', '7', 'checks look back (and forward) this many days from a document''s seen_at; 0 = all history'),
 ('simhash_distance', '3', 'SimHash Hamming distance at or below which a long text is a duplicate (at most 3: the band layout guarantees finding it)'),
 ('simhash_review_distance', '6', 'SimHash distance at or below which a text is queued for review (at most 7)'),
 ('simhash_distance_by_length', '[[0, 0], [150, 1], [300, 2], [600, 3]]',
  '[min_length, distance] pairs: a text of at least min_length characters gets that duplicate distance (capped by simhash_distance); short texts have few terms, so a few bits mean more'),
 ('containment_threshold', '0.8', 'share of the smaller text''s clauses found in the other at or above which it is a duplicate'),
 ('containment_review_threshold', '0.5', 'clause containment at or above which a text is queued for review'),
 ('containment_min_shared', '3', 'clauses two texts must share before containment counts (all of the smaller text''s, if it has fewer; never fewer than 2)'),
 ('containment_incoming_share', '0.35', 'share of the incoming text''s clauses that must already be in the matched text for a containment duplicate; below it the incoming text adds too much new content and goes to review'),
 ('containment_boilerplate_docs', '5', 'a clause held by this many stored documents in the window is site boilerplate and ignored by containment'),
 ('simhash_min_clause_overlap', '0.2', 'a SimHash match between texts of 5+ clauses each that share less than this share of the smaller one''s clauses is sent to review (same vocabulary, different text)'),
 ('lowercase', 'false', 'fold case before fingerprinting'),
 ('noise_patterns', 'null', 'regular expressions removed before fingerprinting; null = the built-in list (dedup_pg.normalize.DEFAULT_NOISE_PATTERNS), [] = none'),
 ('max_chars', '1000000', 'documents longer than this (title + body, characters) are rejected with an error');

-- Stripes that ingest transactions lock (SELECT ... FOR UPDATE, in key order, so
-- no deadlock) before checking: two writers holding texts that could match
-- each other share a stripe, so the second waits and then sees the first.
-- Row locks, not advisory locks: they do not fill the shared lock table.
CREATE TABLE dedup_lock_stripes (stripe integer PRIMARY KEY);
INSERT INTO dedup_lock_stripes SELECT generate_series(0, 65535);

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
    simhash         bigint NOT NULL,
    simhash_band0   integer GENERATED ALWAYS AS ((simhash & 65535)::integer) STORED,
    simhash_band1   integer GENERATED ALWAYS AS (((simhash >> 16) & 65535)::integer) STORED,
    simhash_band2   integer GENERATED ALWAYS AS (((simhash >> 32) & 65535)::integer) STORED,
    simhash_band3   integer GENERATED ALWAYS AS (((simhash >> 48) & 65535)::integer) STORED,
    text_length     integer NOT NULL,
    clause_count    integer NOT NULL,
    norm_version    smallint NOT NULL,
    ingested_at     timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (seen_at);
-- doc_id is unique by construction (one sequence). There is deliberately no
-- (doc_id, seen_at) primary key: with it, a fresh partition without statistics
-- lets the planner scan the window by seen_at instead of probing the bands.
CREATE INDEX documents_doc_id_idx ON documents (doc_id);
ALTER SEQUENCE documents_doc_id_seq OWNED BY documents.doc_id;
CREATE INDEX documents_simhash_band0_idx ON documents (simhash_band0);
CREATE INDEX documents_simhash_band1_idx ON documents (simhash_band1);
CREATE INDEX documents_simhash_band2_idx ON documents (simhash_band2);
CREATE INDEX documents_simhash_band3_idx ON documents (simhash_band3);
CREATE INDEX documents_external_id_idx ON documents (external_id);
CREATE INDEX documents_content_sha1_idx ON documents (content_sha1);

-- The exact layer: one row per distinct normalized text still in play. Not
-- partitioned, so the unique index spans all days; the insert is the check.
CREATE TABLE document_digests (
    content_sha1 bytea PRIMARY KEY,
    doc_id       bigint NOT NULL,
    seen_at      timestamptz NOT NULL
);

-- Clause fingerprints of kept documents, for the containment check: a copy
-- that adds or drops paragraphs (banners, ads, a truncated recrawl) still holds
-- most of the other's clauses.
CREATE TABLE document_clauses (
    clause_hash bigint NOT NULL,
    doc_id      bigint NOT NULL,
    seen_at     timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_clauses_hash_idx ON document_clauses (clause_hash);

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
                 CHECK (layer IN ('exact', 'simhash', 'containment', 'semantic')),
    score        double precision,
    candidate_id bigint,
    CONSTRAINT document_sightings_pkey PRIMARY KEY (sighting_id, seen_at)
) PARTITION BY RANGE (seen_at);
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
                    CHECK (layer IN ('exact', 'simhash', 'containment', 'semantic')),
    score           double precision NOT NULL,
    distance        integer,
    thresholds      jsonb NOT NULL,
    status          text NOT NULL CONSTRAINT duplicate_candidates_status_check
                    CHECK (status IN ('auto', 'pending', 'confirmed', 'restored', 'dismissed')),
    decided_by      text,
    decided_at      timestamptz,
    note            text,
    CONSTRAINT duplicate_candidates_pkey PRIMARY KEY (candidate_id, seen_at)
) PARTITION BY RANGE (seen_at);
ALTER SEQUENCE duplicate_candidates_candidate_id_seq OWNED BY duplicate_candidates.candidate_id;
CREATE INDEX duplicate_candidates_candidate_id_idx ON duplicate_candidates (candidate_id);
CREATE INDEX duplicate_candidates_matched_doc_id_idx ON duplicate_candidates (matched_doc_id);
CREATE INDEX duplicate_candidates_pending_idx ON duplicate_candidates (created_at)
    WHERE status = 'pending';

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
