"""Scotland Yard's map on the web page (issue 59): the server's JSON shows each seat
only what it may observe, and a person plays the detectives by clicking stations in
headless chromium."""

from __future__ import annotations

import pytest

from polyzero.games import load_game
from test_web import CHROMIUM, CHROMIUM_FLAGS, _browser, _wait, request, server, wait_for_turn_or_end  # noqa: F401  (the fixture)

LONDON = "scotland_yard(map=london)"


@pytest.fixture(scope="module")
def c4_run(tmp_path_factory):
    """The server fixture's run directory: none is needed here (an empty one)."""
    return tmp_path_factory.mktemp("runs") / "none"


def test_london_map_json_shows_each_seat_what_it_may_see(server):  # noqa: F811
    game = load_game(LONDON)
    code, view = request(server, "POST", "/api/sessions", {"game": LONDON, "players": ["random", "human"], "seed": 2})
    assert code == 201 and view["viewer"] == 1
    view = _wait(server, view["id"], lambda v: v["legal"])
    m = view["map"]
    assert m["kind"] == "scotland_yard" and len(m["stations"]) == 199 and len(m["edges"]) == 468
    assert {e[2] for e in m["edges"]} == {"taxi", "bus", "underground", "ferry"}
    assert m["mrx"] is None and len(m["detectives"]) == 5 and m["to_move"] == 1
    assert len(m["possible"]) > 1 and not set(m["possible"]) & set(m["detectives"])
    assert all(station is None for _, station in m["log"])  # round 1: no reveal yet
    # every legal move of the human's detective ends on a station of the map
    n = m["num_stations"]
    assert n == game.num_distinct_actions() // 4 and all(
        a["action"] < 3 * n or a["text"] == "pass" for a in view["legal"]
    )
    # Mr X's seat sees his own station; someone watching two players sees it too
    code, view = request(server, "POST", "/api/sessions", {"game": LONDON, "players": ["human", "random"], "seed": 2})
    m = view["map"]
    assert view["viewer"] == 0 and m["mrx"] in range(1, 200) and m["possible"] == []
    code, view = request(server, "POST", "/api/sessions", {"game": "scotland_yard", "players": ["human", "random"]})
    m = view["map"]
    assert len(m["stations"]) == 11 and m["mrx"] == 6 and m["detectives"] == [1, 11]


def test_play_the_detectives_on_the_london_map_in_a_browser(server, tmp_path):  # noqa: F811
    with _browser() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.goto(server + "/")
        page.fill("#game-input", LONDON)
        page.fill("#seat0", "random")
        page.fill("#seat1", "human")
        page.fill("#seed", "4")
        page.click("#start")
        page.wait_for_selector("svg.sy-map .station.target", timeout=60_000)
        assert page.locator("svg.sy-map .station").count() == 199
        assert page.locator("svg.sy-map line.edge").count() == 468
        assert page.locator("svg.sy-map .station.detective").count() == 5
        assert page.locator("svg.sy-map .station.mrx").count() == 0  # the detectives never see him
        assert page.locator("svg.sy-map .station.possible").count() > 1
        for _ in range(6):  # detectives 1..5 click a station each, then Mr X moves again
            before = page.locator("#log li").count()
            page.locator("svg.sy-map .station.target").first.click()
            if page.locator("#moves button[data-action]").count() and page.locator("#log li").count() == before:
                page.locator("#moves button[data-action]").first.click()  # several tickets reach it: pick one
            page.wait_for_function(f"() => document.querySelectorAll('#log li').length > {before}")
            if wait_for_turn_or_end(page):
                break
        log = page.locator("#log li").all_text_contents()
        assert sum(t.startswith("seat 1:") for t in log) >= 5
        assert page.locator("svg.sy-map .station.mrx").count() == 0
        page.screenshot(path=str(tmp_path / "london.png"))
        browser.close()
