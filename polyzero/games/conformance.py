"""Conformance check: random (or searched) playouts through our encoder and masks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyspiel

from polyzero.games.chance import sample_chance
from polyzero.games.encoders import ObservationEncoder, legal_action_mask
from polyzero.games.loader import game_spec_string

SearchFn = Callable[[list[pyspiel.State]], list[int]]


@dataclass(frozen=True)
class ConformanceReport:
    game: str
    games_played: int
    mean_length: float  # player decisions per game (chance outcomes not counted)
    max_length: int


def _check_decision(name: str, s: pyspiel.State, obs: np.ndarray, mask: np.ndarray, enc: ObservationEncoder) -> None:
    where = f"{name} after {s.history()}"
    assert obs.dtype == np.float32 and obs.shape == enc.shape, (
        f"{where}: observation {obs.dtype} {obs.shape}, expected float32 {enc.shape}"
    )
    assert np.isfinite(obs).all(), f"{where}: observation has non-finite values"
    # The fast observer path must agree with pyspiel's reference tensor.
    ref = np.asarray(s.observation_tensor(s.current_player()), np.float32)
    assert np.array_equal(obs.reshape(-1), ref), f"{where}: encoder disagrees with observation_tensor"
    legal = s.legal_actions()
    assert legal, f"{where}: no legal actions at a decision node"
    assert np.flatnonzero(mask).tolist() == sorted(legal), f"{where}: legal mask != legal_actions()"
    c = s.clone()
    assert c.history() == s.history() and str(c) == str(s), f"{where}: clone() does not round-trip"


def _advance_chance(s: pyspiel.State, rng: np.random.Generator) -> None:
    while s.is_chance_node():
        sample_chance(s, rng)


def check_game(
    game: pyspiel.Game, num_games: int = 3, seed: int = 0, search_fn: SearchFn | None = None
) -> ConformanceReport:
    """Play `num_games` games side by side to the end, checking every step.

    Hook: `search_fn(states) -> actions`, if given, is called at each step with the
    batch of live decision states; its actions must be legal and are played instead of
    random ones (polyzero's batched search plugs in here). Raises AssertionError.
    """
    name = game_spec_string(game)
    enc = ObservationEncoder(game, "raw")  # checked against pyspiel's own tensor
    rng = np.random.default_rng(seed)
    A = game.num_distinct_actions()
    zero_sum = game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    states = [game.new_initial_state() for _ in range(num_games)]
    lengths = [0] * num_games
    while True:
        for s in states:
            _advance_chance(s, rng)
        live = [i for i, s in enumerate(states) if not s.is_terminal()]
        if not live:
            break
        for i in live:
            s = states[i]
            if s.is_simultaneous_node():  # random joint action; search does not apply here
                s.apply_actions([int(rng.choice(s.legal_actions(p))) for p in range(game.num_players())])
                lengths[i] += 1
        live = [
            i
            for i in live
            if not states[i].is_terminal() and not states[i].is_simultaneous_node() and not states[i].is_chance_node()
        ]
        if not live:
            continue
        batch = [states[i] for i in live]
        obs = enc.encode(batch)
        masks = legal_action_mask(batch, A)
        for s, o, m in zip(batch, obs, masks):
            _check_decision(name, s, o, m, enc)
        if search_fn is not None:
            actions = list(search_fn(batch))
            assert len(actions) == len(batch), f"{name}: search_fn gave {len(actions)} actions for {len(batch)} states"
        else:
            actions = [int(rng.choice(np.flatnonzero(m))) for m in masks]
        for i, s, a, m in zip(live, batch, actions, masks):
            assert 0 <= a < A and m[a], f"{name} after {s.history()}: action {a} is illegal"
            s.apply_action(int(a))
            lengths[i] += 1
            assert lengths[i] <= game.max_game_length(), (
                f"{name}: game longer than max_game_length {game.max_game_length()}"
            )
    for s in states:
        r = np.asarray(s.returns(), np.float64)
        assert r.shape == (game.num_players(),) and np.isfinite(r).all(), f"{name}: bad returns {r}"
        if zero_sum and game.num_players() >= 2:
            assert abs(r.sum()) < 1e-6, f"{name}: zero-sum game returned {r.tolist()}"
        # Terminal states must encode too (value targets are sometimes computed there).
        assert enc.encode_one(s).shape == enc.shape
        assert not legal_action_mask([s], A).any(), f"{name}: terminal state has legal actions"
    return ConformanceReport(name, num_games, float(np.mean(lengths)), int(max(lengths)))
