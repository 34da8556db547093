"""What a GTP or UCI engine asks of a player: one position searched within a budget, and
what the search saw (visits, values, priors, principal variations).

This module is the engines' one seam to the search layer (`_TreeSearch.search`). A
learned agent's search runs on the clock itself (`SearchPlayer.search`: a deadline and a
stop check between network calls) with `leaf_batch` leaves of its one tree per network
call (virtual loss, as KataGo and lc0). Players without such a search (OpenSpiel's MCTS)
turn a clock into simulations with the speed measured on earlier searches
(`SpeedEstimate`). An open-ended analysis (`lz-analyze`, UCI's `go infinite`) is a
series of searches of growing size with a stop check between them and inside each.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..eval.players import MCTSPlayer, Player

__all__ = ["Candidate", "Analysis", "EngineAgent", "SpeedEstimate"]

PV_LENGTH = 16
MIN_ROUND = 8  # simulations of the first search of an analysis, and of a speed probe


@dataclass
class Candidate:
    """One root move: its visits, mean value and prior for the player to move, and the
    principal variation that starts with it (checked legal in the real game)."""

    action: int
    visits: int
    value: float  # in [-1, 1] for the player to move; NaN when unvisited
    prior: float
    pv: list[int] = field(default_factory=list)


@dataclass
class Analysis:
    action: int  # the move the agent plays
    candidates: list[Candidate]  # most visited first
    value: float | None  # the root's value for the player to move, when the agent has one
    nodes: int  # simulations run
    seconds: float

    @property
    def nps(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0

    def best_except(self, banned: int | None, legal: list[int]) -> int:
        """The most visited candidate other than `banned` (kgs-genmove_cleanup: not a pass),
        else any legal action but it; `banned` itself only when it is the only move."""
        if self.action != banned:
            return self.action
        for cand in self.candidates:
            if cand.action != banned and cand.visits > 0:
                return cand.action
        others = [c for c in sorted(self.candidates, key=lambda c: -c.prior) if c.action != banned]
        rest = [a for a in legal if a != banned]
        return others[0].action if others else (rest[0] if rest else banned)


class SpeedEstimate:
    """Simulations per second of this agent on this machine, a moving average over searches."""

    def __init__(self):
        self.nps: float | None = None

    def update(self, nodes: int, seconds: float) -> None:
        if nodes <= 0 or seconds <= 0:
            return
        rate = nodes / seconds
        self.nps = rate if self.nps is None else 0.7 * self.nps + 0.3 * rate

    def simulations_for(self, seconds: float) -> int:
        return max(1, int(self.nps * seconds)) if self.nps else MIN_ROUND


class EngineAgent:
    """A player behind an engine protocol. Learned agents (`SearchPlayer`) expose their
    tree, OpenSpiel's MCTS (`mcts:SIMS`) its root; any other player only picks a move."""

    def __init__(
        self, player: Player, simulations: int | None = None, max_simulations: int = 100_000, leaf_batch: int = 16
    ):
        self.player = player
        self.name = player.name
        self._impl = _implementation(player, leaf_batch)
        self.simulations = int(simulations or self._impl.default_simulations)
        self.max_simulations = max(1, int(max_simulations))
        self.speed = SpeedEstimate()
        self.searches = self._impl.searches

    def reset(self, seed: int) -> None:
        self.player.reset(seed)

    def analyse(self, state, simulations: int | None = None, seconds: float | None = None) -> Analysis:
        """Search `state` with `simulations` (default: the agent's), or as many as fit in
        `seconds` at the measured speed (a small probe search first measures it)."""
        t0 = time.perf_counter()
        probe = None
        if seconds is not None and self._impl.clocked:  # the search keeps the clock itself
            if self.speed.nps is None:  # a short probe sizes the tree: it is allocated for the cap
                self._search(state, 4 * MIN_ROUND)
            remaining = max(0.0, seconds - (time.perf_counter() - t0))
            cap = max(self.simulations, 3 * self.speed.simulations_for(remaining))
            out = self._search(state, min(self.max_simulations, int(simulations or cap)), seconds=remaining)
            out.seconds = time.perf_counter() - t0
            return out
        if seconds is not None:
            if self.speed.nps is None and self.searches:
                probe = self._search(state, MIN_ROUND)
            remaining = max(0.0, seconds - (time.perf_counter() - t0))
            simulations = self.speed.simulations_for(remaining)
        n = min(self.max_simulations, max(1, int(simulations or self.simulations)))
        out = self._search(state, n)
        if probe is not None and out.nodes < probe.nodes:
            out = probe
        out.seconds = time.perf_counter() - t0
        return out

    def analyse_until(
        self, state, stop: Callable[[], bool], report: Callable[[Analysis], None], limit: int | None = None
    ) -> Analysis:
        """Searches of doubling size until `stop()` or `limit` simulations (default: the
        largest that fits in about two seconds), each reported as it finishes."""
        n, best = MIN_ROUND, None
        cap = self.max_simulations if limit is None else min(limit, self.max_simulations)
        while best is None or (not stop() and n <= cap and self.searches):
            result = self._search(state, min(n, cap), stop=stop)
            if best is not None and result.nodes < best.nodes:  # stopped early: keep the larger search
                break
            best = result
            report(best)
            if best.nodes >= cap or self.speed.simulations_for(2.0) < 2 * n:
                break
            n *= 2
        return best

    def _search(self, state, n: int, seconds: float | None = None, stop=None) -> Analysis:
        t0 = time.perf_counter()
        out = (
            self._impl.search(state, n, seconds=seconds, stop=stop)
            if self._impl.clocked
            else self._impl.search(state, n)
        )
        out.seconds = time.perf_counter() - t0
        self.speed.update(out.nodes, out.seconds)
        return out


