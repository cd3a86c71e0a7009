-- dedup-pg schema: learned template noise (dedup_pg/templates.py): lines a source repeats on
-- most of its pages, stripped before fingerprinting. Its settings
-- (template_min_share, template_min_docs) are in 10_settings.sql.

-- Per source: how far learning has read, and the version of its pattern set.
CREATE TABLE source_template_state (
    source       text PRIMARY KEY,
    version      integer NOT NULL DEFAULT 0,
    docs_counted bigint NOT NULL DEFAULT 0,
    last_doc_id  bigint NOT NULL DEFAULT 0,
    learned_at   timestamptz,
    changed_at   timestamptz
);
COMMENT ON TABLE source_template_state IS
    'per source: documents counted by template learning, the last doc_id read, and the pattern set version (bumped on every change; documents ingested before changed_at were fingerprinted under the previous set)';

-- Line counts, the learner's memory: in how many of the source's documents a
-- line occurred, counted from the docs_before'th document on (when it first
-- appeared), so a line of a new site design is judged on the pages since.
CREATE TABLE source_template_lines (
    source      text NOT NULL,
    line_hash   bigint NOT NULL,
    line_text   text NOT NULL,
    doc_count   bigint NOT NULL,
    docs_before bigint NOT NULL,
    first_seen  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT source_template_lines_pkey PRIMARY KEY (source, line_hash)
);

-- The patterns analysts read and edit: enabled = false keeps a learned line in
-- the text; a 'block' (several lines, inserted by hand) is stripped where its
-- lines occur together.
CREATE TABLE source_templates (
    pattern_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source          text NOT NULL,
    pattern_text    text NOT NULL,
    kind            text NOT NULL DEFAULT 'line'
                    CONSTRAINT source_templates_kind_check CHECK (kind IN ('line', 'block')),
    doc_count       bigint NOT NULL DEFAULT 0,
    share           real NOT NULL DEFAULT 0,
    enabled         boolean NOT NULL DEFAULT true,
    learned_version integer NOT NULL DEFAULT 0,
    first_seen      timestamptz NOT NULL DEFAULT now(),
    last_seen       timestamptz NOT NULL DEFAULT now()
);
-- md5: a block can be longer than a btree entry allows
CREATE UNIQUE INDEX source_templates_pattern_key ON source_templates (source, kind, md5(pattern_text));
COMMENT ON TABLE source_templates IS
    'template lines learned per source (dedup-pg templates learn) and stripped before fingerprinting; set enabled = false to keep one';

-- A new pattern carries the version it creates.
CREATE FUNCTION dedup_template_learned_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.learned_version := coalesce(
        (SELECT version FROM source_template_state WHERE source = NEW.source), 0) + 1;
    RETURN NEW;
END $$;
CREATE TRIGGER source_templates_learned_version BEFORE INSERT ON source_templates
    FOR EACH ROW EXECUTE FUNCTION dedup_template_learned_version();

-- Any change to what is stripped (a learned or inserted pattern, enabled
-- switched, text edited, a row deleted) bumps the source's version once per
-- statement, whether it came from dedup-pg or from psql.
CREATE FUNCTION dedup_template_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO source_template_state AS s (source, version, changed_at)
        SELECT DISTINCT source, 1, now() FROM new_rows
        ON CONFLICT (source) DO UPDATE SET version = s.version + 1, changed_at = now();
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE source_template_state s SET version = version + 1, changed_at = now()
         WHERE s.source IN (SELECT source FROM old_rows);
    ELSE
        INSERT INTO source_template_state AS s (source, version, changed_at)
        SELECT DISTINCT n.source, 1, now()
          FROM new_rows n JOIN old_rows o USING (pattern_id)
         WHERE (n.enabled, n.pattern_text, n.kind, n.source)
               IS DISTINCT FROM (o.enabled, o.pattern_text, o.kind, o.source)
        ON CONFLICT (source) DO UPDATE SET version = s.version + 1, changed_at = now();
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER source_templates_bump_insert AFTER INSERT ON source_templates
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dedup_template_bump();
CREATE TRIGGER source_templates_bump_update AFTER UPDATE ON source_templates
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_template_bump();
CREATE TRIGGER source_templates_bump_delete AFTER DELETE ON source_templates
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dedup_template_bump();

