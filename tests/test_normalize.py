import random
import unicodedata

import pytest

from dedup_pg import normalize as nz
from dedup_pg.normalize import (
    DEFAULT_NOISE_PATTERNS,
    NormalizationError,
    NormalizeOptions,
    clean,
    normalize,
)

PLAIN = NormalizeOptions(noise_patterns=())


def key(text: str, options: NormalizeOptions = PLAIN) -> str:
    return normalize(text, options).key


def test_fullwidth_letters_digits_and_ideographic_space_fold():
    assert key("２０２６年ＡＢＣ公司\u3000发布") == key("2026年ABC公司 发布") == "2026年ABC公司发布"


def test_nbsp_and_other_special_spaces_fold_to_one_space():
    assert clean("a\xa0\u2002\u202f b") == "a b"


def test_zero_width_and_control_characters_are_removed():
    assert clean("北\u200b京\ufeff市\u200d\x07") == "北京市"


def test_html_tags_entities_and_scripts_are_removed():
    raw = '<div class="c"><p>上海&nbsp;今天&amp;明天</p><script>var a = "<p>x</p>";</script><!-- ad --><p>下雨&#65292;降温</p></div>'
    assert clean(raw) == "上海 今天&明天\n下雨,降温"


def test_line_endings_blank_lines_and_indents():
    assert (
        clean("第一段。\r\n\r\n\r\n\u3000\u3000第二段。\r第三段。  ")
        == "第一段。\n第二段。\n第三段。"
    )


def test_whitespace_runs_collapse_and_cjk_adjacent_whitespace_is_dropped_in_key():
    assert key("The  quick\t brown   fox") == "The quick brown fox"
    assert key("中国 女排\n夺冠 ,  好 the   end") == "中国女排夺冠,好the end"


def test_paragraphing_does_not_change_the_key():
    assert key("第一段。\n\n第二段。") == key("第一段。第二段。") == key("  第一段。 第二段。")


def test_chinese_punctuation_is_kept():
    # stripping punctuation would make these two collide
    assert key("他说:“不。”") != key("他说不")
    assert "。" in key("结束。")
    assert key("你好，世界！") == "你好,世界!"  # NFKC folds full-width punctuation


def test_nfkc_shortcut_equals_full_nfkc():
    samples = ["e\u0301te\u0301", "…—“”「」", "ｶﾞ①ﬁ", "한국어 ᄒᆞᆫ", "Ⅻ㍿", "漢字\u3000。、"]
    for s in samples:
        assert clean(s) == " ".join(unicodedata.normalize("NFKC", s).split()), s


# Characters that exercise the whitespace folding and NFKC paths: CJK and CJK
# punctuation, every kind of space, combining marks, compatibility forms.
_ALPHABET = (
    "中文字。、“”，："
    + "ab1 " * 3
    + "\n\t\u3000\xa0\u2002\x85\u2028\x1c\x1f"
    + "e\u0301\u0316\u0338>ｶﾞ①ﬁ한ᄒᆞᆫ㍿·\ufffd\u200b"
)


def _random_texts(n: int = 3000) -> list[str]:
    rng = random.Random(20)
    return ["".join(rng.choices(_ALPHABET, k=rng.randrange(0, 30))) for _ in range(n)]


def test_space_folding_equals_the_per_run_rule():
    # the rule as first written: each maximal run of whitespace is dropped when
    # a neighbour is CJK, else it becomes one space
    def fold(text):
        def one(m):
            before = text[m.start() - 1] if m.start() else ""
            after = text[m.end()] if m.end() < len(text) else ""
            return "" if nz._IS_CJK.match(before) or nz._IS_CJK.match(after) else " "

        return nz._ANY_SPACE.sub(one, text).strip()

    for text in _random_texts():
        assert nz._fold_spaces(text) == fold(text), repr(text)


def test_nfkc_shortcuts_equal_full_nfkc():
    for text in _random_texts():
        assert nz._nfkc(text) == unicodedata.normalize("NFKC", text), repr(text)


def test_characters_clean_removes_or_folds_are_all_non_printable():
    # clean() skips those three regexes on a text that isprintable() but for
    # its line ends: sound only while no character they match is printable
    import sys

    classes = (nz._INVISIBLE, nz._SPACES, nz._CONTROL)
    printable = [
        hex(i)
        for i in range(sys.maxunicode + 1)
        if chr(i).isprintable() and any(c.match(chr(i)) for c in classes)
    ]
    assert printable == []