def _implementation(player, leaf_batch: int):
    from ..algos.player import SearchPlayer

    if isinstance(player, SearchPlayer):
        return _TreeSearch(player, leaf_batch)
    if isinstance(player, MCTSPlayer):
        return _OpenSpielMCTS(player)
    return _MoveOnly(player)


def legal_prefix(state, actions: list[int]) -> list[int]:
    """The longest prefix of `actions` that is legal in the real game from `state`
    (a learned model's tree may go where the rules do not)."""
    s, out = state.clone(), []
    for a in actions:
        if s.is_terminal() or s.is_chance_node() or a not in s.legal_actions():
            break
        s.apply_action(a)
        out.append(a)
    return out


class _TreeSearch:
    """polyzero's own search with the agent's network, no root noise, the agent's move rule,
    on the clock, `leaf_batch` leaves per network call where the search kind allows it
    (pUCT; Gumbel's Sequential Halving and NDMZ's search evaluate one leaf at a time)."""

    searches = True
    clocked = True

    def __init__(self, player, leaf_batch: int):
        self.player = player
        self.default_simulations = player.params.num_simulations
        batchable = player.params.kind == "puct" and player.algo.name != "ndmz"
        self.leaf_batch = leaf_batch if batchable else 1
        if self.leaf_batch != player.params.leaf_batch:
            player.params = dataclasses.replace(player.params, leaf_batch=self.leaf_batch)

    def search(self, state, n: int, seconds: float | None = None, stop=None) -> Analysis:
        from ..algos.player import principal_variation
        from ..search.policy import select_moves

        p = self.player
        result = p.search(state, seconds=seconds, stop=stop, simulations=n)
        n = int(result.root_visits[0].sum())
        action = int(select_moves(result, np.zeros(1, bool), 1.0, p.rng)[0])
        candidates = []
        for a in np.flatnonzero(result.root_visits[0] > 0):
            pv = [int(a)] + principal_variation(result.tree, 0, PV_LENGTH - 1, int(result.tree.children[0, 0, a]))
            candidates.append(
                Candidate(
                    int(a),
                    int(result.root_visits[0, a]),
                    float(result.root_q[0, a]),
                    float(result.root_prior[0, a]),
                    legal_prefix(state, pv),
                )
            )
        candidates.sort(key=lambda c: (-c.visits, -c.prior))
        return Analysis(action, candidates, float(result.root_value[0]), n, 0.0)


class _OpenSpielMCTS:
    """OpenSpiel's MCTS (random rollouts, UCT): a bot of `n` simulations per search."""

    searches = True
    clocked = False

    def __init__(self, player: MCTSPlayer):
        self.player = player
        self.default_simulations = player.simulations
        self._seed = 0

    def search(self, state, n: int) -> Analysis:
        import pyspiel

        p = self.player
        if not type(p.game).__module__.startswith("pyspiel"):  # Python games: the player's own bot
            return _MoveOnly(p).search(state, n)
        self._seed += 1
        bot = pyspiel.MCTSBot(
            p.game, pyspiel.RandomRolloutEvaluator(p.rollouts, self._seed), p.uct_c, n, 1000, p.solve, self._seed, False
        )
        root = bot.mcts_search(state)
        candidates = []
        for child in root.children:
            if child.explore_count == 0:
                candidates.append(Candidate(child.action, 0, math.nan, child.prior, [child.action]))
                continue
            pv, node = [child.action], child
            while node.children and len(pv) < PV_LENGTH:
                node = node.best_child()
                pv.append(node.action)
            candidates.append(
                Candidate(
                    child.action,
                    child.explore_count,
                    child.total_reward / child.explore_count,
                    child.prior,
                    legal_prefix(state, pv),
                )
            )
        candidates.sort(key=lambda c: (-c.visits, -c.prior))
        best = root.best_child()
        if best is None:  # one simulation expands the root and visits no child
            return Analysis(candidates[0].action, candidates, None, n, 0.0)
        return Analysis(int(best.action), candidates, best.total_reward / max(1, best.explore_count), n, 0.0)


class _MoveOnly:
    """A player that only picks moves (random, the Student of Games players, ...)."""

    searches = False
    clocked = False
    default_simulations = 1

    def __init__(self, player):
        self.player = player

    def search(self, state, n: int) -> Analysis:
        action = int(self.player.act([state])[0])
        return Analysis(action, [Candidate(action, 1, math.nan, math.nan, [action])], None, 1, 0.0)


def engine_agent(
    spec: str, game, seed: int = 0, simulations: int | None = None, max_simulations: int = 100_000, leaf_batch: int = 16
) -> tuple[EngineAgent, bool]:
    """The agent a player spec names, for `game`, and whether it is tied to that game's
    board (a learned network is; random play and OpenSpiel's MCTS play any size)."""
    from ..algos.player import SearchPlayer
    from ..eval.players import make_player

    player = make_player(spec, game, seed=seed)
    return EngineAgent(player, simulations, max_simulations, leaf_batch), isinstance(player, SearchPlayer)
