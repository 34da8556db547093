"""The web page (`polyzero serve`): a real server on 127.0.0.1, a real browser
(Debian's chromium driven by Playwright), bad requests and a fuzz run."""

import json
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def c4_run(tmp_path_factory):
    """A connect_four run of one tiny learning step: a learned agent whose search the page shows."""
    import polyzero

    run = tmp_path_factory.mktemp("web") / "c4"
    polyzero.train(
        "connect_four",
        overrides={
            "train.steps": 1,
            "train.positions_per_step": 16,
            "train.batch_size": 8,
            "train.minibatches_per_step": 1,
            "search.num_simulations": 4,
            "selfplay.concurrent_games": 4,
            "eval.every": 0,
            "eval.final_games": 0,
            "eval.simulations": 16,
            "net.channels": 8,
            "net.blocks": 1,
            "threads": 1,
        },
        run_dir=run,
    )
    return run


@pytest.fixture(scope="module")
def server(c4_run):
    """uvicorn serving the app on a free loopback port, in a thread."""
    import uvicorn

    from polyzero.web.app import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app([c4_run]), log_level="error"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    assert srv.started
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


def request(base, method, path, body=None, raw: bytes | None = None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def _browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("POLYZERO_CI") == "1":
            pytest.fail(f"{CHROMIUM} is missing: CI installs Debian's chromium (.ci/run)")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    return sync_playwright()


def wait_for_turn_or_end(page) -> bool:
    """Wait until the person is to move or the game is over; True when it is over."""
    page.wait_for_function(
        "() => { const s = document.querySelector('#status').textContent;"
        " return s.startsWith('Your move') || s.startsWith('Game over'); }",
        timeout=60_000,
    )
    return page.text_content("#status").startswith("Game over")


def test_play_connect_four_in_a_browser(server, tmp_path):
    """Open the page, play Connect Four against a learned agent by clicking the board,
    see the agent answer with its search shown, and the game end."""
    with _browser() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1200, "height": 860})
        page.goto(server + "/")
        page.fill("#game-input", "connect_four")
        page.fill("#seat0", "human")
        page.fill("#seat1", "run:c4@16")
        page.click("#start")
        page.wait_for_selector(".board .cell.target")
        clicks = 0
        for _ in range(30):
            if wait_for_turn_or_end(page):
                break
            if clicks == 3:  # the agent has answered three times: its search is on the page
                assert "simulations" in page.text_content("#analysis")
                assert page.locator(".cell .visits").count() > 0
                page.screenshot(path=str(tmp_path / "web.png"))
            before = page.locator("#log li").count()
            column = 3 if clicks % 2 == 0 else 2  # stack two columns: a quick end either way
            cell = page.locator(f".board .cell.target[data-c='{column}']")
            if cell.count() == 0:
                cell = page.locator(".board .cell.target")
            cell.first.click()
            clicks += 1
            page.wait_for_function(f"() => document.querySelectorAll('#log li').length > {before}")
        status = page.text_content("#status")
        assert status.startswith("Game over"), status
        log = list(page.locator("#log li").all_text_contents())
        assert any(t.startswith("seat 1:") for t in log), "the agent never answered"
        assert len(log) >= 7  # the shortest Connect Four game
        if os.environ.get("POLYZERO_SCREENSHOT"):
            shutil.copy(tmp_path / "web.png", os.environ["POLYZERO_SCREENSHOT"])
        browser.close()


@pytest.mark.parametrize(
    "method, path, body, status, words",
    [
        ("POST", "/api/sessions", b"{not json", 400, "not valid JSON"),
        ("POST", "/api/sessions", [1, 2], 400, "JSON object"),
        ("POST", "/api/sessions", {"game": "conect_four", "players": ["human", "random"]}, 400, "unknown game"),
        ("POST", "/api/sessions", {"game": "connect_four", "players": ["human", "wizard"]}, 400, "unknown player"),
        ("POST", "/api/sessions", {"game": "connect_four", "players": ["human", "/etc/passwd"]}, 400, "unknown player"),
        ("POST", "/api/sessions", {"game": "connect_four", "players": ["human", "run:../../etc"]}, 404, "unknown run"),
        (
            "POST",
            "/api/sessions",
            {"game": "kuhn_poker", "players": ["human", "sog:1,1,net=/tmp"]},
            400,
            "unknown player",
        ),
        ("POST", "/api/sessions", {"game": "matrix_rps", "players": ["human", "random"]}, 400, "simultaneous"),
        ("POST", "/api/sessions", {"game": "connect_four", "players": ["human", "mcts:10000000"]}, 400, "refused"),
        ("POST", "/api/sessions", {"game": "kuhn_poker", "players": ["human", "mcts:20"]}, 400, "cannot observe"),
        ("POST", "/api/sessions", {"game": "connect_four", "players": ["human"]}, 400, "two player specs"),
        ("GET", "/api/runs/..%2F..%2Fetc/metrics", None, 404, "Not Found"),
        ("GET", "/api/runs/etc/metrics", None, 404, "unknown run"),
        ("GET", "/api/runs/c4/ladder", None, 404, "no readable ladder"),
        ("GET", "/api/sessions/nope", None, 404, "unknown game session"),
        ("GET", "/../../etc/passwd", None, 404, "Not Found"),
    ],
)
def test_bad_requests_get_a_4xx_and_one_line(server, method, path, body, status, words):
    raw = body if isinstance(body, bytes) else None
    code, answer = request(server, method, path, None if raw else body, raw)
    assert code == status, answer
    assert words in answer["error"] and "\n" not in answer["error"]


