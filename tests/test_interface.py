"""A person's interface: the Python API (its doc's example runs here), export to
TorchScript and ONNX, terminal play, the training display, and the CLI's --version,
presets and plot --out."""

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyspiel
import pytest
import torch

from polyzero.cli import main

DOCS = Path(__file__).resolve().parent.parent / "docs"
TINY = {
    "train.steps": 2,
    "train.positions_per_step": 32,
    "train.batch_size": 16,
    "search.num_simulations": 8,
    "eval.every": 0,
    "eval.final_games": 0,
    "eval.simulations": 16,
    "threads": 1,
}


@pytest.fixture(scope="module")
def ttt_run(tmp_path_factory):
    import polyzero

    return polyzero.train("tic_tac_toe", overrides=TINY, run_dir=tmp_path_factory.mktemp("api") / "ttt")


# ------------------------------------------------------------------ API
def test_api_doc_example(tmp_path, monkeypatch, capsys):
    text = (DOCS / "api.md").read_text()
    code = re.search(r"## Example.*?```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/api.md", "exec"), {})
    out = capsys.readouterr().out
    assert "trained 2 learning steps" in out and "vs random" in out and "losses.png" in out
    assert (tmp_path / "runs" / "api-example" / "checkpoints" / "step_000003").is_dir()


