-- dedup-pg schema: settings. The current definition of every object is in
-- sql/schema/ (each defined once, files applied in the order of their numbers);
-- sql/migrations/ holds the revisions that brought an existing database here.
-- Change an object here, then make a revision from it:
--   python -m dedup_pg.schema new-revision "what changes" --objects NAME,...

CREATE EXTENSION IF NOT EXISTS vector;  -- the semantic layer stores embeddings here

-- Settings, one row per name. Python reads the normalization ones, SQL the
-- rest. Every change is recorded in dedup_settings_history (85_audit.sql).
CREATE TABLE dedup_settings (
    name        text PRIMARY KEY,
    value       jsonb NOT NULL,
    description text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The defaults a new database starts with.
INSERT INTO dedup_settings (name, value, description) VALUES
 -- the window and the exact layer
 ('window_days', '7',
  'checks look back (and forward) this many days from a document''s seen_at; 0 = all history'),
 -- SimHash. The review distance is a margin over each length's duplicate
 -- distance, capped by simhash_review_distance: the old fixed review distance
 -- of 6 asked for a radius-1 band probe (17 values a band), whose rows grow
 -- with the table (131 -> 821 rows a check from 100k to 600k documents,
 -- bench/results/growth.md), and with the MinHash layer's own review band it
 -- found nothing more on the labelled Sina data (bench/semantic_quality.py:
 -- same recall, same false duplicates, 1.4 vs 1.5% reviews). At 3: one exact
 -- probe a band, and short texts keep their 1-3 bit review band.
 ('simhash_distance', '3',
  'SimHash Hamming distance at or below which a long text is a duplicate (at most 3: the band layout guarantees finding it)'),
 ('simhash_distance_by_length', '[[0, 0], [150, 1], [300, 2], [600, 3]]',
  '[min_length, distance] pairs: a text of at least min_length characters gets that duplicate distance (capped by simhash_distance); short texts have few terms, so a few bits mean more'),
 ('simhash_review_margin', '3',
  'SimHash review band above a text''s duplicate distance (bits), capped by simhash_review_distance'),
 ('simhash_review_distance', '3',
  'largest SimHash distance queued for review (at most 7); above 3 the probe also reads each band''s one-bit neighbours, whose rows grow with the table'),
 ('simhash_min_clause_overlap', '0.2',
  'a SimHash match between texts of 5+ clauses each that share less than this share of the smaller one''s clauses is sent to review (same vocabulary, different text)'),
 -- clause containment
 ('containment_threshold', '0.7',
  'share of the smaller text''s clauses found in the other at or above which it is a duplicate'),
 ('containment_review_threshold', '0.5',
  'clause containment at or above which a text is queued for review'),
 ('containment_min_shared', '3',
  'clauses two texts must share before containment counts (all of the smaller text''s, if it has fewer; never fewer than 2)'),
 ('containment_incoming_share', '0.35',
  'share of the incoming text''s clauses that must already be in the matched text for a containment duplicate; below it the incoming text adds too much new content and goes to review'),
 ('containment_boilerplate_docs', '5',
  'a clause held by this many stored documents in the window is site boilerplate and ignored by containment'),
 ('containment_whole_text_chars', '50',
  'a stored text sharing a single clause with the incoming one (below containment''s two), one of the two of at most three clauses, is a containment duplicate when the shorter of the two bodies, whitespace removed, lies whole inside the other and has at least this many characters: a short item reposted under a hashtag line or cut to its first sentence; null = off'),
 -- MinHash and the fact check (40_hash_layers.sql)
 ('minhash_threshold', '0.5',
  'estimated Jaccard similarity of character 5-grams (MinHash) at or above which a text is a duplicate (after fact verification); null = MinHash layer off'),
 ('minhash_review_threshold', '0.4',
  'estimated 5-gram Jaccard at or above which a text is queued for review'),
 ('facts_disagreement_share', '0.15',
  'a near-duplicate match (simhash, containment, minhash, semantic) goes to review instead of duplicate when each text holds facts (numbers, proper names) the other lacks, at least this share of its own facts; null = no fact check'),
 ('facts_added_share', '0.3',
  'a near-duplicate match also goes to review when the incoming text adds at least 10 facts the matched one lacks and at least this share of its own: a new text quoting or appending an old one; null = not checked'),
 ('facts_copied_body_share', '0.6',
  'a lead rewritten over a copied body is a duplicate: when the incoming text keeps at least this share of its clauses in common with the matched one (3 or more; the matched text facts_copied_body_matched_share of its own) and their openings are unlike (facts_rewritten_lead_similarity), the fact check lets the match through and containment''s review band takes it as a duplicate; null = off'),
 ('facts_rewritten_lead_similarity', '0.3',
  'character-bigram Jaccard of the two bodies'' first 100 characters (digits masked) below which a lead counts as rewritten, for facts_copied_body_share'),
 ('facts_template_max_chars', '1000',
  'a near-duplicate match whose shorter body has at most this many characters goes to review when each text holds a number the other lacks (one-digit numbers too): a templated item for another day, date or figure; null = off'),
 ('facts_template_masked_similarity', '0.9',
  'a near-duplicate match of longer texts (over facts_template_max_chars) goes to review when each holds a number the other lacks and, numbers masked, their clause sets have at least this Jaccard: the same page but for its figures (another day''s price over one spec sheet); null = off'),
 ('facts_money_amounts', 'true',
  'a near-duplicate match goes to review when both texts name sums of money (¥N, N元, N万元, N亿元, N of two or more digits) and no sum is in both: another price for one product, another amount over one template; false = off'),
 ('facts_copied_body_matched_share', '0.3',
  'for facts_copied_body_share: the share of the matched text''s own clauses a copied body must keep (the lead a copy dropped is a large part of a short text); null = facts_copied_body_share'),
 -- the semantic layer (50_semantic.sql)
 ('semantic_mode', '"off"',
  'semantic layer: "off"; "gated" (only texts whose hash layers found a candidate within semantic_gate_distance are embedded and compared with those candidates); "always" (every text the hash layers keep is embedded and searched in the HNSW index)'),
 ('semantic_gate_distance', '16',
  'gated mode: SimHash candidates (from the band probe) within this distance, and containment candidates, are compared by embedding'),
 ('semantic_neighbours', '10',
  'always mode: nearest stored embeddings read from the HNSW index per text'),
 ('semantic_ef_search', '64',
  'HNSW candidate list size (hnsw.ef_search) for the semantic search; larger = better recall, slower'),
 ('semantic_rerank', '80',
  'a model with a binary index (embedding_models.index_kind): how many nearest by Hamming distance are re-ranked by the halfvec cosine in always mode and rebuilds; more = better recall, slower (bench/hnsw.py --binary)'),
 ('semantic_duplicate', 'null',
  'cosine at or above which a text is a semantic duplicate; null = the active model''s threshold for the text''s content type (embedding_models.thresholds)'),
 ('semantic_review', 'null',
  'cosine at or above which a text is queued for review; null = the active model''s threshold for the content type'),
 ('semantic_min_number_overlap', '0.8',
  'a semantic match whose texts share less than this share of the smaller one''s distinct numbers (dates, counts, scores) goes to review, not duplicate: template articles (daily figures, match reports) read alike but differ in their numbers; a semantic duplicate must also pass the fact check (facts_disagreement_share)'),
 ('content_type', '"news"',
  'content type of texts whose source has none (dedup_sources) and whose item names none: picks the semantic thresholds (news, product, comment, ...)'),
 -- normalization (read by Python; they change fingerprints, so they are per
 -- database only: dedup_effective_settings refuses them per source or call)
 ('lowercase', 'false',
  'fold case before fingerprinting'),
 ('noise_patterns', 'null',
  'regular expressions removed before fingerprinting; null = the built-in list (dedup_pg.normalize.DEFAULT_NOISE_PATTERNS), [] = none'),
 ('max_chars', '1000000',
  'documents longer than this (title + body, characters) are rejected with an error'),
 -- the accepted seen_at window (read by Python: dedup_pg.documents.SeenAtWindow);
 -- every accepted day gets partitions, so absurd times are errors, not tables
 ('seen_at_future_hours', '24',
  'a seen_at more than this many hours after the time of the check is rejected with an error (clock skew, a local time read as UTC)'),
 ('seen_at_past_days', '30',
  'a seen_at more than this many days before the time of the check is rejected with an error; raise it for a backfill; 0 = no limit'),
 ('script_folding', 'null',
  'fold Chinese script variants before fingerprinting: null = off, "t2s" (traditional to simplified characters), "tw2sp"/"hk2s" (with Taiwan/Hong Kong phrases); changes fingerprints'),
 ('html_extractor', 'null',
  'main-content extractor for documents given as html: null = the default (dedup_pg.pages.DEFAULT_EXTRACTOR), "trafilatura", "readability" or "gne"'),
 -- template learning (80_templates.sql)
 ('template_min_share', '0.3',
  'template learning: a line in at least this share of a source''s documents (since it first appeared) becomes a pattern'),
 ('template_min_docs', '10',
  'template learning: a line is judged only after this many of the source''s documents');

-- Per-source settings: a source's content type and its own values of
-- dedup_settings keys (say a stricter simhash_distance for one site).
CREATE TABLE dedup_sources (
    source       text PRIMARY KEY,
    content_type text,
    settings     jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE dedup_sources IS
    'Per-source content type and settings overrides (keys of dedup_settings); used by dedup_ingest.';

-- Settings for texts of one source (NULL: no source) under one call's
-- overrides: dedup_settings, then dedup_sources.settings, then the overrides;
-- plus "content_type" from the source when it names one.
CREATE FUNCTION dedup_effective_settings(p_source text, p_overrides jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_settings jsonb;
    v_source dedup_sources;
    v_bad text;
BEGIN
    SELECT jsonb_object_agg(s.name, s.value) INTO v_settings FROM dedup_settings s;
    -- normalization settings change fingerprints: per database only
    SELECT string_agg(k, ', ') INTO v_bad
      FROM jsonb_object_keys(coalesce(p_overrides, '{}')) k
     WHERE NOT v_settings ? k OR k IN ('lowercase', 'noise_patterns', 'max_chars');
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'dedup_ingest: these settings cannot be overridden per call: %', v_bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_source IS NOT NULL THEN
        SELECT * INTO v_source FROM dedup_sources s WHERE s.source = p_source;
        IF FOUND THEN
            SELECT string_agg(k, ', ') INTO v_bad
              FROM jsonb_object_keys(v_source.settings) k
             WHERE NOT v_settings ? k OR k IN ('lowercase', 'noise_patterns', 'max_chars');
            IF v_bad IS NOT NULL THEN
                RAISE EXCEPTION 'dedup_sources row for %: these settings cannot be set per source: %',
                    p_source, v_bad USING ERRCODE = 'invalid_parameter_value';
            END IF;
            v_settings := v_settings || v_source.settings;
            IF v_source.content_type IS NOT NULL THEN
                v_settings := v_settings || jsonb_build_object('content_type', v_source.content_type);
            END IF;
        END IF;
    END IF;
    v_settings := v_settings || coalesce(p_overrides, '{}');
    IF NOT (v_settings ->> 'semantic_mode') IN ('off', 'gated', 'always') THEN
        RAISE EXCEPTION 'semantic_mode must be "off", "gated" or "always", not %', v_settings -> 'semantic_mode'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_settings;
END $$;
