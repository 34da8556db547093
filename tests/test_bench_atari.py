"""`minatar_muzero.py --game atari-breakout`: the Reanalyze arms refused in one line, the
evaluation's episode cap on real ALE frames, --follow evaluating checkpoints until the
run has ended, and the one-seed report beside random play (synthetic evaluation rows,
no training)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import atari_fire_probe  # noqa: E402
import minatar_muzero  # noqa: E402
import minatar_muzero_eval  # noqa: E402
import minatar_muzero_games  # noqa: E402
from polyzero.eval.players import RandomPlayer  # noqa: E402


@pytest.mark.parametrize("arms", ["reanalyze", "muzero,reanalyze_small"])
def test_reanalyze_arms_are_refused_on_atari(arms, capsys):
    with pytest.raises(SystemExit) as stop:
        minatar_muzero.main(["eval", "--game", "atari-breakout", "--arms", arms])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and "is a MinAtar Breakout preset" in err and "muzero_reanalyze_ratio" in err


def test_minatar_keeps_every_arm():
    assert minatar_muzero_games.game_error("minatar-breakout", list(minatar_muzero.ARMS), ()) is None


def test_capped_episodes_on_ale_frames_are_counted():
    def capped(frames):
        return minatar_muzero_games.eval_game("atari-breakout", frames)

    assert capped(160).max_steps == 40 and capped(160).obs_shape == capped(0).obs_shape  # 4 frames an agent step
    res = minatar_muzero_eval.episodes(capped(160), RandomPlayer(0), 4, seed=0)
    # the cap counts the random no-op starts (up to 30 steps): each episode ends 10 to 40 agent steps in
    assert all(10 <= n <= 40 for n in res["lengths"]) and len(set(res["lengths"])) > 1 and res["capped"] == 4
    assert minatar_muzero_eval.episodes(capped(160), RandomPlayer(0), 4, seed=0)["lengths"] == res["lengths"]
    assert minatar_muzero_eval.episodes(capped(0), RandomPlayer(0), 2, seed=0)["capped"] == 0  # 108,000 frames


def test_follow_evaluates_until_the_run_has_ended(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(minatar_muzero_eval, "_evaluate_once", lambda args, work, f: seen.append(f("muzero")))
    checkpoints = iter([["a"], ["a", "b"], ["a", "b", "c"]])

    def sleep(_):  # the run ends during the second wait; one more pass evaluates its last checkpoint
        if len(seen) == 2:
            (tmp_path / "muzero.seconds").write_text("7200")

    monkeypatch.setattr(minatar_muzero_eval.time, "sleep", sleep)
    args = minatar_muzero.argparse.Namespace(arms=["muzero"], follow=60.0)
    minatar_muzero_eval.evaluate(args, tmp_path, lambda arm: next(checkpoints))
    assert seen == [["a"], ["a", "b"], ["a", "b", "c"]]


@pytest.mark.parametrize("newest_first", [False, True])
def test_checkpoints_are_evaluated_in_order_or_newest_first(tmp_path, monkeypatch, newest_first):
    import polyzero.train.agents

    ckpts = []
    for step in (0, 50, 100):
        ckpt = tmp_path / "muzero" / "checkpoints" / f"step_{step:06d}"
        ckpt.mkdir(parents=True)
        (ckpt / "state.json").write_text(
            json.dumps({"step": step, "actor": {"stats": {"positions": step}}, "train_time": 1})
        )
        ckpts.append(ckpt)
    played = []
    monkeypatch.setattr(polyzero.train.agents, "load_search_player", lambda path, game, seed: Path(path).name)
    fake = {"mean_return": 1.0, "ci_low": 0.5, "ci_high": 1.5, "mean_length": 9.0, "capped": 0, "seconds": 0.1}
    monkeypatch.setattr(
        minatar_muzero_eval, "episodes", lambda game, player, n, seed: played.append(player) or dict(fake)
    )
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "random.json").write_text("{}")
    (tmp_path / "eval" / "muzero-step_000050.json").write_text("{}")  # cached: not evaluated again
    args = minatar_muzero.argparse.Namespace(
        arms=["muzero"], follow=0, game="atari-breakout", eval_cap=40, episodes=2, seed=0, newest_first=newest_first
    )
    minatar_muzero_eval.evaluate(args, tmp_path, lambda arm: ckpts)
    assert played == (["step_000100", "step_000000"] if newest_first else ["step_000000", "step_000100"])
    assert json.loads((tmp_path / "eval" / "muzero-step_000100.json").read_text())["step"] == 100


def test_eval_every_keeps_the_multiples_and_the_last_once_the_run_ended():
    ckpts = [Path(f"step_{k:06d}") for k in (0, 50, 100, 150, 200, 237)]
    assert [c.name for c in minatar_muzero_eval.thinned(ckpts, 100)] == [
        "step_000000",
        "step_000100",
        "step_000200",
        "step_000237",
    ]
    assert minatar_muzero_eval.thinned(ckpts, 0) == ckpts and minatar_muzero_eval.thinned([], 100) == []
    # while the run trains, its newest checkpoint is not yet its last: --follow skips it
    assert [c.name for c in minatar_muzero_eval.thinned(ckpts, 100, ended=False)] == [
        "step_000000",
        "step_000100",
        "step_000200",
    ]


def _row(step: int, ret: float, half: float = 0.5) -> dict:
    return {
        "mean_return": ret,
        "ci_low": ret - half,
        "ci_high": ret + half,
        "returns": [ret] * 4,
        "lengths": [200] * 4,
        "mean_length": 200.0,
        "capped": 0,
        "seconds": 30.0,
        "step": step,
        "positions": 256 * step,
        "train_time": 5.5 * step,
    }


def test_one_seed_report_beside_random_play(tmp_path, monkeypatch):
    monkeypatch.setattr(minatar_muzero, "RESULTS", tmp_path / "results")
    work = tmp_path / "atari_breakout_s0"
    (work / "eval").mkdir(parents=True)
    for step in (0, 50, 100, 150):  # step 150 has no evaluation
        (work / "muzero" / "checkpoints" / f"step_{step:06d}").mkdir(parents=True)
    (work / "muzero" / "config.toml").write_text('game = "atari-breakout"\n[eval]\nsimulations = 16\n')
    (work / "muzero.seconds").write_text("7200.4")
    metrics = [
        {"kind": "train", "step": k, "selfplay/games_per_step": g, "selfplay/mean_return": m}
        for k, g, m in [(1, 1, 2.0), (50, 3, 1.0), (51, 0, 0.0), (60, 2, 4.0)]
    ]
    (work / "muzero" / "metrics.jsonl").write_text("\n".join(json.dumps(m) for m in metrics) + "\n")
    for step, ret in [(0, 1.0), (50, 1.2), (100, 4.0)]:
        (work / "eval" / f"muzero-step_{step:06d}.json").write_text(json.dumps(_row(step, ret)))
    (work / "eval" / "random.json").write_text(json.dumps(_row(0, 1.3, 0.4)))
    minatar_muzero.main(["report", "--game", "atari-breakout", "--work", str(work), "--episodes", "32"])
    result = json.loads((tmp_path / "results" / "atari_breakout.json").read_text())
    assert result["game"] == "atari-breakout" and result["seeds"] == [0] and result["eval_cap"] == 18000
    assert [p["step"] for p in result["curves"]["muzero"]] == [0, 50, 100]
    assert "lengths" not in result["curves"]["muzero"][0] and "returns" not in result["random"]
    vs = result["against_random"]["muzero"]
    assert vs["last_above_random"] is True and vs["checkpoints_above_random"] == 1  # 1.2 +- 0.5 overlaps 1.3 +- 0.4
    md = (tmp_path / "results" / "atari_breakout.md").read_text()
    assert "one seed" in md and "**One seed**" in md and "18,000 frames (4,500 agent steps" in md
    assert result["not_evaluated"] == {"muzero": ["step_000150"]} and "not evaluated" in md
    assert result["selfplay"]["muzero"] == [
        {"step": 50, "episodes": 4, "mean_return": 1.25},  # episode-weighted: (2 + 3 * 1) / 4
        {"step": 100, "episodes": 2, "mean_return": 4.0},
    ]
    assert "1.25 (50), 4.00 (100)" in md
    assert "random play, same run: 1.30 [0.90, 1.70]" in md and "16 simulations" in md and "120.0 min" in md
    assert (tmp_path / "results" / "atari_breakout.png").stat().st_size > 0


def test_seeds_report_on_atari_carries_random_play(tmp_path, monkeypatch):
    import common

    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    for seed, ret in enumerate([2.0, 3.0]):
        (tmp_path / f"s{seed}" / "eval").mkdir(parents=True)
        (tmp_path / f"s{seed}" / "eval" / "muzero-step_000050.json").write_text(json.dumps(_row(50, ret)))
        (tmp_path / f"s{seed}" / "eval" / "random.json").write_text(json.dumps(_row(0, 1.0 + seed)))
    argv = ["report", "--game", "atari-breakout", "--seeds", "0,1", "--work", str(tmp_path / "s{seed}")]
    minatar_muzero.main(argv)
    result = json.loads((tmp_path / "results" / "atari_breakout_seeds.json").read_text())
    assert result["game"] == "atari-breakout" and result["random"]["returns"] == [1.0, 2.0]
    assert result["arms"]["muzero"][0]["mean"] == pytest.approx(2.5)
    md = (tmp_path / "results" / "atari_breakout_seeds.md").read_text()
    assert md.startswith("# Benchmark `atari_breakout_seeds`: Atari Breakout (ALE), MuZero over seeds 0, 1")
    assert "wall-clock budget" in md and "Random play, same evaluation, per seed 1.00, 2.00" in md


def test_fire_probe_summary():
    rows = [
        {"action": 1, "value": 10.0, "prior": [0.1, 0.6, 0.2, 0.1], "q": [1.0, 1.5, None, 0.5]},
        {"action": 0, "value": -20.0, "prior": [0.4, 0.2, 0.2, 0.2], "q": [2.0, 2.0, 2.0, 2.0]},
    ]
    row = atari_fire_probe.summarize(rows, fire=1, discount=0.99)
    assert row["decisions"] == 2 and row["fire_played"] == 0.5 and row["fire_prior"] == pytest.approx(0.4)
    assert row["q_spread"] == pytest.approx(0.5) and row["value"] == -5.0  # the unvisited action's Q left out
    assert row["wait_cost"] == pytest.approx(0.01 * 15)
    assert row["played"] == [0.5, 0.5, 0.0, 0.0] and row["prior"] == pytest.approx([0.25, 0.4, 0.2, 0.15])


@pytest.mark.parametrize(
    "extra, message",
    [([], "has no checkpoints"), (["--episodes", "0"], "must be at least 1")],
)
def test_fire_probe_bad_input(tmp_path, capsys, extra, message):
    with pytest.raises(SystemExit) as stop:
        atari_fire_probe.main(["--run", str(tmp_path), *extra])
    assert stop.value.code == 2 and message in capsys.readouterr().err.strip().splitlines()[-1]
