"""Real recrawled Sina articles: a clean copy, and a raw copy with a title line,
full-width indents, site banners and trailing ad JavaScript."""

from collections import Counter

from conftest import read_jsonl


def test_recrawled_copies_are_duplicates_of_their_originals(dd, shared_data):
    pairs = read_jsonl(shared_data / "pairs" / "sina2018_recrawl.jsonl")
    clean = [{"id": f"a{i}", "title": p["title"], "body": p["a"]} for i, p in enumerate(pairs)]
    raw = [{"id": f"b{i}", "body": p["b"]} for i, p in enumerate(pairs)]
    # a few clean copies are themselves copies of each other: the story's kept document
    story = {
        v.id: v.matched_id if v.verdict == "duplicate" else v.id for v in dd.ingest_many(clean)
    }
    outcome = Counter()
    misses = []
    for i, v in enumerate(dd.ingest_many(raw)):
        found = v.verdict == "duplicate" and v.matched_id == story[f"a{i}"]
        outcome[v.verdict if not found else f"found/{v.layer}"] += 1
        if not found:
            misses.append((i, v.verdict, v.layer, v.score))
    # 286 of 289 measured. The three others: pair 272 is another outlet's
    # write-up sharing only its lead sentence; in 71 the clean copy is a
    # one-sentence stub of an 11-clause article; in 52 the raw copy glues its
    # title onto the first sentence, leaving 1 of 2 clauses in common.
    assert outcome["error"] == 0
    assert sum(n for k, n in outcome.items() if k.startswith("found/")) >= 286, (outcome, misses)
    assert {k for k in outcome if k.startswith("found/")} >= {"found/simhash", "found/containment"}