def test_inline_javascript_and_css_lines_are_dropped():
    raw = (
        "正文第一句。\n(function(){\n  var adScript = document.createElement('script');\n"
        "  adScript.src = '//d1.example.cn/x.js';\n  document.getElementsByTagName('head')[0].appendChild(adScript);\n"
        "})();\n.tech-con p{margin-bottom:30px}\n正文第二句。"
    )
    assert clean(raw) == "正文第一句。\n正文第二句。"


def test_code_detection_keeps_lines_with_chinese():
    assert clean("var 变量 = 1 表示什么?") == "var 变量 = 1 表示什么?"


def test_scraped_page_scripts_are_dropped():
    """A Sina photo gallery scraped as text: 40,000 characters of slide-page
    script and CSS, which made every gallery a copy of every other."""
    page = (
        "\ufffd\ufffd\r\nvar ua = navigator.userAgent.toLowerCase();\r\n"
        "//var isIOS = /\\((iPhone|iPad|iPod)/i.test(ua);\r\nif(isIOS){\r\n"
        "    location.replace('http://slide.ipad.sina.com.cn/play.php?sid=84625'+location.hash);\r\n"
        "}\r\n/*\ufffd\ufffd\ufffd*/\r\n"
        ".wb_more{width: 98%;border-top: 1px solid #f0f0f0;}/*0702 zyc*/\r\n"
        'var title = "张馨予何捷大婚";\r\nSinaPage.loadWidget({\r\n'
        "新娘身穿浪漫蕾丝婚纱。\r\n"
    )
    assert clean(page) == "新娘身穿浪漫蕾丝婚纱。"
    # prose with brackets and an English sentence stays
    prose = (
        "苹果发布iPhone XS (2018) 售价999美元; 分析师称(据路透社)销量可观。\nSales rose (in 2018)."
    )
    assert clean(prose) == prose


def test_scraped_object_literals_are_dropped():
    """A Sina video page scraped as text: the player's playlist (object literals
    with Chinese titles and comments) made two pages whose own text is one line
    each 3 SimHash bits apart (bench/semantic_quality.py, a false duplicate)."""
    page = (
        "恒大基本失去冠军\nSINA_TEXT_PAGE_INFO['videoDatas0'] = [\t\t{\nad_state: '1',\n"
        "video_id: 268486337,\t//vid\ntitle: '足金联赛广州站精彩回顾',\t//标题\n"
        "source: '',\t//视频发布来源。如：新华网。\n"
        "url: 'http://video.sina.com.cn/p/sports/c/zjmaster/v/doc/2018-11-02/151669062637.html'\n"
        "},\t\t{\ntrigger: {\nid: 'videoList0'\nrequire:[\n{\n"
    )
    assert clean(page) == "恒大基本失去冠军"
    # text with a colon and a number, or an unquoted value, is not code
    prose = "比分: 3\nScore: 3\n时间: 2018年11月2日\nSource: Reuters"
    assert clean(prose) == prose


def test_lowercase_is_optional():
    assert key("iPhone XS") == "iPhone XS"
    assert key("iPhone XS", NormalizeOptions(lowercase=True, noise_patterns=())) == "iphone xs"


def test_default_noise_patterns_remove_banners_and_title_tags():
    options = NormalizeOptions()
    assert DEFAULT_NOISE_PATTERNS == options.noise_patterns
    body = "央行宣布下调金融机构存款准备金率0.5个百分点,释放长期资金约1万亿元,以支持实体经济发展。"
    text = f"【快讯】{body}\n版权所有 © 2026 某某网 未经授权不得转载\n更多相关资讯请关注某某网\n责任编辑:张三"
    assert key(text, options) == body.replace("0.5", "0.5")


def test_mostly_noise_text_is_kept_whole():
    text = "【快讯】降准。\n版权所有 © 2026 某某网 未经授权不得转载"
    assert key(text, NormalizeOptions()).startswith("【快讯】降准。版权所有")


def test_noise_removal_never_eats_the_article():
    # a banner glued to a one-line article must not take the article with it
    body = "更多家长择校经验分享请关注某某官方微信号:家长圈" + "正文内容很长。" * 40
    assert len(key(body, NormalizeOptions())) > 200


def test_empty_or_noise_only_text_is_an_error():
    for text in ["", "   \n\t\u3000", "<p>&nbsp;</p>", "\u200b\u200b"]:
        with pytest.raises(NormalizationError):
            normalize(text, PLAIN)


def test_invalid_noise_pattern_is_a_clear_error():
    with pytest.raises(ValueError, match="not a valid regex"):
        NormalizeOptions(noise_patterns=("[unclosed",))
