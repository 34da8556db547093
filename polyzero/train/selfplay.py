"""Self-play actor: many games at once through one batched search per move.

Every tick makes one move in each live game: one search over all of them
(B = number of live games), the visit policy pi_t with temperature tau as the
target, an action sampled from pi_t for the first k moves of a game and the
most visited one afterwards (Go-Exploit paper, Section 2.1). A finished game
becomes a Trajectory and a new game takes its slot. Chance events (dice) are
sampled from their known probabilities between moves: positions are recorded
at decisions only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..algos.base import Trajectory
from ..games import legal_action_mask
from ..games.chance import sample_chance
from ..search.policy import policy_targets, select_moves


@dataclass
class _Slot:
    state: object
    trajectory: Trajectory = field(default_factory=Trajectory)
    moves: int = 0
    start_len: int = 0  # length of the start state's history (replayed as is on resume)


def new_stats() -> dict:
    """Self-play counters; `return_sum` adds up player 0's returns over finished games
    (a one-player game's mean self-play return is its change over the change in games)."""
    return {"games": 0, "positions": 0, "searches": 0, "simulations": 0, "return_sum": 0.0}


class SelfPlayActor:
    def __init__(self, algo, game, cfg, evaluate, seed: int):
        self.algo = algo
        self.game = game
        self.cfg = cfg
        self.evaluate = evaluate
        self.params = cfg.search.params()
        self.temperature = cfg.selfplay.temperature  # acting temperature; a schedule may change it
        self.rng = np.random.default_rng(seed)
        self.max_moves = cfg.selfplay.max_moves or game.max_game_length()
        # Long episodes leave in chunks (MuZero Appendix D): `chunk_length` positions plus
        # the look-ahead their targets need; 0 sends every game whole when it ends.
        self.chunk_length = getattr(algo, "chunk_length", 0)
        self.chunk_overlap = getattr(algo, "chunk_overlap", 0)
        self.slots = [self._new_slot() for _ in range(cfg.selfplay.concurrent_games)]
        self.stats = new_stats()

    def start_state(self):
        """Where a new self-play game starts (Go-Exploit overrides this)."""
        return self.game.new_initial_state()

    def _new_slot(self) -> _Slot:
        state = self.start_state()
        start_len = len(state.history())
        self._sample_chance(state)
        return _Slot(state, start_len=start_len)

    def _sample_chance(self, state) -> list:
        """Play chance events by their known probabilities until a player is to move;
        returns them as (outcome, ((outcome, probability), ...)) in order."""
        events = []
        while state.is_chance_node():
            dist = tuple(state.chance_outcomes())
            events.append((sample_chance(state, self.rng), dist))
        return events

    def search_moves(self, states: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One batched search over the live games: the policy targets [B, A], the moves
        to play [B] and the root values [B] (KataGo's playout cap and forced playouts,
        polyzero.goexploit, override this)."""
        sp = self.cfg.selfplay
        result = self.algo.search(self.evaluate, states, self.params, self.rng, add_noise=True)
        policies = policy_targets(result, sp.temperature)
        sample = np.array([s.moves < sp.sample_moves for s in self.slots])
        actions = select_moves(result, sample, self.temperature, self.rng)
        self.stats["searches"] += len(states)
        self.stats["simulations"] += len(states) * self.params.num_simulations
        return policies, actions, result.root_value

    def finish_game(self, index: int, slot: _Slot) -> Trajectory:
        """The trajectory a finished game in slot `index` hands on (Go-Exploit records
        its visited states here)."""
        return slot.trajectory

    def tick(self) -> list[Trajectory]:
        """One move in every live game; returns the games that finished (and the chunks
        of long games that are ready)."""
        states = [s.state for s in self.slots]
        policies, actions, root_values = self.search_moves(states)
        observations = self.algo.encode(states)
        legal = legal_action_mask(states, self.algo.num_actions)
        finished = []
        for i, slot in enumerate(self.slots):
            traj, state = slot.trajectory, slot.state
            player = state.current_player()
            traj.observations.append(observations[i])
            traj.policies.append(policies[i])
            traj.players.append(player)
            traj.actions.append(int(actions[i]))
            traj.legal.append(legal[i])
            traj.root_values.append(float(root_values[i]))
            traj.returns_before.append(float(state.returns()[player]))
            state.apply_action(int(actions[i]))
            traj.chance.append(self._sample_chance(state))
            slot.moves += 1
            ended = state.is_terminal()
            if ended or slot.moves >= self.max_moves:
                traj.returns = np.asarray(state.returns(), np.float32)
                traj.ended = ended
                if ended and getattr(self.algo, "records_final_observation", False):
                    traj.final_observation = self.algo.encode_final(state, player)
                traj = self.finish_game(i, slot)
                finished.append(traj)
                self.stats["games"] += 1
                self.stats["positions"] += len(traj.actions)
                self.stats["return_sum"] += float(traj.returns[0])
                self.slots[i] = self._new_slot()
            elif self.chunk_length and len(traj.actions) >= self.chunk_length + self.chunk_overlap:
                finished.append(traj.split_chunk(self.chunk_length, self.chunk_overlap))
                self.stats["positions"] += self.chunk_length
        return finished

    # ------------------------------------------------------------ checkpointing
    def state_dict(self) -> tuple[dict, dict[str, np.ndarray]]:
        """Games in flight as action histories plus their recorded search targets,
        so that a resumed run continues them exactly."""
        meta = {"rng": self.rng.bit_generator.state, "stats": dict(self.stats), "slots": []}
        arrays = {}
        if not _replayable(self.game):  # an environment's episode cannot be rebuilt from its actions
            return meta, arrays
        for i, slot in enumerate(self.slots):
            meta["slots"].append(
                {"history": [int(a) for a in slot.state.history()], "start_len": slot.start_len, "moves": slot.moves}
            )
            t = slot.trajectory
            arrays[f"slot{i}_policies"] = np.asarray(t.policies, np.float32).reshape(
                len(t.policies), self.algo.num_actions
            )
            arrays[f"slot{i}_root_values"] = np.asarray(t.root_values, np.float64)
        return meta, arrays

    def load_state_dict(self, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        """Restore the games in flight; a checkpoint without them (written by the
        Ray driver, whose workers keep theirs) leaves freshly started games."""
        self.rng.bit_generator.state = meta["rng"]
        self.stats = {**new_stats(), **meta["stats"]}  # checkpoints from before return_sum
        if not meta["slots"]:
            return
        slots = []
        for i, info in enumerate(meta["slots"]):
            state = self.game.new_initial_state()
            history = info["history"]
            for a in history[: info["start_len"]]:
                state.apply_action(a)
            slot = _Slot(state, start_len=info["start_len"])
            policies = arrays[f"slot{i}_policies"]
            root_values = arrays[f"slot{i}_root_values"]
            t = -1
            for a in history[info["start_len"] :]:
                if state.is_chance_node():
                    if t >= 0:
                        slot.trajectory.chance[t].append((a, tuple(state.chance_outcomes())))
                    state.apply_action(a)
                    continue
                t += 1
                player = state.current_player()
                slot.trajectory.observations.append(self.algo.encode([state])[0])
                slot.trajectory.policies.append(policies[t])
                slot.trajectory.players.append(player)
                slot.trajectory.actions.append(a)
                slot.trajectory.legal.append(legal_action_mask([state], self.algo.num_actions)[0])
                slot.trajectory.root_values.append(float(root_values[t]))
                slot.trajectory.returns_before.append(float(state.returns()[player]))
                slot.trajectory.chance.append([])
                state.apply_action(a)
            slot.moves = info["moves"]
            slots.append(slot)
        self.slots = slots


def _replayable(game) -> bool:
    """Whether a state is rebuilt exactly by replaying its actions from the initial state."""
    import pyspiel

    return game.get_type().chance_mode != pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC
