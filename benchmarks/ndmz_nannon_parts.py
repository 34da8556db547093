"""Exact scores of players built from parts of an NDMZ network on Nannon 6-3-6.

Which part of the learned model holds the NDMZ search agent where it is? Each player
below is tabulated at every position and roll and scored exactly against the optimal
player (`polyzero.games.nannon_policies.evaluate_policy`, both seats, the opening
included), so they compare in the units of the issue's target:

* ``raw``: the prior's top legal move, f(h(o)) (as `nannon_636.py eval`'s raw policy);
* ``one_ply_true``: the move maximising the expectimax of the value head over the true
  positions after it and the opponent's roll, -mean_d v(h(o(s', d))) (a won game: its
  points): h and f alone, the rules given;
* ``one_ply_model``: the same look-ahead through the learned model from h(o): g for the
  move, f's chance policy for the roll, g again and f's value
  (`polyzero.train.probe_exact.lookahead_values`, what the probe's ``roll_*`` rows
  measure);
* ``az_search``: chance-aware AlphaZero's search (the true rules and dice; the
  `alphazero_nannon` preset's evaluation search, most-visited move) with the NDMZ
  network's f(h(o)) as its policy and value network: NDMZ's h and f without its g,
  chance and identity predictions.

`python benchmarks/ndmz_nannon_parts.py CHECKPOINT` prints the scores;
`benchmarks/ndmz_probe_nannon.py` puts them beside the probe of each mark.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from polyzero.games.nannon_policies import evaluate_policy, tabulate_player  # noqa: E402
from polyzero.games.nannon_solver import observations  # noqa: E402
from polyzero.train.probe import LearnedModel, _load  # noqa: E402
from polyzero.train.probe_exact import exact_solution, lookahead_values  # noqa: E402


def _best(sol, q: np.ndarray) -> np.ndarray:
    """int8 [S, D]: the legal move of highest q [S, D, M] (forced moves, passes included)."""
    tb = sol.tables
    slot = np.where(tb.legal, q, -np.inf).argmax(2)
    return np.take_along_axis(tb.source, slot[..., None], axis=2)[..., 0].astype(np.int8)


def one_ply_tables(sol, net, layout) -> dict[str, np.ndarray]:
    """The `one_ply_true` and `one_ply_model` players' tables."""
    pos, tb, dice = sol.positions, sol.tables, sol.params.die_sides
    model = LearnedModel(net, True)
    rows = np.flatnonzero(pos.decision)
    value = np.zeros((pos.size + 1, dice))  # f(h(o)) per position and roll, the mover's; +1: padding
    hidden = {}
    for d in range(1, dice + 1):
        s, _, _, v = model.initial(observations(sol, rows, d))
        value[rows, d - 1], hidden[d] = v, s
    terminal, term_value = pos.terminal_values()
    after = np.where(np.append(terminal, False), np.append(term_value, 0.0), value.mean(1))  # the next mover's
    q_true = np.where(tb.legal, -after[tb.succ], -np.inf)
    q_model = np.full(tb.succ.shape, -np.inf)
    for d in range(1, dice + 1):
        r, m = np.nonzero(tb.legal[rows, d - 1] & (tb.num_legal[rows, d - 1] >= 2)[:, None])
        acts = tb.source[rows[r], d - 1, m].astype(np.int64)
        for lo in range(0, len(r), 4096):
            part = slice(lo, lo + 4096)
            _, deep = lookahead_values(model, layout, hidden[d][torch.from_numpy(r[part])], acts[part])
            q_model[rows[r[part]], d - 1, m[part]] = deep
    return {"one_ply_true": _best(sol, q_true), "one_ply_model": _best(sol, q_model)}


def az_search_table(sol, game, net) -> np.ndarray:
    """The `az_search` player's table."""
    from polyzero.algos import make_algorithm
    from polyzero.algos.player import SearchPlayer
    from polyzero.config import build_config
    from polyzero.nets.inference import Evaluator

    cfg = build_config("nannon", "alphazero", None, [])
    algo = make_algorithm(cfg, game)
    player = SearchPlayer(
        algo, Evaluator(net.eval(), "cpu"), cfg.search.params(cfg.eval.simulations), "az+ndmz", sample_moves=0
    )
    return tabulate_player(sol, game, player)


def part_scores(checkpoint, az: bool = True) -> dict:
    """{player: exact score against the optimal player} for one NDMZ checkpoint."""
    from polyzero.algos.ndmz import nannon_raw_policy

    cfg, game, algo, net, _ = _load(checkpoint)
    sol = exact_solution(game)
    if sol is None or algo.name != "ndmz":
        raise SystemExit(f"{checkpoint}: needs an ndmz run of nannon")
    tables = {"raw": nannon_raw_policy(sol, net), **one_ply_tables(sol, net, algo.layout)}
    out, seconds = {}, {}
    if az:
        t0 = time.time()
        tables["az_search"] = az_search_table(sol, game, net)
        seconds["az_search"] = time.time() - t0
    for name, table in tables.items():
        out[name] = evaluate_policy(sol, table, "optimal").score
    return {"exact_vs_optimal": out, "seconds": seconds}


if __name__ == "__main__":
    print(json.dumps(part_scores(sys.argv[1], az="--no-az" not in sys.argv), indent=1))
