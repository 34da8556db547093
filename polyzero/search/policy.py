"""Root exploration noise and the policies read off a finished search."""

from __future__ import annotations

import numpy as np


def masked_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Softmax over the legal actions of each row; illegal actions get exactly 0
    (a row with no legal action is all zeros)."""
    x = np.where(legal, logits.astype(np.float64), -np.inf)
    top = x.max(axis=-1, keepdims=True)
    e = np.where(legal, np.exp(x - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return (e / np.where(total > 0, total, 1.0)).astype(np.float32)


def mix_dirichlet(
    prior: np.ndarray, legal: np.ndarray, alpha: float, fraction: float, rng: np.random.Generator
) -> np.ndarray:
    """P(s_r, a) = (1 - eps) p_a + eps d_a with d ~ Dir(alpha) over the legal actions.

    (Go-Exploit paper, Section 2.1; AlphaZero's root exploration noise.)
    """
    if fraction == 0.0:
        return prior
    out = prior.astype(np.float64).copy()
    for b in range(prior.shape[0]):
        idx = np.flatnonzero(legal[b])
        d = rng.dirichlet(np.full(len(idx), alpha))
        out[b, idx] = (1.0 - fraction) * out[b, idx] + fraction * d
    return out.astype(np.float32)


def visit_policy(visits: np.ndarray, temperature: float) -> np.ndarray:
    """pi(a|s) = N(s, a)^(1/tau) / sum_b N(s, b)^(1/tau) (Go-Exploit Section 2).

    temperature 0 puts all mass on the most visited actions (split evenly on ties).
    """
    visits = np.asarray(visits, np.float64)
    if temperature == 0.0:
        top = visits == visits.max(axis=-1, keepdims=True)
        return (top / top.sum(axis=-1, keepdims=True)).astype(np.float32)
    # Scale by the max first so large counts with small tau do not overflow.
    scaled = visits / np.maximum(visits.max(axis=-1, keepdims=True), 1.0)
    powered = scaled ** (1.0 / temperature)
    return (powered / powered.sum(axis=-1, keepdims=True)).astype(np.float32)


def choose_actions(visits: np.ndarray, sample: np.ndarray, temperature: float, rng: np.random.Generator) -> np.ndarray:
    """Sample from the visit policy where `sample[b]` (the first k moves), else
    play the most visited action (ties broken uniformly at random)."""
    actions = np.empty(visits.shape[0], np.int64)
    for b in range(visits.shape[0]):
        if sample[b] and temperature > 0:
            p = visit_policy(visits[b : b + 1], temperature)[0].astype(np.float64)
            actions[b] = rng.choice(len(p), p=p / p.sum())
        else:
            best = np.flatnonzero(visits[b] == visits[b].max())
            actions[b] = best[0] if len(best) == 1 else rng.choice(best)
    return actions


def policy_targets(result, temperature: float) -> np.ndarray:
    """float32 [B, A]: what the network's policy learns from a search: the search's
    own target when it sets one (a Gumbel root's pi'), else the visit policy."""
    if result.policy_target is not None:
        return result.policy_target
    return visit_policy(result.root_visits, temperature)


def select_moves(result, sample: np.ndarray, temperature: float, rng: np.random.Generator) -> np.ndarray:
    """The moves to play after a search: sampled from the visits where `sample[b]`
    (the first k moves of a game); elsewhere the search's own choice when it makes
    one (a Gumbel root's A_{n+1}), else the most visited action."""
    actions = choose_actions(result.root_visits, sample, temperature, rng)
    if result.action is not None:
        actions = np.where(sample & (temperature > 0), actions, result.action)
    return actions
