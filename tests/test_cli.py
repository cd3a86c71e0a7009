"""The dedup-pg command, in process (click's runner) and as a real console script."""

import json
import os
import re
import subprocess
import sys

import click
from click.testing import CliRunner

from dedup_pg.cli import main

from conftest import REPO

GOOD = "今天上午,示例市举行新闻发布会,通报了前三季度全市经济运行的主要情况和下一步工作安排。"


def run(*args, input=None):
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    return result


def test_ingest_writes_one_verdict_per_line_and_reports_bad_lines(dsn, tmp_path):
    src = tmp_path / "in.jsonl"
    lines = [
        json.dumps(
            {
                "id": "a",
                "title": "标题",
                "body": GOOD,
                "url": "https://a.example/1",
                "source": "a",
                # dated, not now: "c" below must stay within a's 7-day window
                "seen_at": "2026-11-30T07:00:00+08:00",
            },
            ensure_ascii=False,
        ),
        "{not json",
        json.dumps({"id": "b"}),
        "",
        json.dumps(
            {
                "id": "c",
                "title": "标题",
                "body": GOOD,
                "source": "c",
                "seen_at": "2026-11-30T08:00:00+08:00",
            },
            ensure_ascii=False,
        ),
    ]
    src.write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "d", "body": "\xff\xfe"}\n')
    out = tmp_path / "out.jsonl"
    result = run("ingest", str(src), "--out", str(out), "--dsn", dsn, "--no-progress")
    assert result.exit_code == 3, result.output  # some items rejected
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(v["id"], v["verdict"]) for v in verdicts] == [
        ("a", "new"),
        ("line 2", "error"),
        ("b", "error"),
        ("c", "duplicate"),
        ("line 6", "error"),
    ]
    assert set(verdicts[0]) >= {"id", "verdict", "layer", "matched_id", "score", "error"}
    assert (
        verdicts[3]["layer"] == "exact"
        and verdicts[3]["matched_id"] == "a"
        and verdicts[3]["score"] == 1.0
    )
    assert (
        "malformed JSON" in verdicts[1]["error"] and "missing field: body" in verdicts[2]["error"]
    )
    assert "not valid UTF-8" in verdicts[4]["error"]
    assert "5 documents" in result.stderr


def test_ingest_from_stdin_with_workers(dsn):
    data = "\n".join(json.dumps({"id": str(i), "body": GOOD + str(i) * 3}) for i in range(5))
    result = run("ingest", "-", "--dsn", dsn, "--workers", "1", "--out", "-", input=data)
    assert result.exit_code == 0
    assert len([line for line in result.stdout.splitlines() if line.startswith("{")]) == 5


def test_check_and_stats(dsn):
    run(
        "ingest", "-", "--dsn", dsn, input=json.dumps({"id": "x", "body": GOOD}, ensure_ascii=False)
    )
    result = run("check", GOOD, "--dsn", dsn)
    assert result.exit_code == 0 and result.stdout.startswith("duplicate of x")
    result = run(
        "check", "一段从未见过的新文本内容,与库中任何文档都不相同。", "--dsn", dsn, "--json"
    )
    assert json.loads(result.stdout)["verdict"] == "new"
    result = run("check", "   ", "--dsn", dsn)
    assert result.exit_code == 1 and "empty" in result.stdout
    assert run("check", GOOD, "--exact", "--dsn", dsn).stdout.startswith("duplicate of x (")
    near = GOOD + "本文来自示例网。"
    assert run("check", near, "--exact", "--dsn", dsn).stdout.strip() == "new"
    result = run("stats", "--dsn", dsn)
    assert "documents 1" in result.stdout and "ingested" in result.stdout
    stats = json.loads(run("stats", "--dsn", dsn, "--format", "json").stdout)
    assert stats["totals"]["documents"] == 1 and stats["daily"][0]["new"] == 1


def test_init_keeps_jieba_tables_in_the_term_cache(dsn, tmp_path, monkeypatch):
    from dedup_pg import term_cache

    monkeypatch.setenv(term_cache.ENV, str(tmp_path))
    assert not list(tmp_path.glob("jieba-*.npz"))
    assert run("init", "--dsn", dsn).exit_code == 0
    assert [p.name for p in tmp_path.glob("jieba-*.npz")] == [term_cache.jieba_path().name]
    assert term_cache.load_jieba() is not None
    monkeypatch.setenv(term_cache.ENV, "off")
    assert run("init", "--dsn", dsn).exit_code == 0  # nowhere to keep them: nothing written