def test_only_json_bodies_and_only_the_counts_of_a_spec_are_capped(server):
    """A page of another site can send a text or form body to this machine unasked, but not
    JSON: anything else is refused. A run's name may hold a date; only its @SIMS is capped."""
    from polyzero.web.sessions import RequestError, _counts_ok

    body = json.dumps({"game": "tic_tac_toe", "players": ["random", "random"]}).encode()
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {"Content-Type": content_type} if content_type else {}
        req = urllib.request.Request(server + "/api/sessions", data=body, method="POST", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)
        assert err.value.code == 415 and "application/json" in json.loads(err.value.read())["error"]
    _counts_ok("run:tic_tac_toe-alphazero-20261201-040000@50")
    for spec in ("run:x-20261201@30000", "mcts:30000", "sog:1,30000"):
        with pytest.raises(RequestError, match="counts above 20000"):
            _counts_ok(spec)


def test_a_run_named_with_an_at_sign_is_listed_without_it(tmp_path):
    """run:NAME@SIMS splits at the @, so a directory "a@b" is offered as run:a_b."""
    from polyzero.web.sessions import RunIndex

    index = RunIndex([tmp_path / "c4@old", tmp_path / "c4_old"])
    assert list(index.runs) == ["c4_old", "c4_old_"] and index.path("c4_old") == (tmp_path / "c4@old").resolve()


def test_moves_undo_and_what_a_seat_sees(server):
    code, view = request(server, "POST", "/api/sessions", {"game": "connect_four", "players": ["human", "random"]})
    assert code == 201 and view["viewer"] == 0 and view["board"]["kind"] == "connect_four"
    sid = view["id"]
    assert request(server, "POST", f"/api/sessions/{sid}/move", {"action": 99})[0] == 400
    assert request(server, "POST", f"/api/sessions/{sid}/move", {"action": "3"})[0] == 400
    assert request(server, "POST", f"/api/sessions/{sid}/move", {})[0] == 400
    assert request(server, "POST", f"/api/sessions/{sid}/move", {"action": 3})[0] == 200
    view = _wait(server, sid, lambda v: v["legal"])
    assert [e["text"][1:] for e in view["log"]][0] == "3" and len(view["log"]) == 2
    code, view = request(server, "POST", f"/api/sessions/{sid}/undo")
    assert code == 200 and view["log"] == [] and len(view["legal"]) == 7
    assert request(server, "POST", f"/api/sessions/{sid}/undo")[0] == 409

    # Kuhn poker: the human sees their own card, never the opponent's, nor the deal.
    code, view = request(
        server, "POST", "/api/sessions", {"game": "kuhn_poker", "players": ["random", "human"], "seed": 3}
    )
    view = _wait(server, view["id"], lambda v: v["legal"] or v["terminal"])
    assert view["board"] is None and view["analysis"] is None
    assert all(not e["chance"] and e["seat"] == 1 for e in view["log"])
    import pyspiel

    game = pyspiel.load_game("kuhn_poker")
    assert view["text"] in _kuhn_information_states(game, seat=1)


def _kuhn_information_states(game, seat):
    out, stack = set(), [game.new_initial_state()]
    while stack:
        s = stack.pop()
        if s.is_terminal():
            continue
        if not s.is_chance_node():
            out.add(s.information_state_string(seat))
        stack.extend(s.child(a) for a in s.legal_actions())
    return out


