"""Scotland Yard's maps and each map's rules (`scotland_yard(map=...)`).

- ``glasses``: the small map of the Student of Games paper's supplementary Fig. S3
  (docs/scotland_yard.md): 11 stations, 12 taxi edges.
- ``london``: the board of the commercial game, 199 stations and 468 connections
  (taxi, bus, underground, the river ferry), shipped as package data
  (``polyzero/games/data/scotland_yard_london``), played by the box's rules
  (`MAP_RULES["london"]`; edition and sources in docs/scotland_yard.md).
- an edge list ``"1-2:taxi;2-3:bus;3-4:underground;4-1:ferry"`` (transport
  defaults to taxi; stations 1..max), played with the glasses map's rules unless
  parameters say otherwise.
"""

from __future__ import annotations

import functools
from importlib import resources

TRANSPORTS = ("taxi", "bus", "underground", "ferry")
TICKETS = ("taxi", "bus", "underground", "black")  # a move's ticket; black rides any edge
BLACK = 3
FERRY = 3
MRX, DETECTIVES = 0, 1

# Supplementary Fig. S3 of the Student of Games paper:
# two 4-cycles joined by the bridge 5-6-7, with pendant stations 1 and 11.
GLASSES_EDGES = "1-2;2-3;2-4;3-5;4-5;5-6;6-7;7-8;7-9;8-10;9-10;10-11"

# The 18 start cards of the box (the station printed on each); every player draws
# one, Mr X in secret (docs/scotland_yard.md gives the source).
LONDON_START_CARDS = (13, 26, 29, 34, 50, 53, 91, 94, 103, 112, 117, 132, 138, 141, 155, 174, 197, 198)

# Each map's rules: the values a parameter left at its "map's" default takes.
# `mrx_start` 0 and `detective_starts` "deal" deal the starts from `start_cards`.
MAP_RULES = {
    "glasses": {
        # The paper's map (Mr X at 6, detectives at the pendant stations 1 and 11, a taxi
        # ticket per round each). The rounds and the reveal are the variant chosen by
        # solving the candidates exactly (docs/scotland_yard.md, benchmark
        # sog_glasses_variants): 4 rounds, Mr X surfacing after his last move, as on
        # the London board; Mr X's value -0.601. The original 5 rounds with a reveal after
        # round 3 (`rounds=5,reveal_rounds=3,mrx_taxi=5,detective_taxi=5`, the original
        # default) are a forced win for the detectives.
        "num_detectives": 2,
        "mrx_start": 6,
        "detective_starts": "1;11",
        "start_cards": "none",
        "rounds": 4,
        "reveal_rounds": "4",
        "mrx_taxi": 4,
        "mrx_bus": 0,
        "mrx_underground": 0,
        "black_tickets": 0,
        "double_moves": 0,
        "detective_taxi": 4,
        "detective_bus": 0,
        "detective_underground": 0,
        "box_rules": 0,
        "mrx_recall": "path",
    },
    "london": {
        # The box: 5 detectives with 10 taxi, 8 bus, 4 underground tickets; Mr X with
        # 4 taxi, 3 bus, 3 underground, a black ticket per detective and 2 double-move
        # cards; 24 moves, surfacing after moves 3, 8, 13, 18, 24; starts dealt from
        # the 18 start cards; Mr X receives the detectives' used tickets.
        "num_detectives": 5,
        "mrx_start": 0,
        "detective_starts": "deal",
        "start_cards": ";".join(map(str, LONDON_START_CARDS)),
        "rounds": 24,
        "reveal_rounds": "3;8;13;18;24",
        "mrx_taxi": 4,
        "mrx_bus": 3,
        "mrx_underground": 3,
        "black_tickets": 5,
        "double_moves": 2,
        "detective_taxi": 10,
        "detective_bus": 8,
        "detective_underground": 4,
        "box_rules": 1,
        "mrx_recall": "station",
    },
}


def map_name(text: str) -> str:
    """The named map whose rules apply: 'london', else 'glasses' (also for edge lists)."""
    return text.strip() if text.strip() in MAP_RULES else "glasses"


def parse_map(text: str) -> tuple[int, list[tuple[int, int, int]]]:
    """Parse a map spec into (number of stations, [(a, b, transport index)]).

    "glasses" and "london" are the shipped maps; otherwise "a-b:transport;..."
    where a missing ":transport" means taxi. Items are separated by ";" because
    "," separates OpenSpiel game parameters. Stations are numbered 1..max.
    """
    name = text.strip()
    if name == "london":
        return london_map()
    if name == "glasses":
        text = GLASSES_EDGES
    edges = []
    for item in text.split(";"):
        ends, _, kind = item.strip().partition(":")
        kind = kind.strip() or "taxi"
        a, dash, b = ends.partition("-")
        if not dash or kind not in TRANSPORTS:
            raise ValueError(f"scotland_yard: bad map edge {item.strip()!r}; expected a-b:{'|'.join(TRANSPORTS)}")
        try:
            a, b = int(a), int(b)
        except ValueError:
            raise ValueError(f"scotland_yard: bad map edge {item.strip()!r}; stations are whole numbers") from None
        if a < 1 or b < 1 or a == b:
            raise ValueError(f"scotland_yard: bad map edge {item.strip()!r}; stations are 1.. and distinct")
        edges.append((a, b, TRANSPORTS.index(kind)))
    return max(max(a, b) for a, b, _ in edges), edges


def _data(name: str) -> list[list[str]]:
    text = resources.files("polyzero.games").joinpath("data", "scotland_yard_london", name).read_text()
    return [line.split() for line in text.splitlines() if line.strip()]


@functools.lru_cache(maxsize=1)
def london_map() -> tuple[int, list[tuple[int, int, int]]]:
    """The London board's 199 stations and 468 edges (the river's `water` edges are ferries)."""
    kinds = {"taxi": 0, "bus": 1, "underground": 2, "water": FERRY}
    edges = [(int(a), int(b), kinds[kind]) for a, b, kind in _data("connections.txt")]
    return len(london_positions()), edges


@functools.lru_cache(maxsize=1)
def london_positions() -> dict[int, tuple[int, int]]:
    """Each London station's (x, y) pixel position on the printed board (for drawing)."""
    return {int(row[0]): (int(row[1]), int(row[2])) for row in _data("stations.txt")}