def test_settings_show_and_set(dsn):
    assert "window_days" in run("settings", "show", "--dsn", dsn).stdout
    assert (
        run("settings", "set", "window_days", "3", "--dsn", dsn).stdout.strip() == "window_days = 3"
    )
    result = run("settings", "set", "no_such_setting", "1", "--dsn", dsn)
    assert result.exit_code == 1 and "unknown setting 'no_such_setting'" in result.output


def test_unreachable_database_is_a_clean_error():
    result = run("check", GOOD, "--dsn", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert result.exit_code == 1 and result.output.startswith("Error: cannot connect to PostgreSQL")
    assert "Traceback" not in result.output


def test_every_command_has_help_and_is_in_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ctx = click.Context(main)
    names = []
    for name, command in main.commands.items():
        if isinstance(command, click.Group):
            names += [f"{name} {sub}" for sub in command.commands]
        else:
            names.append(name)
        assert command.get_short_help_str(), name
    for name in names:
        assert re.search(rf"dedup-pg {name}\b", readme), (
            f"`dedup-pg {name}` is not documented in README.md"
        )
    assert ctx  # the group itself builds


def test_demo_console_script_on_a_fresh_embedded_server(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("DEDUP_PG_DSN", None)
    env.pop("DEDUP_PG_HOME", None)
    result = subprocess.run(
        [sys.executable, "-m", "dedup_pg.cli", "demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "19/19 verdicts as expected" in result.stdout
    assert "demo-05-repost-exact       duplicate of demo-05" in result.stdout


def test_review_commands(dsn, sina):
    original = sina[20]
    lines = [
        {"id": "orig", "title": original["title"], "body": original["body"]},
        {
            "id": "copy",
            "title": original["title"],
            "body": original["body"] + "\n本文转载自示例网,如有侵权请联系删除,谢谢。",
        },
    ]
    run(
        "ingest",
        "-",
        "--dsn",
        dsn,
        input="\n".join(json.dumps(x, ensure_ascii=False) for x in lines),
    )
    assert run("review", "list", "--dsn", dsn).stdout.strip() == "nothing to review"
    shown = run("review", "show", "1", "--dsn", dsn)
    assert shown.exit_code == 0 and shown.stdout.startswith("candidate 1: auto,")
    assert "--- incoming: copy" in shown.stdout and "--- matched: orig" in shown.stdout
    assert "本文转载自示例网" in shown.stdout
    restored = run("review", "restore", "1", "--note", "own page", "--by", "ana", "--dsn", dsn)
    assert restored.exit_code == 0 and restored.stdout.startswith(
        "candidate 1: restored, document "
    )
    assert "decided by ana" in run("review", "show", "1", "--dsn", dsn).stdout
    refused = run("review", "dismiss", "1", "--dsn", dsn)
    assert refused.exit_code == 0  # restored is already kept: a no-op
    confirmed = run("review", "confirm", "1", "--dsn", dsn)
    assert confirmed.stdout.strip() == "candidate 1: confirmed"
    wrong = run("review", "dismiss", "1", "--dsn", dsn)
    assert (
        wrong.exit_code == 1
        and "not queued for review" in wrong.output
        and "restore_candidate()" in wrong.output
    )
    missing = run("review", "show", "42", "--dsn", dsn)
    assert missing.exit_code == 1 and "does not exist" in missing.output


def test_stats_prometheus(dsn):
    run(
        "ingest",
        "-",
        "--dsn",
        dsn,
        input=json.dumps({"id": "x", "body": GOOD, "source": "s"}, ensure_ascii=False),
    )
    text = run("stats", "--dsn", dsn, "--format", "prometheus").stdout
    assert 'dedup_pg_verdicts_total{layer="",source="s",verdict="new"} 1.0' in text
    assert "# HELP dedup_pg_review_pending" in text


def test_ingest_workers_auto_or_a_number(dsn):
    data = "\n".join(json.dumps({"id": str(i), "body": GOOD + str(i) * 3}) for i in range(3))
    result = run("ingest", "-", "--dsn", dsn, "--workers", "auto", "--out", "-", input=data)
    assert result.exit_code == 0
    assert len([line for line in result.stdout.splitlines() if line.startswith("{")]) == 3
    for bad in ("65", "-1", "many"):
        result = run("ingest", "-", "--dsn", dsn, "--workers", bad, input=data)
        assert result.exit_code == 2 and "--workers" in result.stderr, (bad, result.stderr)