def _wait(server, sid, ready, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        view = request(server, "GET", f"/api/sessions/{sid}")[1]
        if ready(view):
            return view
        time.sleep(0.05)
    raise AssertionError(f"session {sid} never became ready: {view}")


def test_watch_two_players_over_a_websocket(server):
    import asyncio

    import websockets

    code, view = request(
        server, "POST", "/api/sessions", {"game": "tic_tac_toe", "players": ["random", "run:c4"], "delay": 0}
    )
    assert code == 400 and "trained on 'connect_four'" in view["error"] and "/" not in view["error"]
    code, view = request(
        server, "POST", "/api/sessions", {"game": "connect_four", "players": ["run:c4@8", "mcts:20"], "delay": 0}
    )
    assert code == 201 and view["viewer"] is None

    async def follow():
        seen = []
        async with websockets.connect(server.replace("http", "ws") + f"/ws/sessions/{view['id']}") as ws:
            while True:
                v = json.loads(await asyncio.wait_for(ws.recv(), 60))
                seen.append(v)
                if v["terminal"]:
                    return seen

    seen = asyncio.run(follow())
    assert seen[-1]["returns"] is not None and len(seen[-1]["log"]) >= 7
    assert any(v["analysis"] and v["analysis"]["seat"] == 0 and v["analysis"]["pv"] for v in seen)


def test_run_curves_only_from_given_runs(server):
    code, info = request(server, "GET", "/api/info")
    assert code == 200 and [r["name"] for r in info["runs"]] == ["c4"] and "run:c4" in info["players"]
    code, data = request(server, "GET", "/api/runs/c4/metrics")
    assert code == 200 and data["series"]["train"]["loss/total"][0][0] == 1


def test_fuzz_a_thousand_random_requests(server):
    """>= 1,000 random requests (paths, methods, bodies): never a 5xx, always JSON with
    one line, and the server still plays afterwards."""
    rng = np.random.default_rng(0)
    code, view = request(server, "POST", "/api/sessions", {"game": "tic_tac_toe", "players": ["human", "random"]})
    sid = view["id"]
    paths = [
        "/api/sessions",
        f"/api/sessions/{sid}",
        f"/api/sessions/{sid}/move",
        f"/api/sessions/{sid}/undo",
        "/api/runs/c4/metrics",
        "/api/runs/c4/ladder",
        "/api/runs/%2e%2e/metrics",
        "/api/info",
        "/api/x",
        "/api/sessions/../../etc/passwd",
        "/api/sessions/%00/move",
    ]
    values = [
        None,
        0,
        -1,
        3,
        1e308,
        float("nan"),
        "",
        "x" * 300,
        [],
        {},
        True,
        "human",
        "random",
        "run:c4",
        "mcts:5",
        "mcts:-1",
        "mcts:1e9",
        "connect_four",
        "go(board_size=1)",
        "../../etc",
        "tic_tac_toe",
    ]
    keys = ["game", "players", "action", "seed", "delay", "x"]
    statuses = []
    for _ in range(1000):
        method = ["GET", "POST", "PUT", "DELETE"][rng.integers(4)]
        path = paths[rng.integers(len(paths))]
        kind = rng.integers(4)
        if kind == 0:
            raw = bytes(rng.integers(0, 256, rng.integers(0, 40), dtype=np.uint8))
        elif kind == 1:
            fields = rng.choice(keys, rng.integers(0, 4))
            raw = json.dumps({k: values[rng.integers(len(values))] for k in fields}).encode()
        elif kind == 2:
            raw = json.dumps(
                {
                    "game": "tic_tac_toe",
                    "players": [values[rng.integers(len(values))], "random"],
                    "action": int(rng.integers(-2, 12)),
                }
            ).encode()
        else:
            raw = None
        if method == "GET":
            raw = None
        code, answer = request(server, method, path, raw=raw)
        statuses.append(code)
        assert code < 500, (method, path, raw, answer)
        if code >= 400:
            assert isinstance(answer, dict) and "\n" not in answer["error"]
    assert len(statuses) == 1000 and sum(s >= 400 for s in statuses) > 500
    code, view = request(server, "POST", "/api/sessions", {"game": "tic_tac_toe", "players": ["human", "random"]})
    assert code == 201 and request(server, "POST", f"/api/sessions/{view['id']}/move", {"action": 4})[0] == 200


def test_serve_command(c4_run, tmp_path, capsys):
    """`polyzero serve` as a user runs it: refuses a directory that is not a run, then
    serves on 127.0.0.1 by default until stopped."""
    import signal
    import subprocess
    import sys

    from polyzero.cli import main

    assert main(["serve", str(tmp_path)]) == 2 and "is not a run directory" in capsys.readouterr().err
    assert main(["serve", "--port", "70000"]) == 2
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "polyzero", "serve", str(c4_run), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.strip() == f"polyzero: serving on http://127.0.0.1:{port}  (Ctrl-C stops)", line
        for _ in range(100):
            try:
                code, info = request(f"http://127.0.0.1:{port}", "GET", "/api/info")
                break
            except urllib.error.URLError:
                time.sleep(0.1)
        assert code == 200 and info["runs"][0]["name"] == "c4" and info["runs"][0]["game"] == "connect_four"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def test_analyse_the_position_in_front_of_the_person(server):
    code, view = request(server, "POST", "/api/sessions", {"game": "connect_four", "players": ["human", "random"]})
    sid = view["id"]
    code, answer = request(server, "POST", f"/api/sessions/{sid}/analyse", {})
    assert code == 400 and "no learned player" in answer["error"]
    code, answer = request(server, "POST", f"/api/sessions/{sid}/analyse", {"player": "mcts:50"})
    assert code == 400 and "no search to show" in answer["error"]
    code, a = request(server, "POST", f"/api/sessions/{sid}/analyse", {"player": "run:c4@24"})
    assert code == 200 and a["seat"] == 0 and a["ply"] == 0 and a["simulations"] in (23, 24)
    assert sorted(m["action"] for m in a["moves"]) == list(range(7)) and a["pv"][0] == a["moves"][0]["text"]
    code, view = request(server, "POST", "/api/sessions", {"game": "kuhn_poker", "players": ["human", "random"]})
    code, answer = request(server, "POST", f"/api/sessions/{view['id']}/analyse", {"player": "run:c4"})
    assert code == 409 and "imperfect information" in answer["error"]