def test_import_is_cheap_and_run_directories_need_no_registration(ttt_run):
    """A fresh interpreter: `import polyzero` loads neither torch nor pyspiel, and
    polyzero.eval.make_player takes a run directory without register_player_loader."""
    code = (
        "import sys, polyzero; assert 'torch' not in sys.modules and 'pyspiel' not in sys.modules\n"
        "import pyspiel; from polyzero.eval import make_player\n"
        f"p = make_player({str(ttt_run) + '@5'!r}, pyspiel.load_game('tic_tac_toe'))\n"
        "print(p.name, p.params.num_simulations)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "5"


def test_agent_act_and_analyse(ttt_run):
    import polyzero

    agent = polyzero.load_agent(str(ttt_run), simulations=24)
    state = agent.game.new_initial_state()
    for a in (4, 0):
        state.apply_action(a)
    view = agent.analyse(state)
    assert view["simulations"] == 24 - 1 or view["simulations"] == 24
    assert [m["visits"] for m in view["moves"]] == sorted((m["visits"] for m in view["moves"]), reverse=True)
    assert {m["action"] for m in view["moves"]} == set(state.legal_actions())
    assert view["pv"][0] == view["moves"][0]["action"] and view["pv_text"][0] == view["moves"][0]["text"]
    assert -1 <= view["value"] <= 1 and agent.act(state) in state.legal_actions()
    from polyzero.errors import UsageError

    with pytest.raises(UsageError, match="no search to analyse"):
        polyzero.reference_player("random", "tic_tac_toe").analyse(state)
    res = polyzero.arena(agent, polyzero.reference_player("random", "tic_tac_toe"), games=4)
    assert res.wins + res.draws + res.losses == 4
    res = polyzero.open_run(ttt_run).evaluate("mcts-solver:1x", games=2, simulations=4)
    assert res.name_b == "mcts-solver:4" and res.wins + res.draws + res.losses == 2


def test_the_api_refuses_bad_input_with_one_line(ttt_run):
    import polyzero
    from polyzero.api import _override_strings
    from polyzero.errors import UsageError

    agent = polyzero.reference_player("random", "tic_tac_toe")
    over = agent.game.new_initial_state()
    for a in (0, 3, 1, 4, 2):  # X takes the top row
        over.apply_action(a)
    cases = [
        (lambda: agent.act(over), "a decision point of tic_tac_toe(): this state is terminal"),
        (lambda: agent.act("x"), "act needs a state of tic_tac_toe(), not a str"),
        (lambda: agent.act(pyspiel.load_game("connect_four").new_initial_state()), "not of connect_four()"),
        (lambda: polyzero.reference_player("mcts:10", "kuhn_poker"), "holds what its seat cannot observe"),
        (lambda: polyzero.reference_player(5, "tic_tac_toe"), "a spec string such as 'mcts:100', not 5"),
        (lambda: polyzero.arena("random", "random", game="tic_tac_toe", games=-3), "in 1..10,000,000, not -3"),
        (lambda: polyzero.arena("random", "random", game="tic_tac_toe", games=True), "not True"),
        (lambda: polyzero.train("tic_tac_toe", overrides={"train.steps": np.int64(5)}), "not int64"),
        (lambda: polyzero.train("tic_tac_toe", overrides=[("train.steps", 5)]), "overrides must be a dict"),
        (lambda: polyzero.load_agent(str(ttt_run), simulations=2.5), "2.5"),
    ]
    for call, message in cases:
        with pytest.raises(UsageError, match=re.escape(message)):
            call()
    from polyzero.train.agents import split_simulations

    assert split_simulations("runs/exp@v2@50") == ("runs/exp@v2", "50") and split_simulations("r") == ("r", "")
    assert _override_strings({"train.learning_rate": np.float64(0.5), "x.y": [1, 2.5]}) == [
        "train.learning_rate=0.5",
        "x.y=[1, 2.5]",
    ]


# ------------------------------------------------------------------ export
def _onnx_outputs(path, feeds):
    import onnxruntime

    sess = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_export_alphazero_onnx_and_torchscript_match_pytorch(ttt_run, tmp_path):
    from polyzero.algos import make_algorithm
    from polyzero.api import open_run
    from polyzero.train.checkpoint import latest_checkpoint, read_learner

    assert main(["export", str(ttt_run), "--format", "onnx", "--out", str(tmp_path / "m.onnx")]) == 0
    assert main(["export", str(ttt_run), "--format", "torchscript", "--out", str(tmp_path / "m.pt")]) == 0
    cfg = open_run(ttt_run).config
    game = pyspiel.load_game("tic_tac_toe")
    algo = make_algorithm(cfg, game)
    net = algo.build_network().eval()
    net.load_state_dict(read_learner(latest_checkpoint(ttt_run))["net"])
    states, s = [], game.new_initial_state()
    while not s.is_terminal():  # real positions, batched
        states.append(s.clone())
        s.apply_action(s.legal_actions()[len(s.legal_actions()) // 2])
    obs = algo.encode(states).astype(np.float32)
    with torch.no_grad():
        logits, value = (t.numpy() for t in net(torch.from_numpy(obs)))
    onnx_logits, onnx_value = _onnx_outputs(tmp_path / "m.onnx", {"observation": obs})
    assert np.abs(onnx_logits - logits).max() < 1e-4 and np.abs(onnx_value - value).max() < 1e-4
    scripted = torch.jit.load(str(tmp_path / "m.pt"))
    with torch.no_grad():
        ts_logits, ts_value = scripted(torch.from_numpy(obs))
    assert np.abs(ts_logits.numpy() - logits).max() < 1e-4 and np.abs(ts_value.numpy() - value).max() < 1e-4
    assert '"policy_logits"' in (tmp_path / "m.json").read_text()


def test_export_muzero_as_three_graphs(tmp_path):
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config
    from polyzero.export import export_network

    cfg = build_config("tic_tac_toe", "muzero", overrides=["net.channels=8", "net.blocks=1"])
    game = pyspiel.load_game("tic_tac_toe")
    algo = make_algorithm(cfg, game)
    net = algo.build_network().eval()
    files = export_network("muzero", net, algo.encoder.shape, "onnx", tmp_path / "mz.onnx", {"game": "tic_tac_toe"})
    assert [f.name for f in files] == ["mz-h.onnx", "mz-g.onnx", "mz-f.onnx", "mz.json"]
    rng = np.random.default_rng(0)
    obs = rng.random((3, *algo.encoder.shape), dtype=np.float32)
    action = np.array([0, 4, 8], np.int64)
    with torch.no_grad():
        hidden = net.represent(torch.from_numpy(obs))
        nxt, reward = net.dynamics(hidden, torch.from_numpy(action))
        reward = net.reward_scalar(reward, 3, hidden)
        logits, value = net.predict(nxt)
        value = net.value_scalar(value)
    (h,) = _onnx_outputs(tmp_path / "mz-h.onnx", {"observation": obs})
    g_next, g_reward = _onnx_outputs(tmp_path / "mz-g.onnx", {"hidden": h, "action": action})
    f_logits, f_value = _onnx_outputs(tmp_path / "mz-f.onnx", {"hidden": g_next})
    for ours, theirs in ((h, hidden), (g_next, nxt), (g_reward, reward), (f_logits, logits), (f_value, value)):
        assert np.abs(ours - theirs.numpy()).max() < 1e-4


def test_export_refuses_what_it_does_not_handle(ttt_run, capsys, tmp_path):
    from polyzero.errors import UsageError
    from polyzero.export import export_network

    with pytest.raises(UsageError, match="ndmz run's network is not supported"):
        export_network("ndmz", torch.nn.Linear(1, 1), (1,), "onnx", tmp_path / "x.onnx", {})
    assert main(["export", str(tmp_path / "nope"), "--format", "onnx"]) == 2


# ------------------------------------------------------------------ terminal play
def _play(game, lines, agent="random", seat=0, analyse=False, game_spec=None):
    from polyzero.eval import make_player
    from polyzero.eval.play import play_in_terminal

    game = pyspiel.load_game(game) if isinstance(game, str) else game
    feed = iter(lines)

    def read(prompt):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    out = []
    results = play_in_terminal(
        game, make_player(agent, game), seat, input_fn=read, output_fn=out.append, analyse=analyse, game_spec=game_spec
    )
    return results, "\n".join(out)


def test_terminal_states_the_side_draws_coordinates_and_takes_bare_points():
    results, out = _play(
        "tic_tac_toe",
        ["b2", "1,1", "undo", "(1,1)", "x(0,0)"] + ["0 1", "0 2", "1 0", "1 2", "2 0", "2 1", "2 2"] * 2 + ["n"],
    )
    assert out.startswith("you play seat 0: x, moving first")
    assert "  0 1 2\n0 . . . 0" in out  # the board with coordinates on its sides
    assert "'b2' is not a legal move" in out and "took back your last move" in out
    assert len(results) == 1 and "game over" in out

    # Go: a bare point, a compact list (no 82-entry flood), a readable header.
    results, out = _play("go(board_size=9)", ["e5"])
    assert "Go 9x9, komi 7.5: black (X) (seat 0) to move, move 1" in out and "GoState(" not in out
    assert "82 legal moves, e.g." in out and "W a1" not in out
    assert results == []  # Ctrl-D in the second move: quiet, no game recorded
    assert re.search(r"^5 \. \. \. \. X \. \. \. \. 5$", out, re.M), out


def test_take_away_ids_never_shadow_move_text():
    from polyzero.eval.boards import MoveNames

    spec = str(Path(__file__).resolve().parent.parent / "examples" / "take_away.py")
    sys.path.insert(0, str(Path(spec).parent))
    import take_away  # noqa: F401 - registers the game

    state = pyspiel.load_game("take_away").new_initial_state()
    names = MoveNames(state)
    assert state.action_to_string(0, names.parse("1")) == "take 1"
    assert state.action_to_string(0, names.parse("take 2")) == "take 2"


def test_imperfect_information_seat_sees_only_its_own_view():
    """Kuhn poker: the human's lines never show the deal or the opponent's card."""
    game = pyspiel.load_game("kuhn_poker")
    for seed_lines in (["1", "1", "y", "0", "1", "n"],):
        results, out = _play(game, seed_lines, seat=1)
    assert "Deal" not in out and "chance:" not in out and "your view (seat 1)" in out
    views = {line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("your view")}
    assert views and all(v[0] in "012" and v.count(v[0]) >= 1 for v in views)
    with pytest.raises(Exception, match="imperfect information"):
        _play(game, [], seat=0, analyse=True)


def test_play_refuses_simultaneous_moves_and_ctrl_d_exits_quietly(capsys, monkeypatch):
    assert main(["play", "matrix_rps", "--agent", "random"]) == 2
    assert "simultaneous moves" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("x(1,1)\n"))
    assert main(["play", "tic_tac_toe", "--agent", "random"]) == 0


def test_analyse_shows_the_agents_value_and_top_moves(ttt_run):
    results, out = _play("tic_tac_toe", ["(1,1)", "n"], agent=str(ttt_run), analyse=True)
    assert re.search(r"thinks: value [+-]\d\.\d\d for itself .* top moves o\(\d,\d\) \(\d+ visits, Q [+-]", out), out


# ------------------------------------------------------------------ the training display
def test_progress_fits_80_columns_without_carriage_returns_off_a_terminal():
    from polyzero.train.progress import Progress

    stream = io.StringIO()
    p = Progress(200, 0, stream=stream)
    evals = {}
    for step in range(1, 201):
        if step % 100 == 0:  # two evaluations with equal scores: each gets its line
            evals = {
                "eval/mcts-solver:100/score": 0.5,
                "eval/mcts-solver:100/ci_low": 0.3,
                "eval/mcts-solver:100/ci_high": 0.7,
            }
        loss = {"loss/total": 1.2345, "loss/value": 0.4, "loss/policy": 0.8, "ray/queue": 3.0}
        p.update(step, loss, {"games": 1234 * step, "positions": 10_000 * step}, 4567.0, evals)
    p.close()
    text = stream.getvalue()
    assert "\r" not in text and "e+" not in text
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80 and len(lines) == 22
    assert lines.count("eval step 100: mcts-solver:100 0.50 [0.30, 0.70]") == 1
    assert lines.count("eval step 200: mcts-solver:100 0.50 [0.30, 0.70]") == 1
    assert lines[-1].startswith("step 200/200 | 246.8k games 2.0M pos | loss 1.234")
    quiet = io.StringIO()
    off = Progress(10, 0, enabled=False, stream=quiet)
    off.update(1, loss, {"games": 1, "positions": 1}, 1.0, evals)
    off.bar.write("a new learner resumes from step 2")  # the supervisor's messages still show
    assert quiet.getvalue() == "a new learner resumes from step 2\n"


# ------------------------------------------------------------------ CLI
def test_version_presets_and_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and re.match(r"polyzero \d", capsys.readouterr().out)
    assert main(["presets"]) == 0
    listing = capsys.readouterr().out
    assert "muzero_connect_four" in listing and "muzero on connect_four" in listing
    assert main(["presets", "--show", "alphazero_tic_tac_toe"]) == 0 and "[train]" in capsys.readouterr().out
    assert main(["presets", "--show", "muzero_conect_four"]) == 2
    assert "did you mean muzero_connect_four" in capsys.readouterr().err
    import argparse

    from polyzero.cli import COMMANDS, _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) == len(COMMANDS)  # every subcommand, whatever its module is called
    for command in sub.choices:
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "examples:\n  polyzero " + command in capsys.readouterr().out, command
        silent = [a.dest for a in sub.choices[command]._actions if not a.help]
        assert not silent, f"{command}: options without help: {silent}"


def test_train_with_a_preset_by_name(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # presets by name work outside the repository
    args = ["train", "--preset", "alphazero_tic_tac_toe", "--run-dir", "run", "--no-progress"]
    for key, value in TINY.items():
        args += ["--set", f"{key}={value}"]
    assert main(args) == 0
    assert 'game = "tic_tac_toe"' in (tmp_path / "run" / "config.toml").read_text()
    assert main(["train", "--preset", "nope"]) == 2 and "unknown preset 'nope'" in capsys.readouterr().err


def test_plot_out_for_several_runs(ttt_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["plot", str(ttt_run), str(ttt_run), "--out", "cmp"]) == 0
    assert (tmp_path / "cmp" / "losses.png").is_file()
    assert main(["plot", str(ttt_run), str(ttt_run)]) == 0
    assert (tmp_path / "plots" / "losses.png").is_file()  # where its help says
