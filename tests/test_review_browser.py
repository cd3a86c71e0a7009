"""The review page in a real browser: Debian's chromium driven by Playwright
(its own browser download does not work here; .ci/run installs chromium).
Open the queue, open a candidate, see the difference, decide by keyboard, find
the decision in the database; hostile text; two reviewers; the token login.
The candidate page's screenshot is taken every run; with
DEDUP_PG_UPDATE_SCREENSHOT=1 it is written to docs/review-candidate.png (README)
(not by default: it holds the time of the run, and would dirty every checkout)."""

import os
import shutil

import psycopg
import pytest
from review_support import HOSTILE_BODY, HOSTILE_TITLE, seed, status
from test_service import _start

from conftest import REPO, fresh_database

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TOKEN = "browser-token"
SCREENSHOT = REPO / "docs" / "review-candidate.png"


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does it)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _site(template_dsn, sina, env=None):
    class Site:
        pass

    site = Site()
    site.ctx = fresh_database(template_dsn)
    site.dsn = site.ctx.__enter__()
    site.ids = seed(site.dsn, sina)
    site.proc, site.url = _start(site.dsn, env=env)
    return site


def _close(site):
    site.proc.terminate()
    site.proc.wait(timeout=30)
    site.ctx.__exit__(None, None, None)


@pytest.fixture
def site(template_dsn, sina):
    s = _site(template_dsn, sina)
    yield s
    _close(s)


def _page(browser, site, name, token=None):
    context = browser.new_context(viewport={"width": 1440, "height": 1100}, device_scale_factor=1)
    page = context.new_page()
    page.goto(f"{site.url}/review")
    assert "/review/login" in page.url
    page.fill("input[name=name]", name)
    if token is not None:
        page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"{site.url}/review")
    return page


def test_queue_candidate_diff_and_restore_by_keyboard(browser, site):
    page = _page(browser, site, "alice")
    page.click("nav.tabs >> text=auto")
    page.wait_for_url("**/review?status=auto")
    cid = site.ids["demo-09-repost-ad"]
    assert page.locator(f"#row-{cid}").is_visible()
    # keyboard: j down to the row, Enter opens it
    rows = page.locator("tr.row")
    n = [rows.nth(i).get_attribute("id") for i in range(rows.count())].index(f"row-{cid}")
    for _ in range(n):
        page.keyboard.press("j")
    assert "selected" in page.locator(f"#row-{cid}").get_attribute("class")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/review/{cid}?status=auto")
    # the inserted ad paragraph is highlighted as added, on the right only
    added = page.locator(".side-R .para.added ins")
    assert added.count() == 1 and "广告" in added.inner_text()
    assert page.locator(".side-L ins").count() == 0
    # the fact check's answer is SQL's (dedup_facts_verdict): an ad adds no facts on both sides
    assert page.locator("#fact-verdict").get_attribute("data-verdict") == ""
    assert page.locator("#fact-verdict").inner_text().startswith("agree")
    # highlighted: an added paragraph has its own background (the stylesheet loaded)
    background = page.locator(".side-R .para.added").evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert background not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
    page.keyboard.press("e")
    page.keyboard.type("the ad makes it a different page")
    page.keyboard.press("Escape")
    page.keyboard.press("r")
    page.wait_for_url("**done=*")
    assert status(site.dsn, cid)[0] == "restored"
    assert status(site.dsn, cid)[2:] == ("alice", "the ad makes it a different page")
    assert f"Candidate {cid}: restored" in page.locator(".flash.ok").inner_text()
    # u takes it back
    page.keyboard.press("u")
    page.wait_for_url("**undone=*")
    assert status(site.dsn, cid) == ("auto", None, None, None)
    assert "Undone" in page.locator(".flash.ok").inner_text()


