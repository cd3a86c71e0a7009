"""sql/citus/ against sql/schema/, without a cluster: every function it
defines replaces one of the schema's (same name, same arguments), made from
the single-node definition whose checksum it records. Changing a single-node
function that has a Citus form fails here until the Citus form is revisited:
the two cannot drift apart silently."""

from __future__ import annotations

import hashlib
import re

from dedup_pg import schema

_SOURCE = re.compile(r"^-- from sql/schema/(\S+) (\w+): sha256 ([0-9a-f]{16})$", re.M)


def test_every_citus_function_or_view_replaces_one_of_the_schema():
    objects = schema.schema_objects()
    citus = schema.citus_objects()
    functions = [d for d in citus.values() if d.kind in ("function", "view")]
    assert functions, "sql/citus/ defines no function"
    for d in functions:
        single = objects.get(d.key)
        assert single is not None, f"{d.key}: not a function of sql/schema/"
        assert d.create.signature == single.create.signature, d.key


def test_citus_forms_were_made_from_the_current_single_node_definitions():
    objects = schema.schema_objects()
    recorded = {}
    for path in schema.citus_files():
        for source, name, digest in _SOURCE.findall(path.read_text(encoding="utf-8")):
            recorded[name] = (source, digest)
    defined = {
        d.name: d.kind for d in schema.citus_objects().values() if d.kind in ("function", "view")
    }
    assert set(recorded) == set(defined)
    for name, (source, digest) in recorded.items():
        single = objects[f"{defined[name]}:{name}"]
        assert single.source == source, name
        now = hashlib.sha256(single.create.text.encode()).hexdigest()[:16]
        assert now == digest, (
            f"{name} changed in sql/schema/{source}: revisit its Citus form in sql/citus/ "
            f"and record sha256 {now}"
        )


def test_every_citus_setting_alters_a_function_of_the_schema():
    """An ``ALTER FUNCTION`` of sql/citus/ for a function it does not redefine
    (dedup_ingest's plan cache) names one of sql/schema/, by its arguments,
    and is applied again after revisions (``citus_forms_sql``)."""
    objects = schema.schema_objects()
    settings = schema.citus_settings()
    assert settings, "sql/citus/ gives no function a setting"
    forms = schema.citus_forms_sql()
    for s in settings:
        single = objects.get(f"function:{s.names[0]}")
        assert single is not None, f"{s.names[0]}: not a function of sql/schema/"
        assert f"{s.names[0]}{single.create.signature}".replace(" ", "") in s.text.replace(
            " ", ""
        ), s.text
        assert s.text in forms
