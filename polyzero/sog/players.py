"""Reference players for imperfect-information games (Student of Games part 1):
OpenSpiel's CFR+ average policy (`cfr:ITERS`), IS-MCTS (`ismcts:SIMS`) and the
GT-CFR continual re-solving search (`sog:S,C`, `polyzero.sog.resolve`).
`polyzero.eval.players.reference_player` dispatches to `sog_reference_player`.

Each has `policy(state) -> {action: probability}` (what `polyzero exploitability`
tabulates) and the batched `act(states)` of the Player protocol.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyspiel

from polyzero.errors import UsageError


def sample_action(rng: np.random.Generator, probs: dict[int, float]) -> int:
    """An action drawn from {action: probability}."""
    actions = list(probs)
    p = np.array([probs[a] for a in actions], dtype=float)
    return int(actions[rng.choice(len(actions), p=p / p.sum())])


class CFRPlayer:
    """OpenSpiel's `CFRPlusSolver` run for ITERS iterations; plays its average policy.
    The policy does not depend on the seed (`deterministic_policy`: solved once)."""

    reads_hidden_state = False  # a policy over information states
    deterministic_policy = True

    def __init__(self, game: pyspiel.Game, iterations: int, seed: int = 0):
        from open_spiel.python.algorithms import cfr

        self.name = f"cfr:{iterations}"
        solver = cfr.CFRPlusSolver(game)
        for _ in range(iterations):
            solver.evaluate_and_update_policy()
        self._policy = solver.average_policy()
        self.reset(seed)

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def policy(self, state: pyspiel.State) -> dict[int, float]:
        return {a: p for a, p in self._policy.action_probabilities(state).items() if p > 0}

    def act(self, states: Sequence[pyspiel.State]) -> list[int]:
        return [sample_action(self._rng, self.policy(s)) for s in states]


class ISMCTSPlayer:
    """Information-set MCTS with random rollouts (`pyspiel.ISMCTSBot` for games
    written in C++; OpenSpiel's Python `ISMCTSBot` for games written in Python,
    whose C++ bot crashes on them in this build, with worlds resampled from the
    public state's worlds in the information state, weighted by chance reach).
    `policy(state)` is the final policy of one search (normalised visit counts)."""

    reads_hidden_state = False  # worlds resampled from the information state

    def __init__(self, game: pyspiel.Game, simulations: int, uct_c: float = 2.0, seed: int = 0):
        self.game = game
        self.simulations = simulations
        self.uct_c = uct_c
        self.name = f"ismcts:{simulations}"
        self._native = type(game).__module__.startswith("pyspiel")
        self.reset(seed)

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._root_key: tuple | None = None  # the search root whose worlds `_root_worlds` holds
        self._root_worlds: tuple[list, np.ndarray] = ([], np.zeros(0))
        if self._native:
            evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
            self._bot = pyspiel.ISMCTSBot(
                seed,
                evaluator,
                self.uct_c,
                self.simulations,
                -1,
                pyspiel.ISMCTSFinalPolicyType.NORMALIZED_VISIT_COUNT,
                False,
                False,
            )
        else:
            from open_spiel.python.algorithms import ismcts, mcts

            rs = np.random.RandomState(seed)
            self._bot = ismcts.ISMCTSBot(
                self.game,
                mcts.RandomRolloutEvaluator(1, rs),
                self.uct_c,
                self.simulations,
                random_state=rs,
                final_policy_type=ismcts.ISMCTSFinalPolicyType.NORMALIZED_VISITED_COUNT,
            )
            self._bot.set_resampler(self._resample)

    def _resample(self, state: pyspiel.State, player: int) -> pyspiel.State:
        """A world of `player`'s information state at `state`, drawn by chance reach.
        The bot asks once per simulation, always at the search's root: its worlds and
        weights are kept for that root, since rebuilding the public state took 98% of
        a 100-simulation search on the glasses map (the draws are unchanged)."""
        key = (tuple(state.history()), player)
        if self._root_key != key:
            self._root_key, self._root_worlds = key, self._worlds_of_info_state(state, player)
        states, probs = self._root_worlds
        return states[self._rng.choice(len(states), p=probs)].clone()

    def _worlds_of_info_state(self, state: pyspiel.State, player: int) -> tuple[list, np.ndarray]:
        """The worlds of `player`'s information state at `state` and their chance-reach
        probabilities (from the public state's worlds)."""
        from polyzero.games.public_states import public_state_at

        from .resolve import info_state_string

        node = public_state_at(self.game, state)
        index = node.info_states[player].index(info_state_string(state, player))
        worlds = node.worlds_of(player, index)
        weights = np.array([node.worlds[w].chance_reach for w in worlds])
        return [node.worlds[w].state for w in worlds], weights / weights.sum()

    def policy(self, state: pyspiel.State) -> dict[int, float]:
        if self._native:
            policy, _ = self._bot.step_with_policy(state)
        else:
            policy = self._bot.get_policy(state)
        return {int(a): float(p) for a, p in policy if p > 0}

    def act(self, states: Sequence[pyspiel.State]) -> list[int]:
        return [sample_action(self._rng, self.policy(s)) for s in states]


def sog_reference_player(spec: str, game, seed: int = 0):
    """`cfr:ITERS`, `ismcts:SIMS` or `sog:S,C[,...][,net=RUN]`; None for other specs."""
    kind, sep, arg = spec.partition(":")
    if kind in ("cfr", "ismcts"):
        from polyzero.validation import spec_count

        count = spec_count(spec, arg, "iterations" if kind == "cfr" else "simulations")
        if game.num_players() != 2:
            raise UsageError(f"player '{spec}' needs a two-player game")
        if not game.get_type().provides_information_state_string:  # what both key their tables by
            raise UsageError(f"player '{spec}' needs information states, which {game} does not provide")
        return CFRPlayer(game, count, seed) if kind == "cfr" else ISMCTSPlayer(game, count, seed=seed)
    if kind == "sog":
        from .resolve import SoGPlayer, parse_sog_spec

        head, _, network = spec.partition(",net=")
        settings = parse_sog_spec(head)
        value_fn = None
        if network:  # a trained CVPN (polyzero train GAME --algo sog) at the leaves
            from polyzero.games import game_spec_string, load_game

            from .trainer import load_cvpn

            value_fn, run_cfg = load_cvpn(network)
            if game_spec_string(load_game(run_cfg.game)) != game_spec_string(game):
                raise UsageError(f"player '{spec}': the network was trained on {run_cfg.game}, not {game}")
        else:
            _require_solvable(game, spec)
        return SoGPlayer(game, settings, value_fn, seed=seed, name=spec)
    return None


EXACT_LEAF_WORLDS = 100_000  # glasses: 27k; Leduc: 9.5k; connect_four, tic_tac_toe: far more


@functools.lru_cache(maxsize=8)
def _solvable(game_string: str) -> bool:
    from polyzero.games import load_game
    from polyzero.games.public_states import PublicTree, PublicTreeTooLarge
    from polyzero.games.sanity import count_histories

    if count_histories(load_game(game_string), EXACT_LEAF_WORLDS) is None:  # fast: no public tree built
        return False
    try:
        PublicTree(load_game(game_string), max_worlds=EXACT_LEAF_WORLDS)
    except PublicTreeTooLarge:
        return False
    return True


def _require_solvable(game, spec: str) -> None:
    """Without a network SoG values its leaves by solving the rest of the game (`ExactValueFunction`):
    refuse up front where that would not finish."""
    from polyzero.games import game_spec_string

    if not _solvable(game_spec_string(game)):
        raise UsageError(
            f"player '{spec}': without ',net=RUN' SoG solves the rest of {game} exactly at every "
            f"leaf, and it has more than {EXACT_LEAF_WORLDS:,} histories; give a network trained "
            "by 'polyzero train GAME --algo sog' as 'sog:S,C,net=RUN'"
        )
