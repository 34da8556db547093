"""Heuristic players for Scotland Yard on any map (player spec `sy-heuristic`).

Reference opponents for issue 59's head-to-head play (the Student of Games paper
plays SoG on Scotland Yard against IS-MCTS; a hand-written team is the classic
baseline of Scotland Yard AI). One player plays whichever side it is seated on:

- **Detectives** see only the public view: where Mr X may be
  (`scotland_yard_render.possible_mrx_stations`, the support of their belief), the
  detectives' stations and tickets. Each detective in turn picks the move that
  brings the team closest to those stations: first a move onto one of them (a
  capture attempt), then the smallest mean over them of the team's nearest
  distance (so a detective does not go where another one already covers: they
  spread), then his own nearest distance, then the cheapest ticket. Distances
  are shortest paths over the transports he still holds tickets for.
- **Mr X** sees everything. He moves to the station farthest from the nearest
  detective (each detective's distance over the transports that detective holds
  tickets for), then farthest in sum, then with the most exits; he plays a
  double-move card when every single move leaves a detective one move away, and a
  black ticket on the move after he surfaced (when his station offers more than
  one transport, so the ticket hides which) or where only black fits (the ferry).

Ties are broken by a seeded generator, so play is deterministic given the seed.
All-pairs distances per transport set are computed once per map (`distances`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyspiel

from polyzero.errors import UsageError

from .scotland_yard_maps import BLACK, FERRY, MRX
from .scotland_yard_render import possible_mrx_stations

UNREACHABLE = 10_000  # a distance longer than any path: the station cannot be reached
TICKET_COST = (0, 1, 2, 3)  # taxi, bus, underground, black: keep the scarce ones


@functools.lru_cache(maxsize=8)
def distances(num_stations: int, edges: tuple[tuple[int, int, int], ...]) -> np.ndarray:
    """dist[mask, a - 1, b - 1]: fewest moves from station a to b riding only the
    transports in `mask` (bit t for taxi 0, bus 1, underground 2; ferries are Mr X's
    black tickets only, so never a detective's). Breadth-first over all sources at
    once: one boolean matrix product per step."""
    n = num_stations
    dist = np.full((8, n, n), UNREACHABLE, dtype=np.int32)
    for mask in range(8):
        adjacency = np.zeros((n, n), dtype=np.float32)
        for a, b, transport in edges:
            if transport != FERRY and mask >> transport & 1:
                adjacency[a - 1, b - 1] = adjacency[b - 1, a - 1] = 1
        reached = np.eye(n, dtype=bool)
        dist[mask][reached] = 0
        frontier = reached.astype(np.float32)
        for step in range(1, n):
            new = ((frontier @ adjacency) > 0) & ~reached
            if not new.any():
                break
            dist[mask][new] = step
            reached |= new
            frontier = new.astype(np.float32)
    return dist


def ticket_mask(tickets: Sequence[int]) -> int:
    """The transports (bit mask) a detective holds taxi, bus and underground tickets for."""
    return sum(1 << t for t in range(3) if tickets[t] > 0)


def _map_distances(rules) -> np.ndarray:
    return distances(rules.num_stations, tuple(tuple(e) for e in rules.edges))


def detective_action(state, rng: np.random.Generator) -> int:
    """The detective to move's heuristic action, from the public view only."""
    r = state.rules
    n = r.num_stations
    legal = state.legal_actions()
    if legal == [r.pass_action]:
        return r.pass_action
    dist = _map_distances(r)
    where = np.array(sorted(possible_mrx_stations(state)), dtype=np.int64) - 1
    k = state.turn - 1
    others = [
        dist[ticket_mask(state.detective_tickets[j]), state.detectives[j] - 1, where]
        for j in range(r.num_detectives)
        if j != k
    ]
    covered = np.min(others, axis=0) if others else np.full(len(where), UNREACHABLE)
    best, best_key = legal[0], None
    for action in legal:
        ticket, dest = divmod(action, n)
        left = list(state.detective_tickets[k])
        left[ticket] -= 1
        own = dist[ticket_mask(left), dest, where]
        key = (
            0 if dest in where else 1,
            float(np.minimum(own, covered).mean()),
            int(own.min()),
            TICKET_COST[ticket],
            rng.random(),
        )
        if best_key is None or key < best_key:
            best, best_key = action, key
    return int(best)


def _detective_distances(state, dist: np.ndarray) -> np.ndarray:
    """[detective, station]: each detective's distance to every station."""
    return np.stack(
        [dist[ticket_mask(t), d - 1] for d, t in zip(state.detectives, state.detective_tickets, strict=True)]
    )


def mrx_action(state, rng: np.random.Generator) -> int:
    """Mr X's heuristic action: away from the detectives (he sees everything)."""
    r = state.rules
    n = r.num_stations
    legal = state.legal_actions()
    reach = _detective_distances(state, _map_distances(r))
    nearest = reach.min(axis=0)
    exits = np.bincount([a - 1 for a, _, _ in r.edges] + [b - 1 for _, b, _ in r.edges], minlength=n)
    best_dest, best_key = None, None
    for action in legal:
        if action == r.double_action:
            continue
        dest = action % n
        key = (int(nearest[dest]), float(np.minimum(reach[:, dest], n).sum()), int(exits[dest]), rng.random())
        if best_key is None or key > best_key:
            best_dest, best_key = dest, key
    assert best_key is not None  # a double move is never his only legal action
    if r.double_action in legal and best_key[0] <= 1:
        return r.double_action  # every single move leaves him one move from a detective
    tickets = sorted(divmod(a, n)[0] for a in legal if a != r.double_action and a % n == best_dest)
    return _mrx_ticket(state, tickets) * n + best_dest


def _mrx_ticket(state, tickets: list[int]) -> int:
    """Which ticket to ride to the chosen station: black right after he surfaced when
    his station offers several transports (so the ticket hides which he took), or
    when nothing else fits; otherwise the plentiful ordinary ticket."""
    ordinary = [t for t in tickets if t != BLACK]
    if not ordinary:
        return BLACK
    just_surfaced = bool(state.log) and state.log[-1][2]
    transports = {t for _, t in state.rules.neighbours[state.mrx]}
    if BLACK in tickets and just_surfaced and len(transports) > 1:
        return BLACK
    return max(ordinary, key=lambda t: (state.mrx_tickets[t], -t))


class ScotlandYardHeuristicPlayer:
    """`sy-heuristic`: the heuristic Mr X or detective team, whichever side is to move."""

    reads_hidden_state = False  # detectives act on the public view; Mr X sees all by the rules

    def __init__(self, game, seed: int = 0):
        if game.get_type().short_name != "scotland_yard":
            raise UsageError(f"player 'sy-heuristic' plays scotland_yard, not {game.get_type().short_name}")
        self.name = "sy-heuristic"
        _map_distances(game.rules)  # precomputed once per map, before the first move
        self.reset(seed)

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def action(self, state: pyspiel.State) -> int:
        return mrx_action(state, self._rng) if state.current_player() == MRX else detective_action(state, self._rng)

    def act(self, states: Sequence[pyspiel.State]) -> list[int]:
        return [self.action(s) for s in states]
