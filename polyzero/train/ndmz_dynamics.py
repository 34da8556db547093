"""NDMZ's dynamics tests (NDMZ paper, Section 4.3), as an evaluation.

Games of random moves are played (chance events by their probabilities). From
every position where a choice player is to move, the model is unrolled along
the steps the game actually took -- choice actions, chance outcomes, end --
for k = 0..K: s^0 = h(o_t), s^k = g(s^(k-1), a_{t+k-1}), p^k = f(s^k)'s choice
policy over the full action set. The legal choice actions at step t+k are the
game's legal actions at a choice step and {no-op} elsewhere (a chance or a
terminal step: the choice player is not to move).

* top-move test: a position fails if any illegal action has a higher
  probability than any legal one;
* uniform test: a position fails if any illegal action has more than uniform
  probability 1 / |A|.

Accuracies are reported per k (only steps inside the game count).
"""

from __future__ import annotations

import numpy as np
import torch

from ..games import ObservationEncoder
from ..nets.ndmz import ActionLayout, NDMZNet


def random_game_steps(game, games: int, seed: int = 0):
    """Steps of `games` random games: obs [T, ...] (choice steps), action [T], legal [T, |A|],
    is_choice [T], game id [T]."""
    layout = ActionLayout.of(game)
    encoder = ObservationEncoder(game)
    rng = np.random.default_rng(seed)
    obs, actions, legal, choice, gid = [], [], [], [], []
    blank = np.zeros(encoder.shape, np.float32)
    for g in range(games):
        state = game.new_initial_state()
        while state.is_chance_node():  # the opening roll comes before the first position
            outs, probs = zip(*state.chance_outcomes())
            state.apply_action(int(outs[rng.choice(len(outs), p=np.asarray(probs))]))
        while True:
            mask = np.zeros(layout.size, np.bool_)
            gid.append(g)
            if state.is_terminal():
                mask[layout.noop] = True
                obs.append(blank), actions.append(layout.end), legal.append(mask), choice.append(False)
                break
            if state.is_chance_node():
                outs, probs = zip(*state.chance_outcomes())
                o = int(outs[rng.choice(len(outs), p=np.asarray(probs))])
                mask[layout.noop] = True
                obs.append(blank), actions.append(layout.chance_action(o)), legal.append(mask)
                choice.append(False)
                state.apply_action(o)
                continue
            acts = state.legal_actions()
            mask[acts] = True
            a = int(acts[rng.integers(len(acts))])
            obs.append(encoder.encode([state])[0]), actions.append(a), legal.append(mask), choice.append(True)
            state.apply_action(a)
    return (np.asarray(obs, np.float32), np.asarray(actions, np.int64), np.asarray(legal),
            np.asarray(choice), np.asarray(gid))


@torch.inference_mode()
def dynamics_tests(net: NDMZNet, game, unroll_steps: int, games: int = 500, seed: int = 0,
                   batch: int = 4096) -> dict:
    """{"top_move": [K+1 accuracies], "uniform": [...], "positions": [K+1 counts]}."""
    obs, actions, legal, is_choice, gid = random_game_steps(game, games, seed)
    net = net.eval()
    starts = np.flatnonzero(is_choice)
    size = legal.shape[1]
    top = np.zeros(unroll_steps + 1)
    uni = np.zeros(unroll_steps + 1)
    count = np.zeros(unroll_steps + 1)
    for i in range(0, len(starts), batch):
        t0 = starts[i:i + batch]
        s = net.represent(torch.from_numpy(obs[t0]))
        for k in range(unroll_steps + 1):
            t = t0 + k
            inside = np.zeros(len(t0), np.bool_)
            ok = t < len(actions)
            inside[ok] = gid[t[ok]] == gid[t0[ok]]
            if k > 0:
                prev = np.minimum(t - 1, len(actions) - 1)
                _, s, _ = net.dynamics(s, torch.from_numpy(actions[prev]))
            if not inside.any():
                break
            p = torch.softmax(net.predict(s)[0], -1).numpy()
            m = legal[np.minimum(t, len(actions) - 1)]
            worst_legal = np.where(m, p, np.inf).min(1)
            best_illegal = np.where(m, -np.inf, p).max(1)
            top[k] += np.count_nonzero(inside & ~(best_illegal > worst_legal))
            uni[k] += np.count_nonzero(inside & ~(best_illegal > 1.0 / size))
            count[k] += np.count_nonzero(inside)
    return {"top_move": list(top / np.maximum(count, 1)), "uniform": list(uni / np.maximum(count, 1)),
            "positions": [int(c) for c in count]}
