"""How strong is SoG's search on Connect Four when its network is good? (`sog_connect_four`)

SoG(S, 1) with a trained AlphaZero network at its leaves (its value for the player
to move as both players' values, its policy as the prior) against MCTS-Solver 1x
(S simulations), beside AlphaZero's own search at S simulations with the same
network: what the SoG agent could reach with a network as good as AlphaZero's, and
how much of the gap is the move choice (the re-solved policy sampled, as sound
self-play acts, or its most probable move, `final=argmax`).

    python benchmarks/sog_search_quality.py --games 40 --jobs 2

Each cell is played in chunks of --chunk-games games (seats alternated), cached
under WORK/chunks/ so that a stopped run resumes; results in
benchmarks/results/sog_search_quality.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from polyzero.sog.values import Evaluation, ValueFunction

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, git_commit, machine_line, results_name, run_jobs, write_json_atomic  # noqa: E402

MARK = ROOT / "benchmarks" / "results" / "connect_four_alphazero_3h" / "polyzero_marks" / "wc002400"


class AlphaZeroLeaves(ValueFunction):
    """A perfect-information game's AlphaZero network as GT-CFR's value function:
    the value for the player to move (and its negation for the other), scaled by the
    query's counterfactual reach, and the policy over the legal moves as the prior."""

    def __init__(self, checkpoint: Path):
        from polyzero.algos import make_algorithm
        from polyzero.config import build_config, read_toml
        from polyzero.games import load_game
        from polyzero.sog.cvpn import BeliefEncoding
        from polyzero.train.checkpoint import read_learner

        cfg = build_config(base=read_toml(checkpoint / "config.toml"))
        self.game = load_game(cfg.game)
        self.algo = make_algorithm(cfg, self.game)
        net = self.algo.build_network()
        net.load_state_dict(read_learner(checkpoint)["net"])
        self.evaluate_net = self.algo.make_evaluator(net, "cpu")
        self.encoding = BeliefEncoding(self.game)

    def evaluate(self, queries):
        states = [q.public_state.worlds[0].state for q in queries]
        logits, values = self.evaluate_net(self.algo.encode(states))
        out = []
        for q, state, lg, v in zip(queries, states, logits, np.asarray(values).reshape(-1)):
            mover = state.current_player()
            per_player = [v if p == mover else -v for p in range(2)]
            cfv = [np.array([per_player[p]]) * self.encoding.reach_mass(q.public_state, q.ranges, p) for p in range(2)]
            legal = state.legal_actions()
            prior = np.zeros((1, self.game.num_distinct_actions()))
            e = np.exp(lg[legal] - lg[legal].max())
            prior[0, legal] = e / e.sum()
            out.append(Evaluation(cfv, prior))
        return out


class MixedLeaves(ValueFunction):
    """Counterfactual values from one value function, the prior from another: which of
    the two heads holds a network back as SoG's leaf function."""

    def __init__(self, values: ValueFunction, prior: ValueFunction):
        self.values, self.prior = values, prior

    def evaluate(self, queries):
        return [
            Evaluation(v.values, p.policy) for v, p in zip(self.values.evaluate(queries), self.prior.evaluate(queries))
        ]


def leaf_function(agent: str, az: AlphaZeroLeaves, cvpn: str | None):
    """The leaves an agent name asks for and its move choice: AlphaZero's network
    (`argmax`, `sample`), or, with --cvpn, `argmax-cvpn` (SoG's own network),
    `argmax-azvalue` (AlphaZero's values, the CVPN's prior) and `argmax-azprior` (the
    CVPN's values, AlphaZero's prior)."""
    final, _, mix = agent.partition("-")
    if not mix:
        return az, final
    from polyzero.sog.trainer import load_cvpn

    net, _ = load_cvpn(cvpn)
    leaves = {"cvpn": net, "azvalue": MixedLeaves(az, net), "azprior": MixedLeaves(net, az)}[mix]
    return leaves, final


def _chunk(agent: str, sims: int, checkpoint: str, games: int, seed: int, cvpn: str | None = None) -> dict:
    import torch

    from polyzero.eval import make_player, play_match
    from polyzero.sog.gtcfr import SoGSettings
    from polyzero.sog.resolve import SoGPlayer
    from polyzero.train.agents import load_search_player

    torch.set_num_threads(1)
    if agent == "alphazero":  # the network's own search, loaded as `arena` loads a run
        player = load_search_player(f"{checkpoint}@{sims}", seed=seed)
        game = player.algo.game
    else:
        az = AlphaZeroLeaves(Path(checkpoint))
        game = az.game
        leaves, final = leaf_function(agent, az, cvpn)
        settings = SoGSettings(simulations=sims, expansions_per_update=1.0, final=final)
        player = SoGPlayer(game, settings, leaves, seed=seed, name=f"sog:{sims},1,final={agent}")
    res = play_match(game, player, make_player(f"mcts-solver:{sims}", game, seed=seed + 1), games, seed=seed)
    return {"wins": res.wins, "draws": res.draws, "losses": res.losses, "machine": machine_line()}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench" / "sog_search_quality")
    p.add_argument("--checkpoint", type=Path, default=MARK, help="an AlphaZero Connect Four checkpoint")
    p.add_argument("--sims", type=int, default=100)
    p.add_argument("--games", type=int, default=40)
    p.add_argument("--chunk-games", type=int, default=10)
    p.add_argument(
        "--agents",
        default="argmax,sample,alphazero",
        help="argmax, sample, alphazero; with --cvpn also argmax-cvpn, argmax-azvalue, argmax-azprior",
    )
    p.add_argument("--cvpn", help="a SoG Connect Four run or checkpoint, for the mixed agents")
    p.add_argument(
        "--out", type=results_name, default="sog_search_quality", help="result name under benchmarks/results/"
    )
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    return p


def main() -> None:
    p = _parser()
    args = p.parse_args()
    from polyzero.eval.stats import MatchResult

    agents = args.agents.split(",")
    if args.cvpn is None and any("-" in a for a in agents):
        p.error("the mixed agents (argmax-cvpn, argmax-azvalue, argmax-azprior) need --cvpn RUN")
    sizes = [min(args.chunk_games, args.games - s) for s in range(0, args.games, args.chunk_games)]

    def path(agent: str, j: int) -> Path:
        return args.work / "chunks" / f"{agent}.s{args.sims}.chunk{j}.json"

    def save(key, rec) -> None:
        write_json_atomic(path(*key), rec)
        print(f"{key[0]} chunk {key[1]}: W{rec['wins']} D{rec['draws']} L{rec['losses']}", flush=True)

    todo = [
        ((a, j), _chunk, (a, args.sims, str(args.checkpoint), n, args.seed * 10_000 + 2 * j, args.cvpn))
        for j, n in enumerate(sizes)
        for a in agents
        if not path(a, j).exists()
    ]
    run_jobs(todo, args.jobs, save)
    rows = []
    for a in agents:
        recs = [json.loads(path(a, j).read_text()) for j in range(len(sizes))]
        res = MatchResult(*(sum(r[k] for r in recs) for k in ("wins", "draws", "losses")))
        rows.append(
            {
                "agent": a,
                "score": res.score,
                "ci": [res.ci_low, res.ci_high],
                "wins": res.wins,
                "draws": res.draws,
                "losses": res.losses,
            }
        )
    git = git_commit()
    command = "python benchmarks/sog_search_quality.py " + " ".join(sys.argv[1:])
    checkpoint = str(args.checkpoint.resolve()).replace(f"{ROOT}/", "")
    out = {
        "command": command,
        "git": git,
        "machine": machine_line(),
        "checkpoint": checkpoint,
        "cvpn": args.cvpn,
        "sims": args.sims,
        "seed": args.seed,
        "rows": rows,
    }
    lines = markdown(args, out)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(out, indent=2))
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def markdown(args, out: dict) -> list[str]:
    """The results page: each agent's score against MCTS-Solver."""
    names = {
        "argmax": f"SoG({args.sims}, 1), most probable move",
        "sample": f"SoG({args.sims}, 1), sampled move",
        "alphazero": f"AlphaZero's search, {args.sims} simulations",
        "argmax-cvpn": f"SoG({args.sims}, 1), most probable move, the CVPN's values and prior",
        "argmax-azvalue": f"SoG({args.sims}, 1), most probable move, AlphaZero's values, the CVPN's prior",
        "argmax-azprior": f"SoG({args.sims}, 1), most probable move, the CVPN's values, AlphaZero's prior",
    }
    lines = [
        "# SoG's search with an AlphaZero network at its leaves (Connect Four)",
        "",
        f"Machine: {out['machine']}. Command: `{out['command']}` (commit {out['git'][:10]}). Seed {args.seed}.",
        f"Network: `{out['checkpoint']}`. Opponent: MCTS-Solver 1x ({args.sims} simulations); seats alternated.",
        "",
        "| agent | score [95% CI] | W / D / L |",
        "|---|---|---|",
    ]
    lines += [
        f"| {names.get(r['agent'], r['agent'])} | {r['score']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] | "
        f"{r['wins']} / {r['draws']} / {r['losses']} |"
        for r in out["rows"]
    ]
    if args.cvpn:
        lines.insert(4, f"CVPN: `{args.cvpn}`.")
    return lines


if __name__ == "__main__":
    main()
