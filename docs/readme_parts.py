"""The parts of README.md that the code can state, generated with cog.

README.md holds ``<!-- [[[cog ... ]]] -->`` blocks that call these functions;
the output between a block and its ``<!-- [[[end]]] -->`` is rewritten by

    cog -I docs -r README.md          # regenerate
    cog -I docs --check README.md     # fail if a generated part is stale

and ``tests/test_docs.py`` runs the check. What is generated: the command
table (from the click group in ``dedup_pg.cli``), the options that read an
environment variable, the verdict fields (``dedup_pg.verdicts.Verdict`` and the
JSON the CLI writes), the settings and their defaults (the ``dedup_settings``
rows of a freshly migrated database), the migration list
(``migrations/versions``) and the normalization version.

Settings defaults live in the database, written by the migrations. They are
read from ``DEDUP_PG_DOCS_DSN`` when it is set (a migrated database whose
settings nobody changed; the tests point it at theirs), else from a throwaway
embedded server started in a temporary folder (~10 s). ``DEDUP_PG_DSN`` is
never used: a working database holds its own values, not the defaults.
"""

from __future__ import annotations

import ast
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import fields
from functools import lru_cache
from pathlib import Path

import click

REPO = Path(__file__).resolve().parents[1]
MIGRATIONS = REPO / "migrations" / "versions"
#: Options every database command takes; described once, not in each row.
SHARED_OPTIONS = ("dsn", "home")


