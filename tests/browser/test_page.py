"""The page at /ui/ in Debian's Chromium against the Serve app over a real ingested store:
browse the tree, open a memory with its neighbours and the history of its claims, ask and
follow a citation, search, the store at a glance, a conversation, the key form, and every view
readable at 1280 and 390 px."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.browse_store import CONVERSATION_ID, DOCUMENTS, TURNS
from tests.browser.conftest import API_KEY, ARTIFACTS
from tests.chromium import NARROW, WIDE

pytestmark = [pytest.mark.ray, pytest.mark.serve, pytest.mark.browser]


def _memory_of(server: str, source_name: str) -> dict:
    """A memory's listing entry, found through the JSON API."""
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=server, headers=headers, timeout=30) as http:
        hits = http.post("/search", json={"query": source_name, "mode": "bm25", "top_k": 100})
        for hit in hits.json():
            if Path(hit["source"]).name == source_name:
                return hit
    raise AssertionError(f"no memory of {source_name}")


def test_the_tree_renders_and_expands(page, server, browse_bank):
    page.goto(f"{server}/ui/")

    tree = page.get_by_role("tree", name="Store tree")
    top = browse_bank.tree().children
    expect(tree.locator(":scope > [role=treeitem]")).to_have_count(len(top))
    first = tree.get_by_role("treeitem", name=re.compile(f"^{top[0].name}"))
    expect(first).to_have_attribute("aria-expanded", "false")

    first.locator(".tree-label").click()

    expect(first).to_have_attribute("aria-expanded", "true")
    expect(first.locator("[role=group] > [role=treeitem]")).to_have_count(
        len(top[0].children) + len(top[0].chunk_indices)
    )
    expect(page).to_have_url(re.compile(f"#/tree/{top[0].name}$"))
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(page.get_by_role("navigation", name="Breadcrumb")).to_contain_text(top[0].name)


def test_the_tree_is_navigable_by_keyboard(page, server, browse_bank):
    page.goto(f"{server}/ui/")
    first = page.get_by_role("treeitem").first
    expect(first).to_be_visible()

    first.focus()
    page.keyboard.press("ArrowRight")  # expands
    expect(first).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("ArrowRight")  # into its first child
    page.keyboard.press("Enter")  # opens it

    expect(page).to_have_url(re.compile("#/(memory|tree)/"))
    expect(page.get_by_role("heading", level=1)).to_be_visible()


def test_a_deep_link_opens_the_directory_with_its_readme(page, server, browse_bank):
    leaf = max(browse_bank.tree().children, key=lambda node: len(node.chunk_indices))

    page.goto(f"{server}/ui/#/tree/{leaf.name}")

    selected = page.get_by_role("treeitem", selected=True)
    expect(selected).to_have_attribute("data-path", leaf.path)
    expect(selected).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("heading", name=re.compile(r"^Memories \(")).first).to_be_visible()
    expect(page.locator(".directory-panel .card-list .card")).to_have_count(len(leaf.chunk_indices))


