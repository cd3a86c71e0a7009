"""The review page's diff: characters, paragraphs paired, moves, folding."""

import time

from dedup_pg.textdiff import compare, paragraphs


def _side(paras):
    return [(p.status, p.partner, [(s.kind, s.text) for s in p.spans]) for p in paras]


def test_identical_texts_are_all_equal():
    c = compare("甲乙丙。\n丁戊己。", "甲乙丙。\n丁戊己。")
    assert c.similarity == 1.0 and c.moved == 0
    assert [p.status for p in c.left + c.right] == ["same"] * 4


def test_characters_that_differ_are_marked_on_their_side():
    c = compare("今天上午，示例市举行新闻发布会。", "今天下午，示例市举行新闻发布会。")
    assert _side(c.left) == [
        (
            "changed",
            1,
            [("equal", "今天"), ("delete", "上"), ("equal", "午，示例市举行新闻发布会。")],
        )
    ]
    assert _side(c.right)[0][2][1] == ("insert", "下")


def test_a_reordered_paragraph_is_moved_not_deleted_and_added():
    a = "第一段讲了港口的吞吐量。\n第二段讲了新开通的航线。\n第三段讲了负责人的介绍。"
    b = "第二段讲了新开通的航线。\n第一段讲了港口的吞吐量。\n第三段讲了负责人的介绍。"
    c = compare(a, b)
    assert c.moved == 1 and c.similarity == 1.0
    moved = [p for p in c.right if p.status == "moved"]
    assert len(moved) == 1 and moved[0].partner is not None
    assert all(s.kind == "equal" for p in c.left + c.right for s in p.spans)


def test_an_edited_paragraph_that_moved_is_still_paired():
    a = "港务集团有关负责人介绍，港区三期工程将于明年投入使用。\n东津港前10个月集装箱吞吐量同比增长。"
    b = "东津港前10个月集装箱吞吐量同比增长。\n港务集团负责人介绍，港区三期工程将于明年正式投入使用。"
    c = compare(a, b)
    # one of the two moved (the longer pair keeps its place); the edited one is paired
    assert c.moved == 1 and sorted(p.status for p in c.right) in (
        ["changed", "moved"],
        ["moved", "same"],
    )
    edited = next(p for p in c.right if "三期" in p.text)
    assert edited.partner is not None and any(s.kind == "insert" for s in edited.spans)
    assert not any(p.status in ("added", "removed") for p in c.left + c.right)


def test_added_and_removed_paragraphs():
    c = compare(
        "甲段内容在这里。\n乙段内容在这里。",
        "甲段内容在这里。\n【广告】年末焕新季火热进行中！\n乙段内容在这里。",
    )
    assert [p.status for p in c.right] == ["same", "added", "same"]
    assert c.right[1].spans[0].kind == "insert"


def test_full_width_forms_count_as_the_same_character():
    c = compare("2026年12月10日举行", "２０２６年１２月１０日举行")
    assert c.similarity == 1.0
    assert c.right[0].text == "２０２６年１２月１０日举行"  # shown as received


def test_one_block_against_paragraphs_is_compared_by_character():
    a = "第一句在这里。第二句也在这里。第三句还在这里。"
    b = "第一句在这里。\n第二句也在这里。\n第三句还在这里。"
    c = compare(a, b)
    assert c.similarity > 0.95
    assert all(p.status == "changed" for p in c.right)


def test_texts_are_kept_whole():
    a = "<script>alert(1)</script>\n正文一段。"
    b = "正文一段。\n<img src=x onerror=alert(2)>"
    c = compare(a, b)
    assert "".join(p.text for p in c.left) == "".join(paragraphs(a))
    assert "".join(p.text for p in c.right) == "".join(paragraphs(b))


def test_long_unrelated_texts_stay_fast():
    a = "\n".join("甲乙丙丁戊己庚辛壬癸" * 50 + str(i) for i in range(20))
    b = "".join("子丑寅卯辰巳午未申酉戌亥" * 40 + str(i) for i in range(20))
    started = time.perf_counter()
    c = compare(a, b)
    assert time.perf_counter() - started < 5
    assert "".join(p.text for p in c.right) == b