def _out(text: str) -> None:
    import cog  # only importable while cog runs

    cog.outl(text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --------------------------------------------------------------------- commands


def commands() -> Iterator[tuple[str, click.Command]]:
    """Every command that runs something ("review restore"), in the order
    ``--help`` lists them; groups are expanded into their subcommands."""
    from dedup_pg.cli import main

    def walk(group: click.Group, prefix: str) -> Iterator[tuple[str, click.Command]]:
        for name in sorted(group.commands):
            command = group.commands[name]
            if command.hidden:
                continue
            path = f"{prefix} {name}".strip()
            if isinstance(command, click.Group):
                yield from walk(command, path)
            else:
                yield path, command

    yield from walk(main, "")


def usage(path: str, command: click.Command) -> str:
    """``dedup-pg review restore CANDIDATE_ID``: the command with its arguments."""
    ctx = click.Context(command)
    args = [p.make_metavar(ctx) for p in command.params if isinstance(p, click.Argument)]
    return " ".join(["dedup-pg", path, *args])


def options(command: click.Command) -> list[str]:
    """The command's own options (``--out``, ``--progress/--no-progress``)."""
    names = []
    for p in command.params:
        if not isinstance(p, click.Option) or p.hidden or p.name in SHARED_OPTIONS:
            continue
        longest = max(p.opts, key=len)
        names.append("/".join([longest, *p.secondary_opts]))
    return names


def command_table(descriptions: Mapping[str, str]) -> None:
    """The command table: every command, its arguments and options from the
    click group, what it does from ``descriptions`` (keyed by "review restore").
    Rows follow ``descriptions``. A command without a description, or a
    description of no command, is an error: the README must change with the
    command list."""
    listed = dict(commands())
    missing = [name for name in listed if name not in descriptions]
    unknown = [name for name in descriptions if name not in listed]
    if missing or unknown:
        raise ValueError(
            f"README command table out of date: undocumented {missing}, no such command {unknown}"
        )
    _out("| command | what it does | options |")
    _out("|---|---|---|")
    for name in descriptions:  # in the README's order
        command = listed[name]
        opts = ", ".join(f"`{o}`" for o in options(command))
        _out(f"| `{usage(name, command)}` | {_cell(descriptions[name])} | {opts} |")


def environment_variables() -> None:
    """One line: every option that falls back to an environment variable."""
    seen: dict[str, str] = {}
    for _, command in commands():
        for p in command.params:
            if isinstance(p, click.Option) and p.envvar:
                for var in [p.envvar] if isinstance(p.envvar, str) else p.envvar:
                    seen.setdefault(var, max(p.opts, key=len))
    listed = ", ".join(f"`{opt}`: `{var}`" for var, opt in seen.items())
    _out(
        f"`--dsn` and `--home` are taken by every command that opens the database. "
        f"Options with an environment variable (also shown in `--help`): {listed}."
    )


# --------------------------------------------------------------------- verdicts


def verdict_keys() -> list[str]:
    """The keys of one ``--out`` line (``dedup_pg.cli.ingest.verdict_line``), in order."""
    from dedup_pg.cli import verdict_line
    from dedup_pg.verdicts import Verdict

    return list(json.loads(verdict_line(Verdict(id=None, verdict="new"))))


def verdict_example(**values: object) -> None:
    """One ``--out`` line, written by the CLI's own function."""
    from dedup_pg.cli import verdict_line
    from dedup_pg.verdicts import Verdict

    _out("```json")
    _out(verdict_line(Verdict(**values)))  # type: ignore[arg-type]
    _out("```")


def verdict_table(meanings: Mapping[str, str]) -> None:
    """The verdict fields: every key of the JSON line, which must also be every
    field of ``Verdict``; ``meanings`` keyed by field name (``"a / b"`` describes
    two fields in one row)."""
    from dedup_pg.verdicts import Verdict

    keys = verdict_keys()
    dataclass_fields = [f.name for f in fields(Verdict)]
    if sorted(keys) != sorted(dataclass_fields):
        raise ValueError(f"--out keys {keys} are not the Verdict fields {dataclass_fields}")
    described = [k.strip() for row in meanings for k in row.split("/")]
    missing = [k for k in keys if k not in described]
    unknown = [k for k in described if k not in keys]
    if missing or unknown:
        raise ValueError(
            f"README verdict fields out of date: undocumented {missing}, no such field {unknown}"
        )
    _out("| field | meaning |")
    _out("|---|---|")
    for row, meaning in meanings.items():
        names = " / ".join(f"`{k.strip()}`" for k in row.split("/"))
        _out(f"| {names} | {_cell(meaning)} |")


# --------------------------------------------------------------------- settings


@lru_cache(maxsize=1)
def _defaults() -> dict[str, tuple]:
    """What a freshly migrated database says: the settings rows, and the SimHash
    distances per length step under them."""
    dsn = os.environ.get("DEDUP_PG_DOCS_DSN")
    if dsn:
        return _read_defaults(dsn)
    from dedup_pg import database

    with tempfile.TemporaryDirectory(prefix="dedup-pg-docs-") as home:
        try:
            dsn = database.start_embedded(home)
            database.migrate(dsn)
            return _read_defaults(dsn)
        finally:
            database.stop_embedded(home)


def _read_defaults(dsn: str) -> dict[str, tuple]:
    import psycopg

    from dedup_pg import database

    if database.current_revision(dsn) != database.head_revision():
        raise ValueError(f"{dsn} is not migrated to {database.head_revision()}")
    with psycopg.connect(dsn) as conn:
        changed = conn.execute(
            "SELECT count(*) FROM dedup_settings_history"
            " WHERE target = 'setting' AND reason NOT LIKE 'migration%'"
        ).fetchone()
        if changed and changed[0]:
            raise ValueError(f"settings of {dsn} were changed: not the defaults")
        settings = conn.execute(
            "SELECT name, value::text, description FROM dedup_settings ORDER BY name"
        ).fetchall()
        # the engine's own rule at each length step (dedup_simhash_distance_steps)
        distances = conn.execute(
            "SELECT x.min_length, x.duplicate_distance, x.review_distance"
            "  FROM dedup_simhash_distance_steps("
            "           (SELECT jsonb_object_agg(name, value) FROM dedup_settings)) x"
            " WHERE x.min_length IS NOT NULL ORDER BY 1"
        ).fetchall()
    return {"settings": tuple(settings), "distances": tuple(distances)}


def default_settings() -> tuple[tuple[str, str, str], ...]:
    """(name, default as JSON text, description) of every setting, by name."""
    return _defaults()["settings"]


def simhash_distance_table() -> None:
    """Duplicate and review distance per normalized length, under the defaults."""
    rows = _defaults()["distances"]
    _out("| normalized length (chars) | duplicate distance | review distance |")
    _out("|---|---|---|")
    for i, (low, duplicate, review) in enumerate(rows):
        if i + 1 < len(rows):
            span = f"{low}-{rows[i + 1][0] - 1}" if low else f"< {rows[i + 1][0]}"
        else:
            span = f">= {low}"
        _out(f"| {span} | {duplicate} | {review} |")


def settings_table() -> None:
    """Every setting with its default (JSON, as `dedup-pg settings set` takes it)."""
    _out("| setting | default | what it does |")
    _out("|---|---|---|")
    for name, value, description in default_settings():
        _out(f"| `{name}` | `{value}` | {_cell(description)} |")


# ------------------------------------------------------------ migrations, norm


def migrations() -> list[tuple[str, str, str]]:
    """(revision, file name, the docstring's first paragraph) in revision order."""
    found = []
    for path in sorted(MIGRATIONS.glob("[0-9]*.py")):
        module = ast.parse(path.read_text(encoding="utf-8"))
        revision = next(
            node.value.value
            for node in module.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "revision" for t in node.targets)
            and isinstance(node.value, ast.Constant)
        )
        doc = (ast.get_docstring(module) or "").split("\n\n")[0]
        found.append((str(revision), path.name, " ".join(doc.split())))
    return found


def migration_list() -> None:
    for revision, filename, summary in migrations():
        _out(f"- `{revision}` (`migrations/versions/{filename}`): {summary}")


def normalization_version() -> None:
    from dedup_pg.normalize import NORMALIZATION_VERSION

    _out(
        f"Normalization version: **{NORMALIZATION_VERSION}** "
        "(`dedup_pg.normalize.NORMALIZATION_VERSION`, stored with each document in "
        "`norm_version`; after it changes, `dedup-pg rebuild --refingerprint` "
        "recomputes stored fingerprints)."
    )
