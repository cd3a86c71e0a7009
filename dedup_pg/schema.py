"""The current schema (``sql/schema/``) and the revisions that lead to it.

``sql/schema/*.sql`` defines every table, index, type, function, view, trigger
and default setting once, as it is at the newest revision; a fresh database
is built from it (``create_schema``) and stamped at head. An existing database
is upgraded by Alembic through ``sql/migrations/``, whose files are frozen once
released (``migrations/checksums.txt``). tests/test_schema.py builds a
database both ways and compares their catalogs.

A new revision is made from the schema, not the other way round: change the
object in ``sql/schema/``, then

    python -m dedup_pg.schema new-revision "what changes" --objects dedup_ingest,...

copies the named objects' definitions into a new ``sql/migrations/NNNN_*.sql``
(with room for hand-written ALTERs above them) and writes an Alembic revision
whose downgrade re-applies each object's previous definition, found by
replaying the earlier revisions' SQL (``previous_definitions``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .sqlfiles import _SOURCE_TREE, packaged_dir

#: Kinds of object a revision can copy from the schema and a downgrade restore.
#: Tables and types change by ALTER, which a revision writes by hand.
REPLACEABLE = ("function", "view", "index", "trigger")


@dataclass
class Statement:
    """One SQL statement of a file, with the comment lines just above it."""

    text: str  # the statement, with its closing semicolon
    comment: str  # the ``--`` lines directly above it ('' if none)
    kind: str | None = None  # what it defines, alters, comments on or drops
    action: str | None = None  # create, alter, comment, drop
    names: tuple[str, ...] = ()
    signature: str | None = None  # a function's argument types: "(jsonb, boolean, jsonb)"


def split_statements(text: str) -> list[Statement]:
    """The statements of a SQL file, split at top-level semicolons (quotes,
    dollar quotes and comments respected)."""
    out: list[Statement] = []
    i, n, start = 0, len(text), 0
    while i < n:
        c = text[i]
        if text.startswith("--", i):
            i = text.find("\n", i)
            i = n if i < 0 else i + 1
        elif text.startswith("/*", i):
            i = text.index("*/", i + 2) + 2
        elif c == "'" or c == '"':
            backslash = c == "'" and i > 0 and text[i - 1] in "eE"
            i += 1
            while True:
                if backslash and text[i] == "\\":
                    i += 2
                elif text[i] == c:
                    if text.startswith(c, i + 1):
                        i += 2
                    else:
                        i += 1
                        break
                else:
                    i += 1
        elif c == "$" and (m := re.match(r"\$(?:[A-Za-z_]\w*)?\$", text[i:])) is not None:
            i = text.index(m.group(0), i + len(m.group(0))) + len(m.group(0))
        elif c == ";":
            out.append(_statement(text[start : i + 1]))
            i += 1
            start = i
        else:
            i += 1
    rest = text[start:].strip()
    if rest and not all(
        line.lstrip().startswith("--") for line in rest.splitlines() if line.strip()
    ):
        out.append(_statement(text[start:]))
    return out


def _statement(chunk: str) -> Statement:
    """A chunk between semicolons: the leading comment block that touches the
    statement is its comment; blank-line separated comments before are not."""
    lines = chunk.strip("\n").splitlines()
    first = next(
        (k for k, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("--")),
        len(lines),
    )
    above = lines[:first]
    comment: list[str] = []
    for line in reversed(above):
        if not line.strip():
            break
        comment.insert(0, line)
    statement = Statement(text="\n".join(lines[first:]).strip(), comment="\n".join(comment))
    _classify(statement)
    return statement


_IDENT = r"(?:public\.)?(\w+)"
_PATTERNS: list[tuple[str, str, str]] = [
    ("create", "function", rf"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+{_IDENT}\s*\("),
    ("create", "view", rf"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+{_IDENT}"),
    ("create", "table", rf"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_IDENT}"),
    ("create", "type", rf"CREATE\s+TYPE\s+{_IDENT}"),
    (
        "create",
        "index",
        rf"CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?{_IDENT}",
    ),
    ("create", "trigger", rf"CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+{_IDENT}"),
    ("create", "sequence", rf"CREATE\s+SEQUENCE\s+{_IDENT}"),
    ("comment", "function", rf"COMMENT\s+ON\s+FUNCTION\s+{_IDENT}\s*\("),
    ("comment", "view", rf"COMMENT\s+ON\s+VIEW\s+{_IDENT}"),
    ("comment", "table", rf"COMMENT\s+ON\s+TABLE\s+{_IDENT}"),
    ("comment", "index", rf"COMMENT\s+ON\s+INDEX\s+{_IDENT}"),
    ("comment", "trigger", rf"COMMENT\s+ON\s+TRIGGER\s+{_IDENT}"),
    ("comment", "column", rf"COMMENT\s+ON\s+COLUMN\s+{_IDENT}\.\w+"),
    ("alter", "function", rf"ALTER\s+FUNCTION\s+{_IDENT}\s*\("),
    ("rename", "table", rf"ALTER\s+TABLE\s+{_IDENT}\s+RENAME\s+TO\s+\w+"),
    ("rename", "index", rf"ALTER\s+INDEX\s+{_IDENT}\s+RENAME\s+TO\s+\w+"),
    ("alter", "table", rf"ALTER\s+TABLE\s+(?:ONLY\s+)?{_IDENT}"),
    ("alter", "type", rf"ALTER\s+TYPE\s+{_IDENT}"),
    ("drop", "trigger", rf"DROP\s+TRIGGER\s+(?:IF\s+EXISTS\s+)?{_IDENT}"),
]
_DROP = re.compile(
    r"DROP\s+(FUNCTION|VIEW|TABLE|INDEX|TYPE)\s+(?:IF\s+EXISTS\s+)?(.*?)\s*(?:CASCADE\s*)?;", re.S
)


def _classify(s: Statement) -> None:
    text = s.text
    for action, kind, pattern in _PATTERNS:
        m = re.match(pattern, text, re.I)
        if m:
            s.action, s.kind, s.names = action, kind, (m.group(1),)
            if kind == "function" and action != "drop":
                s.signature = _signature(text[m.end() - 1 :], declared=action == "create")
            return
    m = _DROP.match(text)
    if m:
        s.action, s.kind = "drop", m.group(1).lower()
        s.names = tuple(re.findall(r"(?:public\.)?(\w+)\s*(?:\([^)]*\))?\s*(?:,|$)", m.group(2)))


def _signature(rest: str, *, declared: bool) -> str:
    """The argument types of ``(p_a jsonb, p_b boolean DEFAULT false, OUT x int)``:
    ``(jsonb, boolean)`` (as COMMENT ON FUNCTION and DROP FUNCTION spell them)."""
    depth, end = 0, len(rest)
    for end, c in enumerate(rest):  # noqa: B007 - end is read after the loop
        depth += c == "("
        depth -= c == ")"
        if depth == 0:
            break
    inner = rest[1:end]
    if not declared:
        return "(" + ", ".join(a.strip() for a in _split_args(inner)) + ")"
    types = []
    for arg in _split_args(inner):
        arg = re.split(r"\s+DEFAULT\s+|\s*=\s*", arg.strip(), maxsplit=1, flags=re.I)[0]
        words = arg.split()
        if words and words[0].upper() == "OUT":
            continue
        if words and words[0].upper() in ("IN", "INOUT", "VARIADIC"):
            words = words[1:]
        types.append(" ".join(words[1:]) if len(words) > 1 else " ".join(words))
    return "(" + ", ".join(types) + ")"


def _split_args(inner: str) -> Iterator[str]:
    depth, start = 0, 0
    for k, c in enumerate(inner):
        depth += c in "(["
        depth -= c in ")]"
        if c == "," and depth == 0:
            yield inner[start:k]
            start = k + 1
    if inner[start:].strip():
        yield inner[start:]


# -- where the files are ------------------------------------------------------


def _sql_dir(sub: str) -> Path:
    return Path(str(packaged_dir("sql").joinpath(sub)))


def schema_files() -> list[Path]:
    """``sql/schema/*.sql`` in the order they are applied (their numbers)."""
    return sorted(_sql_dir("schema").glob("*.sql"))


def migration_files() -> list[Path]:
    """``sql/migrations/NNNN_*.sql`` in revision order (files of one revision
    in the order its Alembic script applies them)."""
    order = {"schema": 0, "functions": 1, "views": 2}  # revision 0001's three files
    return sorted(
        _sql_dir("migrations").glob("[0-9][0-9][0-9][0-9]_*.sql"),
        key=lambda p: (p.name[:4], order.get(p.stem[5:], 9), p.name),
    )


# -- objects and their definitions -------------------------------------------


@dataclass
class Definition:
    """An object as a sequence of statements leaves it: its CREATE, what
    altered it since (a function's SET), its comment."""

    kind: str
    name: str
    create: Statement
    alters: list[Statement] = field(default_factory=list)
    comment: Statement | None = None
    source: str = ""  # the file of the CREATE

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    def sql(self, *, replace: bool = True) -> str:
        """The statements that (re)create it as it is, comment included."""
        create = self.create.text
        if replace and self.kind in ("function", "trigger"):
            create = re.sub(
                r"^CREATE\s+(?:OR\s+REPLACE\s+)?", "CREATE OR REPLACE ", create, flags=re.I
            )
        parts = [create] + [a.text for a in self.alters]
        if self.comment is not None:
            parts.append(self.comment.text)
        elif self.kind in ("function", "view", "index", "trigger"):
            parts.append(f"COMMENT ON {self._comment_target()} IS NULL;")
        return "\n".join(parts)

    def _comment_target(self) -> str:
        if self.kind == "function":
            return f"FUNCTION {self.name}{self.create.signature}"
        if self.kind == "trigger":
            return f"TRIGGER {self.name} ON {self.table}"
        return f"{self.kind.upper()} {self.name}"

    @property
    def table(self) -> str:
        m = re.search(r"\sON\s+(?:ONLY\s+)?(?:public\.)?(\w+)", self.create.text, re.I)
        assert m is not None, self.create.text
        return m.group(1)

    def drop(self) -> str:
        if self.kind == "function":
            return f"DROP FUNCTION IF EXISTS {self.name}{self.create.signature};"
        if self.kind == "trigger":
            return f"DROP TRIGGER IF EXISTS {self.name} ON {self.table};"
        return f"DROP {self.kind.upper()} IF EXISTS {self.name};"


def replay(statements: Iterable[tuple[str, Statement]]) -> dict[str, Definition]:
    """The objects a sequence of (file, statement) leaves defined, by
    ``kind:name``. CREATE OR REPLACE FUNCTION resets a function's settings (as
    PostgreSQL does); a DROP, or a RENAME of a table or index, removes it."""
    objects: dict[str, Definition] = {}
    for source, s in statements:
        if s.kind is None:
            continue
        for name in s.names:
            key = f"{s.kind}:{name}"
            if s.action == "create":
                old = objects.get(key)
                kept_comment = (
                    old.comment if old is not None and s.kind in ("function", "view") else None
                )
                objects[key] = Definition(s.kind, name, s, comment=kept_comment, source=source)
            elif s.action == "alter" and key in objects and s.kind == "function":
                objects[key].alters.append(s)
            elif s.action == "comment" and key in objects:
                objects[key].comment = s
            elif s.action in ("drop", "rename"):
                objects.pop(key, None)
    return objects


def _file_statements(paths: Iterable[Path]) -> Iterator[tuple[str, Statement]]:
    for path in paths:
        for s in split_statements(path.read_text(encoding="utf-8")):
            yield path.name, s


def schema_objects() -> dict[str, Definition]:
    """Every object ``sql/schema/`` defines (each must be defined there once)."""
    seen: dict[str, str] = {}
    for source, s in _file_statements(schema_files()):
        if s.action == "create" and s.kind is not None:
            for name in s.names:
                key = f"{s.kind}:{name}"
                if key in seen:
                    raise ValueError(
                        f"{key} is defined twice in sql/schema ({seen[key]}, {source})"
                    )
                seen[key] = source
    return replay(_file_statements(schema_files()))


def revision_objects(before: str) -> dict[str, Definition]:
    """The objects the revisions before ``before`` (a revision id, "0014")
    leave defined, replayed from their SQL files."""
    return replay(_file_statements(p for p in migration_files() if p.name[:4] < before))


def find(objects: dict[str, Definition], spec: str) -> Definition:
    """``dedup_ingest`` or ``function:dedup_ingest``."""
    if ":" in spec:
        if spec not in objects:
            raise LookupError(f"{spec} is not defined in sql/schema")
        return objects[spec]
    matches = [d for d in objects.values() if d.name == spec]
    if not matches:
        raise LookupError(f"{spec} is not defined in sql/schema")
    if len(matches) > 1:
        raise LookupError(f"{spec} names several objects: {', '.join(d.key for d in matches)}")
    return matches[0]


def execute_each(op: Any, sql: str) -> None:
    """Run ``sql`` through Alembic's ``op`` one statement a call. A Citus
    coordinator refuses DDL on a distributed table's index sent with other
    statements in one string ("cannot insert multiple commands into a
    prepared statement"): a revision that changes an index runs its SQL file
    (and its downgrade) this way, and is still one that runs no SQL of its
    own (``citus_upgrade_blockers``)."""
    for statement in split_statements(sql):
        op.execute(statement.text)


def previous_definitions(revision: str, specs: Iterable[str]) -> str:
    """What a downgrade of ``revision`` runs for objects that revision
    (re)defined: each one's definition as the revisions before it left it
    (settings and comment included), or its DROP if it did not exist then."""
    before = revision_objects(revision)
    parts = []
    for spec in specs:
        kind, name = spec.split(":", 1)
        old = before.get(spec)
        if kind in ("view", "index"):
            parts.append(f"DROP {kind.upper()} IF EXISTS {name};")
        if old is not None:
            parts.append(old.sql())
        elif kind in ("function", "trigger"):
            current = revision_objects(_next(revision)).get(spec)
            if current is None:
                raise LookupError(f"{spec}: revision {revision} does not define it")
            parts.append(current.drop())
    return "\n\n".join(parts)


def _next(revision: str) -> str:
    return f"{int(revision) + 1:04d}"


def current_definitions(specs: Iterable[str]) -> str:
    """What an upgrade runs for objects it takes from ``sql/schema/``."""
    objects = schema_objects()
    parts = []
    for spec in specs:
        d = find(objects, spec)
        if d.kind in ("view", "index"):
            parts.append(f"DROP {d.kind.upper()} IF EXISTS {d.name};")
        parts.append(d.sql())
    return "\n\n".join(parts)


# -- building a database from the schema ---------------------------------------


def schema_sql() -> str:
    """The whole of ``sql/schema/`` in order, as one script."""
    return "\n".join(p.read_text(encoding="utf-8") for p in schema_files())


def citus_files() -> list[Path]:
    """``sql/citus/*.sql``: how a Citus cluster distributes the schema, and the
    complete definitions of the functions whose single-node form Citus cannot
    plan (applied after ``sql/schema/``, by number)."""
    return sorted(_sql_dir("citus").glob("*.sql"))


def citus_objects() -> dict[str, Definition]:
    """The objects ``sql/citus/`` (re)defines."""
    return replay(_file_statements(citus_files()))


def citus_settings() -> list[Statement]:
    """The ``ALTER FUNCTION`` statements of ``sql/citus/`` for functions it
    does not redefine: settings a Citus coordinator gives the single-node
    definitions (dedup_ingest's plan cache)."""
    created = set(citus_objects())
    return [
        s
        for _, s in _file_statements(citus_files())
        if s.kind == "function" and s.action == "alter" and f"function:{s.names[0]}" not in created
    ]


def citus_forms_sql() -> str:
    """Every function and view ``sql/citus/`` defines, as it defines it, and
    the settings it gives the others (``citus_settings``): what a Citus
    coordinator applies again after revisions, which carry the single-node
    definitions."""
    parts = []
    for d in citus_objects().values():
        if d.kind in ("function", "view"):
            # as the file says it (the schema's comment stays when it adds none)
            comment = [d.comment.text] if d.comment is not None else []
            parts.append("\n".join([d.create.text, *(a.text for a in d.alters), *comment]))
    parts.extend(s.text for s in citus_settings())
    return "\n\n".join(parts)


def citus_upgrade_blockers(after: str) -> list[str]:
    """What the revisions after ``after`` do that a Citus coordinator is not
    taken through: create a table (it would be a local table, not
    distributed), or run SQL of their Alembic script's own besides their SQL
    file (0021's rewrite of the MinHash band rows, which a cluster refuses).
    One line each, ``"0001: table documents"``; empty when the upgrade can run."""
    out = []
    for path in migration_files():
        if path.name[:4] <= after:
            continue
        for s in split_statements(path.read_text(encoding="utf-8")):
            if s.kind == "table" and s.action == "create":
                out.append(f"{path.name[:4]}: table {s.names[0]}")
    for path in sorted(packaged_dir("migrations").joinpath("versions").iterdir(), key=str):
        name = Path(str(path)).name
        if name[:4].isdigit() and name.endswith(".py") and name[:4] > after:
            if _runs_own_sql(path.read_text(encoding="utf-8")):
                out.append(f"{name[:4]}: SQL of its own in {name}")
    return sorted(out)


def _runs_own_sql(script: str) -> bool:
    """Does an Alembic script's upgrade() call ``op`` with anything but
    ``op.execute(read_sql(...))``?"""
    for node in ast.parse(script).body:
        if isinstance(node, ast.FunctionDef) and node.name == "upgrade":
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "op"
                ):
                    arg = call.args[0] if call.args else None
                    if not (
                        call.func.attr == "execute"
                        and isinstance(arg, ast.Call)
                        and isinstance(arg.func, ast.Name)
                        and arg.func.id == "read_sql"
                    ):
                        return True
    return False


def create_schema(conn: Any, *, citus: bool = False) -> None:
    """Build the schema in an empty database from ``sql/schema/`` (one
    transaction; the caller stamps the Alembic revision); with ``citus``, then
    distribute it (``sql/citus/``) on the coordinator ``conn`` is connected to."""
    with conn.transaction():
        conn.execute(schema_sql())
        if citus:
            for path in citus_files():
                conn.execute(path.read_text(encoding="utf-8"))


# -- the catalog, for comparing databases ---------------------------------------

_NOT_EXTENSION = "NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = {oid} AND e.deptype = 'e')"


def catalog(conn: Any) -> list[str]:
    """The public schema of a database as lines of text, for a diff: relations
    with their columns (types, defaults, nullability, identity, generation),
    constraints, indexes, partition keys, triggers and comments; sequences;
    functions (definition, settings, comment); views; extensions; the
    settings rows and the lock stripes."""
    out: list[str] = []

    def rows(query: str) -> list[tuple]:
        return conn.execute(query).fetchall()

    out += [f"extension {name}" for (name,) in rows("SELECT extname FROM pg_extension ORDER BY 1")]
    relations = rows(
        f"""SELECT c.oid, c.relname, c.relkind, pg_get_partkeydef(c.oid), c.reloptions,
                   obj_description(c.oid, 'pg_class')
              FROM pg_class c
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'c')
               AND NOT c.relispartition AND {_NOT_EXTENSION.format(oid="c.oid")}
             ORDER BY c.relname"""
    )
    kinds = {"r": "table", "p": "table", "v": "view", "c": "type"}
    for oid, name, relkind, partkey, options, comment in relations:
        out.append(f"{kinds[relkind]} {name}")
        if partkey:
            out.append(f"  partition by {partkey}")
        if options:
            out.append(f"  options {options}")
        if comment is not None:
            out.append(f"  comment {comment!r}")
        columns = rows(
            f"""SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                       pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
                       col_description(a.attrelid, a.attnum)
                  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                 WHERE a.attrelid = {oid} AND a.attnum > 0 AND NOT a.attisdropped
                 ORDER BY a.attnum"""
        )
        for position, (col, typ, notnull, default, identity, generated, col_comment) in enumerate(
            columns, 1
        ):
            line = f"  column {position} {col} {typ}"
            line += " NOT NULL" if notnull else ""
            if default is not None:
                line += f" {'GENERATED ' + default if generated else 'DEFAULT ' + default}"
            line += {"a": " IDENTITY ALWAYS", "d": " IDENTITY BY DEFAULT"}.get(identity, "")
            out.append(line)
            if col_comment is not None:
                out.append(f"    comment {col_comment!r}")
        if relkind == "v":
            out.append("  definition:")
            (definition,) = rows(f"SELECT pg_get_viewdef({oid}, true)")[0]
            out += [f"  | {line}" for line in definition.splitlines()]
        for conname, contype, condef in rows(
            # NOT NULL constraints (PostgreSQL 18 names them) are the columns'
            # NOT NULL above; their generated names depend on what else
            # existed when the table was made
            f"""SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint
                 WHERE conrelid = {oid} AND contype <> 'n' ORDER BY conname"""
        ):
            out.append(f"  constraint {conname} ({contype}) {condef}")
        for indexname, indexdef, index_comment in rows(
            f"""SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid),
                       obj_description(i.indexrelid, 'pg_class')
                  FROM pg_index i WHERE i.indrelid = {oid} ORDER BY 1"""
        ):
            out.append(f"  index {indexname}: {indexdef}")
            if index_comment is not None:
                out.append(f"    comment {index_comment!r}")
        for tgname, tgdef, tg_comment in rows(
            f"""SELECT tgname, pg_get_triggerdef(oid), obj_description(oid, 'pg_trigger')
                  FROM pg_trigger WHERE tgrelid = {oid} AND NOT tgisinternal ORDER BY tgname"""
        ):
            out.append(f"  trigger {tgname}: {tgdef}")
            if tg_comment is not None:
                out.append(f"    comment {tg_comment!r}")
    for seq in rows(
        """SELECT s.sequencename, s.data_type, s.start_value, s.increment_by, s.min_value,
                  s.max_value, s.cycle,
                  (SELECT d.refobjid::regclass::text || '.' || a.attname || ' (' || d.deptype::text || ')'
                     FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                    WHERE d.objid = (quote_ident(s.sequencename))::regclass AND d.deptype IN ('a', 'i'))
             FROM pg_sequences s WHERE s.schemaname = 'public' ORDER BY 1"""
    ):
        out.append(
            f"sequence {seq[0]} {seq[1]} start {seq[2]} by {seq[3]} [{seq[4]}, {seq[5]}]"
            f"{' cycle' if seq[6] else ''} owned by {seq[7]}"
        )
    for signature, definition, config, comment in rows(
        f"""SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), p.proconfig,
                   obj_description(p.oid, 'pg_proc')
              FROM pg_proc p
             WHERE p.pronamespace = 'public'::regnamespace AND {_NOT_EXTENSION.format(oid="p.oid")}
             ORDER BY 1"""
    ):
        out.append(f"function {signature}")
        out.append(f"  settings {config}")
        if comment is not None:
            out.append(f"  comment {comment!r}")
        out += [f"  | {line}" for line in definition.rstrip().splitlines()]
    if rows("SELECT to_regclass('dedup_settings')")[0][0] is None:
        return out  # an empty database, or one downgraded to base
    out += [
        f"setting {name} = {value} ({description})"
        for name, value, description in rows(
            "SELECT name, value::text, description FROM dedup_settings ORDER BY name"
        )
    ]
    out += [
        f"lock stripes {count} ({low}..{high})"
        for count, low, high in rows(
            "SELECT count(*), min(stripe), max(stripe) FROM dedup_lock_stripes"
        )
    ]
    return out


# -- frozen revisions --------------------------------------------------------

CHECKSUMS = "checksums.txt"


def revision_files(root: Path = _SOURCE_TREE) -> dict[str, list[Path]]:
    """Each revision's files (its Alembic script and its SQL), by revision id."""
    out: dict[str, list[Path]] = {}
    for path in sorted((root / "migrations" / "versions").glob("[0-9][0-9][0-9][0-9]_*.py")):
        out.setdefault(path.name[:4], []).append(path)
    for path in sorted((root / "sql" / "migrations").glob("[0-9][0-9][0-9][0-9]_*.sql")):
        out.setdefault(path.name[:4], []).append(path)
    return out


def checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_checksums(root: Path = _SOURCE_TREE) -> dict[str, str]:
    """``migrations/checksums.txt``: path (from the repository root) -> sha256."""
    manifest = root / "migrations" / CHECKSUMS
    out = {}
    for line in manifest.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, path = line.split(maxsplit=1)
            out[path] = digest
    return out


def freeze(revisions: Iterable[str], root: Path = _SOURCE_TREE) -> None:
    """Record the files of ``revisions`` as released: from now on they must
    not change (tests/test_schema.py checks)."""
    manifest = root / "migrations" / CHECKSUMS
    sums = read_checksums(root) if manifest.exists() else {}
    files = revision_files(root)
    for revision in revisions:
        for path in files[revision]:
            sums[path.relative_to(root).as_posix()] = checksum(path)
    lines = [
        "# Released revisions: sha256 of each file. A released revision never changes;",
        "# change the schema with a new one (python -m dedup_pg.schema new-revision).",
    ]
    lines += [f"{digest}  {path}" for path, digest in sorted(sums.items())]
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")


# -- making a revision ---------------------------------------------------------

_SCRIPT = '''"""{message}

Revision ID: {revision}
Revises: {down_revision}
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "{revision}"
down_revision = "{down_revision}"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = {objects}


def upgrade() -> None:
    op.execute(read_sql("{sql_name}"))


def downgrade() -> None:
    # Undo the hand-written part of the SQL file here (before or after the
    # definitions, as the dependencies need).
    op.execute(previous_definitions(revision, OBJECTS))
'''

_SQL_HEAD = """-- dedup-pg revision {revision}: {message} (applied by
-- migrations/versions/{script_name}).
--
-- Why: (say what was measured or what broke, and what changes)
--
-- Hand-written changes (ALTER TABLE, settings rows, data) go here, above the
-- definitions copied from sql/schema/ below.
"""


def slug(message: str) -> str:
    words = re.findall(r"[a-z0-9]+", message.lower())
    return "_".join(words[:5]) or "revision"


def new_revision(message: str, specs: list[str], root: Path = _SOURCE_TREE) -> list[Path]:
    """Write revision N+1: its SQL file (the named objects copied from
    sql/schema/) and its Alembic script; the revision before it is frozen."""
    files = revision_files(root)
    head = max(files)
    revision = _next(head)
    objects = schema_objects()
    definitions = [find(objects, spec) for spec in specs]
    for d in definitions:
        if d.kind not in REPLACEABLE:
            raise ValueError(
                f"{d.key}: a {d.kind} changes by ALTER; write that in the revision by hand"
            )
    name = f"{revision}_{slug(message)}"
    sql_path = root / "sql" / "migrations" / f"{name}.sql"
    script_path = root / "migrations" / "versions" / f"{name}.py"
    body = [_SQL_HEAD.format(revision=revision, message=message, script_name=script_path.name)]
    for d in definitions:
        drop = f"DROP {d.kind.upper()} IF EXISTS {d.name};\n" if d.kind in ("view", "index") else ""
        body.append(f"-- {d.key}, from sql/schema/{d.source}\n{drop}{d.sql()}\n")
    sql_path.write_text("\n".join(body), encoding="utf-8")
    script_path.write_text(
        _SCRIPT.format(
            message=message,
            revision=revision,
            down_revision=head,
            sql_name=sql_path.name,
            objects="[" + ", ".join(f'"{d.key}"' for d in definitions) + "]",
        ),
        encoding="utf-8",
    )
    freeze([head], root)
    return [sql_path, script_path]


_COPIED = re.compile(r"^-- (?:function|view|index|trigger):\S+, from sql/schema/", re.M)


def _unreleased(revision: str, root: Path) -> list[Path]:
    files = revision_files(root).get(revision)
    if not files:
        raise LookupError(f"no revision {revision}")
    released = read_checksums(root)
    if any(path.relative_to(root).as_posix() in released for path in files):
        raise ValueError(f"revision {revision} is released: change the schema with a new one")
    return files


def refresh_revision(revision: str, root: Path = _SOURCE_TREE) -> Path:
    """Copy the current definitions (sql/schema/) of the objects an unreleased
    revision names (its script's OBJECTS) into its SQL file again, keeping the
    hand-written part above them: after a merge, a revision made beside
    another one that changed the same objects carries both changes."""
    files = _unreleased(revision, root)
    script = next(p for p in files if p.suffix == ".py")
    sql_path = next(p for p in files if p.suffix == ".sql")
    specs: list[str] = []
    for node in ast.parse(script.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "OBJECTS" for t in node.targets
        ):
            specs = list(ast.literal_eval(node.value))
    text = sql_path.read_text(encoding="utf-8")
    match = _COPIED.search(text)
    head = text[: match.start()] if match else text.rstrip("\n") + "\n\n"
    objects = schema_objects()
    body = []
    for spec in specs:
        d = find(objects, spec)
        drop = f"DROP {d.kind.upper()} IF EXISTS {d.name};\n" if d.kind in ("view", "index") else ""
        body.append(f"-- {d.key}, from sql/schema/{d.source}\n{drop}{d.sql()}\n")
    sql_path.write_text(head + "\n".join(body), encoding="utf-8")
    return sql_path


def renumber_revision(revision: str, new: str, root: Path = _SOURCE_TREE) -> list[Path]:
    """Give an unreleased revision another number (after the one before it):
    for branches that each made revision N. Files renamed; revision,
    down_revision and the SQL file's name inside rewritten."""
    files = _unreleased(revision, root)
    if new in revision_files(root):
        raise ValueError(f"revision {new} exists")
    down = f"{int(new) - 1:04d}"
    if down not in revision_files(root):
        raise LookupError(f"no revision {down} to follow")
    out = []
    old_sql = next(p for p in files if p.suffix == ".sql").name
    for path in files:
        target = path.with_name(new + path.name[4:])
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            text = re.sub(r'^revision = "\d{4}"', f'revision = "{new}"', text, flags=re.M)
            text = re.sub(
                r'^down_revision = "\d{4}"', f'down_revision = "{down}"', text, flags=re.M
            )
            text = re.sub(r"^Revision ID: \d{4}", f"Revision ID: {new}", text, flags=re.M)
            text = re.sub(r"^Revises: \d{4}", f"Revises: {down}", text, flags=re.M)
            text = text.replace(old_sql, new + old_sql[4:])
        else:
            text = text.replace(
                f"-- dedup-pg revision {revision}:", f"-- dedup-pg revision {new}:", 1
            )
            text = text.replace(f"migrations/versions/{revision}_", f"migrations/versions/{new}_")
        target.write_text(text, encoding="utf-8")
        path.unlink()
        out.append(target)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dedup_pg.schema", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser(
        "new-revision", help="copy changed objects from sql/schema/ into a new revision"
    )
    new.add_argument("message")
    new.add_argument(
        "--objects",
        default="",
        help="comma-separated names (dedup_ingest, view:dedup_partitions) of the objects it changes",
    )
    show = sub.add_parser("show", help="print an object's current definition (sql/schema/)")
    show.add_argument("name")
    previous = sub.add_parser(
        "previous", help="print what a downgrade of REVISION re-applies for NAME"
    )
    previous.add_argument("revision")
    previous.add_argument("name")
    freeze_cmd = sub.add_parser(
        "freeze", help="record revisions as released (migrations/checksums.txt)"
    )
    freeze_cmd.add_argument("revisions", nargs="+")
    refresh = sub.add_parser(
        "refresh",
        help="copy the current definitions of an unreleased revision's objects into it again",
    )
    refresh.add_argument("revision")
    renumber = sub.add_parser("renumber", help="give an unreleased revision another number")
    renumber.add_argument("revision")
    renumber.add_argument("new")
    args = parser.parse_args(argv)
    if args.command == "new-revision":
        specs = [s.strip() for s in args.objects.split(",") if s.strip()]
        for path in new_revision(args.message, specs):
            print(path.relative_to(_SOURCE_TREE))
    elif args.command == "show":
        print(find(schema_objects(), args.name).sql(replace=False))
    elif args.command == "previous":
        print(previous_definitions(args.revision, [find(schema_objects(), args.name).key]))
    elif args.command == "freeze":
        freeze(args.revisions)
    elif args.command == "refresh":
        print(refresh_revision(args.revision).relative_to(_SOURCE_TREE))
    elif args.command == "renumber":
        for path in renumber_revision(args.revision, args.new):
            print(path.relative_to(_SOURCE_TREE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