def test_moved_paragraphs_and_the_screenshot(browser, site, tmp_path):
    page = _page(browser, site, "alice")
    reorder = site.ids["demo-10-repost-reorder"]
    page.goto(f"{site.url}/review/{reorder}?status=auto")
    assert page.locator(".side-R .para.moved").count() == 2
    assert page.locator(".side-R del, .side-R ins").count() == 0  # moved, not deleted and added
    assert "moved ⇄" in page.locator(".side-R .moved-tag").first.inner_text()
    # the pending review: the page README shows
    cid = site.ids["demo-11-followup"]
    page.goto(f"{site.url}/review/{cid}")
    assert page.locator(".side-L del").count() > 0 and page.locator(".side-R ins").count() > 0
    assert page.locator("button[data-verb=restore]").is_disabled()
    assert page.locator(".sightings tbody tr").count() >= 2
    shot = tmp_path / "review-candidate.png"
    page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": 1440, "height": 1100})
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    if os.environ.get("DEDUP_PG_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, SCREENSHOT)
    # r on a pending review: told why, nothing sent
    page.keyboard.press("r")
    assert "not for a pending candidate" in page.locator("#hint").inner_text()
    assert status(site.dsn, cid)[0] == "pending"


def test_hostile_text_runs_nothing(browser, site):
    page = _page(browser, site, "alice")
    cid = site.ids["hostile-copy"]
    page.goto(f"{site.url}/review?status=auto")
    assert HOSTILE_TITLE in page.locator(f"#row-{cid}").inner_text()
    page.goto(f"{site.url}/review/{cid}?status=auto")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    right = page.locator(".side-R")
    assert HOSTILE_BODY in right.locator(".text").inner_text()
    assert HOSTILE_TITLE in right.locator(".doc-title").inner_text()
    assert right.locator("img, script, b").count() == 0
    assert "javascript:window.__pwned=3" in right.locator("dd.url").inner_text()
    assert right.locator("dd.url a").count() == 0
    page.hover(".side-R dl.meta")
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_two_reviewers_on_one_candidate(browser, site):
    alice = _page(browser, site, "alice")
    bob = _page(browser, site, "bob")
    cid = site.ids["demo-11-followup"]
    for p in (alice, bob):
        p.goto(f"{site.url}/review/{cid}")
        assert p.locator("#status").inner_text() == "pending"
    alice.keyboard.press("d")
    alice.wait_for_url("**done=*")
    bob.keyboard.press("c")  # bob still sees it pending
    bob.wait_for_url(f"**/review/{cid}?already=*")
    told = bob.locator("div[role=status].flash.warn").inner_text()
    assert "Already decided by alice" in told and "Nothing was applied" in told
    assert bob.locator("#status").inner_text() == "dismissed"
    assert status(site.dsn, cid)[:3][0] == "dismissed" and status(site.dsn, cid)[2] == "alice"
    with psycopg.connect(site.dsn) as conn:
        assert conn.execute("SELECT count(*) FROM dedup_review_log").fetchone()[0] == 1


def test_token_login(browser, template_dsn, sina):
    site = _site(template_dsn, sina, env={"DEDUP_PG_API_TOKEN": TOKEN})
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{site.url}/review")
        assert page.locator("input[name=token]").count() == 1
        page.fill("input[name=name]", "alice")
        page.fill("input[name=token]", "wrong")
        page.click("button[type=submit]")
        assert "Wrong token" in page.locator("p.flash.warn").inner_text()
        page.fill("input[name=token]", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_url(f"{site.url}/review")
        assert page.locator(".who").inner_text() == "alice"
        # a POST the page did not make: no CSRF token, refused
        r = page.request.post(
            f"{site.url}/review/{site.ids['demo-09-repost-ad']}/restore", form={"expected": "auto"}
        )
        assert r.status == 403
        page.click("text=Log out")
        page.wait_for_url("**/review/login")
        page.goto(f"{site.url}/review")
        assert "/review/login" in page.url
    finally:
        _close(site)
