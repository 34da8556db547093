"""benchmarks/selfplay_throughput.py through the fused search: the recurrent calls the
kernel makes out of the recording's sight are counted and replayed for the ceiling."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import selfplay_throughput as bench  # noqa: E402


def _job(inference: str) -> dict:
    return {
        "preset": "muzero_tic_tac_toe",
        "games": 4,
        "device": "cpu",
        "seed": 0,
        "threads": 1,
        "seconds": 0.3,
        "warmup_ticks": 1,
        "inference": inference,
    }


def test_fused_self_play_counts_the_recurrent_calls_inside_the_kernel():
    fused, python = bench.run_actor(_job("fused")), bench.run_actor(_job("eager"))
    assert fused["fused"] and not python["fused"]
    sims = 25  # muzero_tic_tac_toe's search.num_simulations
    for row in (fused, python):
        assert row["positions"] > 0 and row["simulations"] == sims * row["positions"]
        searches = row["positions"] / row["mean_rows_per_call"]  # initial + recurrent calls share one batch
        assert row["network_calls"] == round(searches * (1 + sims))
        assert 0 < row["network_alone_s"]


def test_fused_calls_is_none_where_the_search_called_recurrent_itself():
    algo, evaluate, actor = bench.make_actor("muzero_tic_tac_toe", 3, "fused", "cpu", seed=0)
    evaluate.record = True
    actor.tick()
    calls = evaluate.calls
    assert [name for name, _ in calls] == ["initial"]
    inside = bench.fused_calls(evaluate.evaluate, calls, simulations=75, positions=3)
    assert len(inside) == 25 and inside[0][1][0][0] == (3, evaluate.program.hidden)
    recorded_recurrent = calls + [("recurrent", inside[0][1])]
    assert bench.fused_calls(evaluate.evaluate, recorded_recurrent, 75, 3) is None


def test_an_unknown_preset_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--presets", "muzero,nope", "--out", str(tmp_path / "sp.json")])
    assert exit_.value.code == 2 and "unknown preset(s) nope" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_refresh_reloads_the_same_weights_every_so_many_moves():
    algo, evaluate, actor = bench.make_actor("alphazero", 2, "eager", "cpu", seed=0)
    loads = []
    real = evaluate.evaluate.load_state_dict
    evaluate.evaluate.load_state_dict = lambda state: (loads.append(len(loads)), real(state))
    before = {k: v.clone() for k, v in evaluate.net.state_dict().items()}
    refresh = bench.Refresher(evaluate, 3)
    cache = evaluate.evaluate.cache
    for move in range(7):
        refresh.before_tick()
        assert (len(cache._slot_of) == 0) == (move in (0, 3, 6))  # empty at the start and after each reload
        actor.tick()
    assert len(loads) == 2  # before moves 4 and 7
    assert all((before[k] == v).all() for k, v in evaluate.net.state_dict().items())
    never = bench.Refresher(evaluate, 0)
    for _ in range(5):
        never.before_tick()
    assert len(loads) == 2
