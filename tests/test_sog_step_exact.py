"""Student of Games' learning step computes what it computed before it was made faster
(docs/journal/2026-11-30-sog-step-speed.md): a few learning steps of tiny Kuhn and Leduc
runs end with these network weights, replay and query-buffer contents and metrics. The
speed work was checked bit for bit on the development machine; the values kept here are
summaries (each array's size, sum, absolute sum and product with a fixed random vector,
which a permutation also moves), compared exactly for integers and to a relative 1e-4
for floats, so that another x86-64 CPU's floating-point kernels (another summation order
in a matrix product) do not fail the test while a change to what a step computes (a
search's targets, a query's rows, an example's weight) does. They were written by the code
before the speed work (commit 937fb45, torch 2.13 on CPU, one thread), whose step solved
its queries one after another (`sog.solve_together=false`). Regenerate only for
an intended change, and say so: ``PYTHONPATH=. python tests/test_sog_step_exact.py``."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch

from polyzero.config import build_config

# Settings small enough for seconds of CPU, large enough that every part of a step
# runs: self-play with queries collected, solves with recursive queries, updates.
# The CPU always: the expected values are the CPU's numbers (`device=auto` takes a GPU
# where there is one, whose arithmetic differs).
SETTINGS = [
    "device=cpu",
    "threads=1",
    "train.batch_size=16",
    "train.minibatches_per_step=2",
    "train.replay_size=256",
    "train.checkpoint_every=100000",
    "eval.every=0",
    "eval.final_games=0",
    "net.width=16",
    "net.layers=1",
    "sog.simulations=6",
    "sog.solve_simulations=6",
    "sog.episodes_per_step=1",
    "sog.solves_per_step=6",
    "sog.q_search=0.5",
    "sog.q_recursive=0.3",
]
STEPS = 3
# Metrics that depend on what was computed, not on how long it took.
METRIC_PREFIXES = ("loss/", "sog/")
METRIC_KEYS = {"selfplay/games", "selfplay/positions", "train/updates", "train/learning_rate"}

EXPECTED = {
    "kuhn_poker": {
        "weights": {
            "policy.0.bias": [6, 0.29728889092803, 0.8366525806486607, -0.20579628434886252],
            "policy.0.weight": [96, 2.9044819651171565, 12.887871040962636, 0.5950564836562504],
            "policy.1.bias": [6, -0.07013567164540291, 0.5444818325340748, -0.1316010925943219],
            "policy.1.weight": [96, -0.4017247047740966, 12.292131102411076, 0.6642206605346752],
            "trunk.0.bias": [16, -0.7747446498833597, 2.2456712224520743, 0.41031290451055624],
            "trunk.0.weight": [192, -1.9857358734298032, 26.67327950851177, 0.14144215027320822],
            "value.0.bias": [3, -0.26635483652353287, 0.46939053386449814, 0.09673569781875431],
            "value.0.weight": [48, -0.18663989420747384, 4.972994118521456, -0.26527114710417354],
            "value.1.bias": [3, 0.17173181846737862, 0.25862492248415947, -0.17095244090288983],
            "value.1.weight": [48, -0.6891732894582674, 5.210497018764727, 0.5502027458876575],
        },
        "replay": {
            "meta": [2, 48, 48, -21.115042672154893],
            "player": [256, 14, 14, 2.3503360665421695],
            "policy_mask": [768, 18.0, 18.0, -2.7679946288989283],
            "row_count": [256, 18, 18, 6.324077532505539],
            "row_legal": [36, 36, 36, -3.1262066024151696],
            "row_policy": [36, 17.99999983049929, 17.99999983049929, -3.5722646594699143],
            "row_slot": [18, 18, 18, 5.117550564394078],
            "uses": [256, 1224, 1224, 44.33912222847611],
            "value": [1536, 15.635993476957083, 109.68644780293107, -7.0303496861367485],
            "value_mask": [1536, 104.0, 104.0, -0.26011269295595385],
            "x": [3072, 76.00000059884042, 76.00000059884042, 4.739603022886127],
        },
        "queries": {
            "added": [1, 38, 38, 0.8984434772195105],
            "chance": [120, 19.999999999999996, 19.999999999999996, -2.297672441262429],
            "ranges": [120, 71.55612122287474, 71.55612122287474, -9.606274582524817],
            "worlds": [2558, 155040, 155040, -925.5292175021527],
        },
        "counts": {
            "games": 3,
            "positions": 6,
            "solves": 18,
            "queries_seen": 69,
            "queries_kept": 33,
            "td_targets": 1,
            "updates": 4,
        },
        "metrics": {
            "0:selfplay/games": 1,
            "0:selfplay/positions": 2,
            "0:sog/queries_kept": 9,
            "0:sog/queries_seen": 17,
            "0:sog/query_buffer": 4,
            "0:sog/solves": 6,
            "0:sog/solves_this_step": 6,
            "0:sog/td_targets": 1,
            "0:train/learning_rate": 0.003,
            "0:train/updates": 0,
            "1:loss/l2": 1.2262722520972602e-05,
            "1:loss/policy": 0.6789119243621826,
            "1:loss/total": 0.6732850670814514,
            "1:loss/total_unregularised": 0.6732727885246277,
            "1:loss/value": 0.6393271684646606,
            "1:selfplay/games": 2,
            "1:selfplay/positions": 4,
            "1:sog/queries_kept": 22,
            "1:sog/queries_seen": 42,
            "1:sog/query_buffer": 13,
            "1:sog/solves": 12,
            "1:sog/solves_this_step": 6,
            "1:sog/td_targets": 1,
            "1:train/learning_rate": 0.003,
            "1:train/updates": 2,
            "2:loss/l2": 1.182259620691184e-05,
            "2:loss/policy": 0.6872806251049042,
            "2:loss/total": 0.6052188277244568,
            "2:loss/total_unregularised": 0.6052069962024689,
            "2:loss/value": 0.570842981338501,
            "2:selfplay/games": 3,
            "2:selfplay/positions": 6,
            "2:sog/queries_kept": 33,
            "2:sog/queries_seen": 69,
            "2:sog/query_buffer": 20,
            "2:sog/solves": 18,
            "2:sog/solves_this_step": 6,
            "2:sog/td_targets": 1,
            "2:train/learning_rate": 0.003,
            "2:train/updates": 2,
        },
    },
    "leduc_poker": {
        "weights": {
            "policy.0.bias": [18, -0.17055820941459388, 1.577426998061128, -0.2928072586913068],
            "policy.0.weight": [288, 0.9251889767765533, 35.076723768695956, 0.08540654232517148],
            "policy.1.bias": [18, 0.5571738909929991, 2.1659125816076994, -0.06546913265868187],
            "policy.1.weight": [288, -2.0916840074351057, 38.319581641233526, 1.8060410039701185],
            "trunk.0.bias": [16, -0.17643756605684757, 1.4453820008784533, -0.3001639879714938],
            "trunk.0.weight": [576, -0.8551711457839701, 47.64785168055096, -0.6298971716515832],
            "value.0.bias": [6, 0.5239945352077484, 0.8341503143310547, 0.2160569866541441],
            "value.0.weight": [96, 0.5262612476944923, 12.495508808642626, -0.29470591218196196],
            "value.1.bias": [6, 0.18180882558226585, 0.5801737047731876, -0.2192900098834122],
            "value.1.weight": [96, -0.5101219890639186, 12.568696052767336, -0.12160478381425083],
        },
        "replay": {
            "meta": [2, 66, 66, -29.033183674212978],
            "player": [256, 9, 9, -0.4103818602779534],
            "policy_mask": [1536, 83.0, 83.0, -5.329672016318926],
            "row_count": [256, 83, 83, 2.888231131957587],
            "row_legal": [249, 194, 194, 9.364660784473132],
            "row_policy": [249, 82.99999930523336, 82.99999930523336, 2.253666593768669],
            "row_slot": [83, 216, 216, -15.268741067484022],
            "uses": [256, 1179, 1179, 58.67370002380701],
            "value": [3072, 1.2472268163692206, 89.87474669818766, -7.674937761532758],
            "value_mask": [3072, 204.0, 204.0, 15.127147306303538],
            "x": [9216, 180.00000048521906, 180.00000048521906, -2.351187586078673],
        },
        "queries": {
            "added": [1, 531, 531, 12.554565431672632],
            "chance": [10850, 134.66666666666666, 134.66666666666666, 1.3486303901831402],
            "ranges": [5248, 2209.4550547204276, 2209.4550547204276, -21.423831891538015],
            "worlds": [427011, 26950408, 26950408, -2112.437980716161],
        },
        "counts": {
            "games": 3,
            "positions": 15,
            "solves": 18,
            "queries_seen": 1366,
            "queries_kept": 518,
            "td_targets": 2,
            "updates": 4,
        },
        "metrics": {
            "0:selfplay/games": 1,
            "0:selfplay/positions": 4,
            "0:sog/queries_kept": 179,
            "0:sog/queries_seen": 474,
            "0:sog/query_buffer": 177,
            "0:sog/solves": 6,
            "0:sog/solves_this_step": 6,
            "0:sog/td_targets": 0,
            "0:train/learning_rate": 0.001,
            "0:train/updates": 0,
            "1:loss/l2": 2.3340873667621054e-05,
            "1:loss/policy": 0.8864955604076385,
            "1:loss/total": 0.14207733795046806,
            "1:loss/total_unregularised": 0.1420539990067482,
            "1:loss/value": 0.09772921539843082,
            "1:selfplay/games": 2,
            "1:selfplay/positions": 9,
            "1:sog/queries_kept": 343,
            "1:sog/queries_seen": 955,
            "1:sog/query_buffer": 339,
            "1:sog/solves": 12,
            "1:sog/solves_this_step": 6,
            "1:sog/td_targets": 1,
            "1:train/learning_rate": 0.001,
            "1:train/updates": 2,
            "2:loss/l2": 2.3107688321033493e-05,
            "2:loss/policy": 0.9048795998096466,
            "2:loss/total": 0.3244490921497345,
            "2:loss/total_unregularised": 0.32442598044872284,
            "2:loss/value": 0.27918200194835663,
            "2:selfplay/games": 3,
            "2:selfplay/positions": 15,
            "2:sog/queries_kept": 518,
            "2:sog/queries_seen": 1366,
            "2:sog/query_buffer": 513,
            "2:sog/solves": 18,
            "2:sog/solves_this_step": 6,
            "2:sog/td_targets": 2,
            "2:train/learning_rate": 0.001,
            "2:train/updates": 2,
        },
    },
}


def _summary(array) -> list:
    """[size, sum, absolute sum, dot with a fixed random vector]: exact integers for an
    integer array, floats otherwise."""
    a = np.asarray(array).ravel()
    if a.dtype == bool:
        a = a.astype(np.int64)
    probe = np.random.default_rng(len(a)).uniform(-1.0, 1.0, len(a))
    if np.issubdtype(a.dtype, np.integer):
        return [int(a.size), int(a.sum()), int(np.abs(a).sum()), float(probe @ a)]
    a = a.astype(np.float64)
    return [int(a.size), float(a.sum()), float(np.abs(a).sum()), float(probe @ a)]


def _summaries(arrays) -> dict:
    return {name: _summary(array) for name, array in sorted(arrays)}


def _assert_summary(got: list, want: list, where: str) -> None:
    """Size (and an integer array's sums) exactly; the float sums to 1e-4 of the
    absolute sum, the scale a different summation order can move them by."""
    assert got[0] == want[0], f"{where}: size {got[0]} != {want[0]}"
    tol = 1e-4 * max(abs(want[2]), 1.0)
    for i in (1, 2, 3):
        if isinstance(want[i], int):
            assert got[i] == want[i], f"{where}[{i}]: {got[i]} != {want[i]}"
        else:
            assert abs(got[i] - want[i]) <= tol, f"{where}[{i}]: {got[i]} != {want[i]} (tolerance {tol:.2g})"


def fingerprint(game: str, run_dir, together: bool = False) -> dict:
    from polyzero.sog.trainer import SoGTrainer

    torch.set_num_threads(1)
    overrides = [f"train.steps={STEPS}", *SETTINGS, f"sog.solve_together={str(together).lower()}"]
    cfg = build_config(game, "sog", None, overrides)
    trainer = SoGTrainer.create(cfg, run_dir, progress=False)
    trainer.run()
    weights = trainer.learner.weights()
    metrics = {}
    for n, line in enumerate((run_dir / "metrics.jsonl").read_text().splitlines()):
        row = json.loads(line)
        for k, v in row.items():
            if k.startswith(METRIC_PREFIXES) or k in METRIC_KEYS:
                metrics[f"{n}:{k}"] = v
    return {
        "weights": _summaries((k, weights[k].numpy()) for k in weights),
        "replay": _summaries(trainer.replay.to_arrays().items()),
        "queries": _summaries(_query_arrays(trainer.queries.to_arrays())),
        "counts": dict(trainer.counts),
        "metrics": dict(sorted(metrics.items())),
    }


def _query_arrays(arrays: dict) -> list:
    """The query buffer's arrays with its JSON record decoded: the public states and
    histories as bytes (exact), the chance reach and ranges as floats (a float's JSON
    digits, and so the record's bytes, move with its last bit)."""
    records = json.loads(arrays["queries"].tobytes().decode())
    worlds = json.dumps([[r["key"], r["histories"]] for r in records]).encode()
    return [
        ("added", arrays["added"]),
        ("worlds", np.frombuffer(worlds, np.uint8)),
        ("chance", np.array([c for r in records for c in r["chance"]], float)),
        ("ranges", np.array([x for r in records for rng in r["ranges"] for x in rng], float)),
    ]


def _assert_close(got, want, where: str) -> None:
    """Array summaries as `_assert_summary`; other integers and strings exactly, other
    floats (the metrics) to a relative 1e-4 (absolute 1e-6 near 0)."""
    if where.count(".") == 1 and where.split(".")[1] in ("weights", "replay", "queries"):
        assert sorted(got) == sorted(want), f"{where}: arrays {sorted(got)} != {sorted(want)}"
        for k in want:
            _assert_summary(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, dict):
        assert sorted(got) == sorted(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            _assert_close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: {got} != {want}"
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-4, abs=1e-6), f"{where}: {got} != {want}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("together", [False, True], ids=["solves_alone", "solves_together"])
def test_learning_steps_compute_what_they_did(game, together, tmp_path):
    """Also with the step's solves advanced together (one network call per round for all
    their leaves, docs/journal/2026-11-30-sog-batched-leaves.md): the same step up to the
    network's summation order, which the tolerance allows; the solves alone are the
    reference the values were written by."""
    _assert_close(fingerprint(game, tmp_path / "run", together), EXPECTED[game], game)


if __name__ == "__main__":
    import tempfile
    from pathlib import Path

    for name in sys.argv[1:] or ["kuhn_poker", "leduc_poker"]:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"    {name!r}: {fingerprint(name, Path(tmp) / 'run')!r},")