def test_a_click_opens_a_memory_with_its_neighbours(page, server):
    moon = _memory_of(server, "moon.md")
    directory = "/" + moon["chunk_path"].rsplit("/", 1)[0]
    page.goto(f"{server}/ui/#/tree{directory}")

    page.locator(f"[role=treeitem][data-memory='{moon['chunk_id']}'] a").click()

    expect(page).to_have_url(re.compile(f"#/memory/{moon['chunk_id']}$"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("Moon")
    related = page.get_by_role("region", name="Related memories", exact=True)
    expect(related.get_by_role("link")).to_have_count(1)
    expect(related).to_contain_text("related")
    related.get_by_role("link").click()
    expect(page.get_by_role("region", name="Memory", exact=True)).to_contain_text("Apollo program")


def test_a_superseded_claim_shows_its_history(page, server):
    acme = _memory_of(server, "acme.md")

    page.goto(f"{server}/ui/#/memory/{acme['chunk_id']}")

    claims = page.get_by_role("region", name="Claims over time", exact=True)
    superseded = claims.locator(".claim-superseded")
    current = claims.locator(".claim-current")
    expect(superseded).to_contain_text("Alice Moreno")
    expect(superseded).to_contain_text("Recorded")
    expect(superseded).to_contain_text("Superseded")
    expect(current).to_contain_text("Bob Tanaka")
    expect(page.locator(".currency-note")).to_contain_text("superseded")
    superseded.get_by_role("link", name=re.compile("Acme leadership")).click()
    expect(page.get_by_role("region", name="Source", exact=True)).to_contain_text("acme_update.md")


def test_a_question_shows_a_cited_answer_whose_citation_opens_the_memory(page, server):
    page.goto(f"{server}/ui/#/search")

    page.get_by_label("Question", exact=True).fill("Who is the CEO of Acme?")
    page.get_by_role("button", name="Ask").click()

    answer = page.get_by_role("region", name="Answer", exact=True)
    expect(answer).to_contain_text("Bob Tanaka", timeout=60_000)
    expect(answer.get_by_role("meter")).to_be_visible()
    expect(page.get_by_role("region", name="History notes", exact=True)).to_contain_text(
        "Alice Moreno"
    )
    expect(
        page.get_by_role("region", name="Trajectory", exact=True).get_by_role("listitem").first
    ).to_be_visible()
    citation = page.get_by_role("region", name="Citations", exact=True).get_by_role("link").first
    cited = citation.get_attribute("href")
    citation.click()
    expect(page).to_have_url(re.compile(re.escape(cited) + "$"))
    expect(page.get_by_role("region", name="Source", exact=True)).to_contain_text("acme")
    expect(page.get_by_role("region", name="Memory", exact=True)).to_contain_text("Bob Tanaka")


def test_a_search_lists_hits_with_their_paths(page, server):
    page.goto(f"{server}/ui/#/search")

    page.get_by_label("Search", exact=True).fill("sourdough starter")
    page.get_by_label("Mode", exact=True).first.select_option("bm25")
    page.get_by_role("button", name="Search").click()

    hits = page.locator(".hits > li")
    expect(hits.first).to_contain_text("sourdough", timeout=30_000)
    expect(page).to_have_url(re.compile(r"#/search\?q=sourdough\+starter&mode=bm25$"))
    hits.first.get_by_role("link").click()
    expect(page.get_by_role("region", name="Source", exact=True)).to_contain_text("sourdough.md")


def test_the_research_mode_of_the_search_box_shows_its_answer_and_rounds(page, server):
    page.goto(f"{server}/ui/#/search")

    page.get_by_label("Search", exact=True).fill("Who is the CEO of Acme?")
    page.get_by_label("Mode", exact=True).first.select_option("research")
    page.get_by_role("button", name="Search").click()

    expect(page.get_by_role("region", name="Answer", exact=True)).to_contain_text(
        "Bob Tanaka", timeout=60_000
    )
    expect(page.get_by_role("region", name="Trajectory", exact=True)).to_contain_text("search")


def test_the_store_at_a_glance(page, server):
    page.goto(f"{server}/ui/#/status")

    figures = page.locator(".figures")
    expect(figures).to_contain_text(f"Documents{len(DOCUMENTS) + 1}")
    expect(figures).to_contain_text("Versions2")
    versions = page.get_by_role("region", name="Versions", exact=True).get_by_role("row")
    expect(versions).to_have_count(3)  # the header and two commits
    expect(versions.nth(1)).to_contain_text("live")
    expect(page.get_by_role("region", name="Query Graph", exact=True)).to_contain_text(
        "1 conflict resolved"
    )
    # The figures do not wait for the writer's job list, which follows when the writer answers.
    expect(page.get_by_role("region", name="Jobs", exact=True)).to_contain_text(
        "No job is running.", timeout=60_000
    )


def test_a_conversation_shows_its_working_turns_and_what_recall_returns(page, server):
    page.goto(f"{server}/ui/#/conversations")
    page.get_by_role("link", name=CONVERSATION_ID).click()

    turns = page.locator(".turns > li")
    expect(turns).to_have_count(len(TURNS))
    expect(turns.first).to_contain_text(TURNS[0][1])
    page.get_by_label("Recall for", exact=True).fill("ryokan price")
    page.get_by_role("button", name="Recall").click()

    recalled = page.get_by_role("region", name="Recall", exact=True).locator(".card-list > li")
    expect(recalled.first).to_contain_text("30,000 yen", timeout=30_000)


def test_a_read_key_is_asked_for_when_the_server_requires_one(keyless_page, server):
    assert httpx.get(f"{server}/browse/status").status_code == 401
    assert httpx.get(f"{server}/ui/").status_code == 200  # the page holds no data
    keyless_page.goto(f"{server}/ui/#/status")

    keyless_page.get_by_label("API key", exact=True).fill("not-the-key")
    keyless_page.get_by_role("button", name="Use this key").click()
    expect(keyless_page.get_by_role("main")).to_contain_text("refused")
    keyless_page.get_by_label("API key", exact=True).fill(API_KEY)
    keyless_page.get_by_role("button", name="Use this key").click()

    expect(keyless_page.get_by_role("heading", name="Store at a glance")).to_be_visible()
    expect(keyless_page.get_by_role("button", name="Forget key")).to_be_visible()


@pytest.fixture
def company_key(browse_bank):
    """A read key limited to the store directory /company, revoked after the test."""
    from memory_bank.agents.keys import KeyRing, KeyScope

    ring = KeyRing(browse_bank.store)
    key, token = ring.create("browser-company", "read", KeyScope(directory="/company"))
    yield token
    ring.revoke(key.id)


def test_a_key_limited_to_a_directory_sees_that_part_only(keyless_page, server, company_key):
    keyless_page.goto(f"{server}/ui/#/tree")
    keyless_page.get_by_label("API key", exact=True).fill(company_key)
    keyless_page.get_by_role("button", name="Use this key").click()

    tree = keyless_page.get_by_role("tree", name="Store tree")
    expect(tree.locator(":scope > [role=treeitem]")).to_have_count(1)
    expect(tree.get_by_role("treeitem", name=re.compile("^company"))).to_be_visible()
    main = keyless_page.get_by_role("main")
    expect(main).to_contain_text("3 memories are visible here")  # the root's README is not
    expect(main).not_to_contain_text("planet")


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280", "390"])
def test_every_view_fits_the_width_of_the_screen(page, server, viewport):
    acme = _memory_of(server, "acme.md")
    views = {
        "tree": "#/tree/",
        "memory": f"#/memory/{acme['chunk_id']}",
        "ask": "#/ask?q=Who+is+the+CEO+of+Acme%3F",
        "status": "#/status",
        "conversation": f"#/conversations/{CONVERSATION_ID}?q=Kyoto",
    }
    page.set_viewport_size(viewport)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name, fragment in views.items():
        page.goto(f"{server}/ui/{fragment}")
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page.wait_for_load_state("networkidle")
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        page.screenshot(path=ARTIFACTS / f"{name}-{viewport['width']}.png", full_page=True)
        assert overflow <= 0, f"{name} is {overflow} px wider than a {viewport['width']} px screen"
