-- dedup-pg schema: an audit trail for thresholds.
--
-- Every change of a threshold, however it is made (dedup-pg calibrate --apply,
-- dedup-pg settings set, an UPDATE from psql), is recorded by triggers on the
-- three places thresholds live: dedup_settings (global), dedup_sources.settings
-- (a source's overrides) and embedding_models.thresholds (a model's semantic
-- thresholds per content type). One row per changed value, with the old and the
-- new value, who (the database role and, when the client says, the OS user),
-- which model, and why. The client says the last three through transaction-local
-- settings (set_config('dedup_pg.reason', ..., true) etc.); without them the
-- reason is 'direct change'.
--
-- A change set is what one transaction changed; dedup_revert_changes(id) puts
-- back the old values of the set that change id belongs to (itself recorded).

CREATE TABLE dedup_settings_history (
    change_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    changed_at timestamptz NOT NULL DEFAULT now(),
    target     text NOT NULL CONSTRAINT dedup_settings_history_target_check
               CHECK (target IN ('setting', 'source', 'model')),
    scope      text,            -- the source (target source) or model name (target model)
    name       text NOT NULL,   -- the setting, or the content type of a model's thresholds
    old_value  jsonb,           -- NULL: it was not set
    new_value  jsonb,           -- NULL: it was removed
    db_user    text NOT NULL DEFAULT current_user,
    os_user    text,
    model      text,
    reason     text NOT NULL,
    -- the transaction: what one calibrate --apply (or one revert) changed together
    xact       bigint NOT NULL DEFAULT pg_current_xact_id()::text::bigint,
    details    jsonb,           -- the client's context (calibrate: sample size, source, ...)
    CONSTRAINT dedup_settings_history_scope_check CHECK ((target = 'setting') = (scope IS NULL))
);
CREATE INDEX dedup_settings_history_xact_idx ON dedup_settings_history (xact);
COMMENT ON TABLE dedup_settings_history IS
    'Every threshold change (dedup_settings, dedup_sources.settings, embedding_models.thresholds): old and new value, who, when, which model, why. Undo a change set with dedup_revert_changes(change_id).';

CREATE FUNCTION dedup_record_change(p_target text, p_scope text, p_name text, p_old jsonb, p_new jsonb)
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO dedup_settings_history (target, scope, name, old_value, new_value, os_user, model, reason, details)
    VALUES (p_target, p_scope, p_name, p_old, p_new,
            nullif(current_setting('dedup_pg.os_user', true), ''),
            coalesce(nullif(current_setting('dedup_pg.model', true), ''),
                     CASE WHEN p_target = 'model' THEN p_scope END),
            coalesce(nullif(current_setting('dedup_pg.reason', true), ''), 'direct change'),
            nullif(current_setting('dedup_pg.details', true), '')::jsonb)
$$;

CREATE FUNCTION dedup_settings_audit()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dedup_record_change('setting', NULL, NEW.name, OLD.value, NEW.value);
    RETURN NULL;
END $$;

CREATE TRIGGER dedup_settings_audit AFTER UPDATE ON dedup_settings
    FOR EACH ROW WHEN (OLD.value IS DISTINCT FROM NEW.value)
    EXECUTE FUNCTION dedup_settings_audit();

-- One row per key of a jsonb object that differs between two versions of it
-- (a source's settings, a model's thresholds): they are reverted key by key.
CREATE FUNCTION dedup_record_object_changes(p_target text, p_scope text, p_old jsonb, p_new jsonb)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_key text;
BEGIN
    FOR v_key IN SELECT k FROM jsonb_object_keys(coalesce(p_old, '{}') || coalesce(p_new, '{}')) k ORDER BY k LOOP
        IF (p_old -> v_key) IS DISTINCT FROM (p_new -> v_key) THEN
            PERFORM dedup_record_change(p_target, p_scope, v_key, p_old -> v_key, p_new -> v_key);
        END IF;
    END LOOP;
END $$;

CREATE FUNCTION dedup_sources_audit()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM dedup_record_object_changes('source', NEW.source, NULL, NEW.settings);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM dedup_record_object_changes('source', OLD.source, OLD.settings, NULL);
    ELSE
        PERFORM dedup_record_object_changes('source', NEW.source, OLD.settings, NEW.settings);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER dedup_sources_audit AFTER INSERT OR UPDATE OF settings OR DELETE ON dedup_sources
    FOR EACH ROW EXECUTE FUNCTION dedup_sources_audit();

CREATE FUNCTION embedding_models_audit()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dedup_record_object_changes('model', NEW.name, OLD.thresholds, NEW.thresholds);
    RETURN NULL;
END $$;

-- Only changes: a model's first thresholds come with its registration.
CREATE TRIGGER embedding_models_audit AFTER UPDATE OF thresholds ON embedding_models
    FOR EACH ROW WHEN (OLD.thresholds IS DISTINCT FROM NEW.thresholds)
    EXECUTE FUNCTION embedding_models_audit();

-- Put back the old values of the change set (transaction) that p_change_id
-- belongs to, newest change first. A value changed again since is not
-- overwritten unless p_force: revert the later change first.
CREATE FUNCTION dedup_revert_changes(p_change_id bigint, p_force boolean DEFAULT false)
RETURNS SETOF dedup_settings_history
LANGUAGE plpgsql AS $$
DECLARE
    v_xact bigint;
    v_c dedup_settings_history;
    v_now jsonb;
BEGIN
    SELECT h.xact INTO v_xact FROM dedup_settings_history h WHERE h.change_id = p_change_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'threshold change % does not exist', p_change_id
            USING ERRCODE = 'no_data_found', HINT = 'dedup-pg calibrate --history lists them';
    END IF;
    IF coalesce(current_setting('dedup_pg.reason', true), '') = '' THEN
        PERFORM set_config('dedup_pg.reason', 'revert of change ' || p_change_id, true);
    END IF;
    FOR v_c IN SELECT * FROM dedup_settings_history h WHERE h.xact = v_xact ORDER BY h.change_id DESC LOOP
        IF v_c.target = 'setting' THEN
            SELECT s.value INTO v_now FROM dedup_settings s WHERE s.name = v_c.name;
        ELSIF v_c.target = 'source' THEN
            SELECT s.settings -> v_c.name INTO v_now FROM dedup_sources s WHERE s.source = v_c.scope;
        ELSE
            SELECT m.thresholds -> v_c.name INTO v_now FROM embedding_models m WHERE m.name = v_c.scope;
        END IF;
        IF v_now IS DISTINCT FROM v_c.new_value AND NOT p_force THEN
            RAISE EXCEPTION 'threshold change %: % is now %, not the % it set', v_c.change_id,
                concat_ws(' ', v_c.target, v_c.scope, v_c.name), coalesce(v_now::text, 'unset'),
                coalesce(v_c.new_value::text, 'unset')
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'it was changed again since: revert that change first, or force';
        END IF;
        IF v_c.target = 'setting' THEN
            UPDATE dedup_settings s SET value = v_c.old_value, updated_at = now() WHERE s.name = v_c.name;
        ELSIF v_c.target = 'source' THEN
            UPDATE dedup_sources s
               SET settings = CASE WHEN v_c.old_value IS NULL THEN s.settings - v_c.name
                                   ELSE jsonb_set(s.settings, ARRAY[v_c.name], v_c.old_value) END,
                   updated_at = now()
             WHERE s.source = v_c.scope;
        ELSE
            UPDATE embedding_models m
               SET thresholds = CASE WHEN v_c.old_value IS NULL THEN m.thresholds - v_c.name
                                     ELSE jsonb_set(m.thresholds, ARRAY[v_c.name], v_c.old_value) END
             WHERE m.name = v_c.scope;
        END IF;
    END LOOP;
    RETURN QUERY SELECT * FROM dedup_settings_history h
                  WHERE h.xact = pg_current_xact_id()::text::bigint AND h.change_id > p_change_id
                  ORDER BY h.change_id;
END $$;

COMMENT ON FUNCTION dedup_revert_changes(bigint, boolean) IS
    'Undo the threshold change set (one transaction) that a dedup_settings_history change belongs to; refuses values changed since unless forced.';
