"""Scotland Yard drawn in the terminal: `board_string(state, show_mrx)`.

The glasses map is drawn as its picture with every station's number; the London
board as a character grid at the printed board's station positions (`.` a taxi
stop, `+` a bus stop, `#` an underground station; detectives `1`..`5`, Mr X `X`
in his own view, `?` where the detectives' view says he may be). Below the map:
the tickets, the travel log, and where Mr X may be (the stations the public
history leaves him, `possible_mrx_stations`).
"""

from __future__ import annotations

import functools

from .scotland_yard_maps import BLACK, FERRY, GLASSES_EDGES, MRX, TICKETS, TRANSPORTS, london_positions, parse_map


def possible_mrx_stations(state) -> set[int]:
    """The stations where Mr X may be given the public history only (the support of
    the detectives' belief): his start (the start cards the detectives did not draw
    when dealt), then each logged ticket's moves away from the detectives, a reveal
    pinning him down, and never where a detective stands."""
    r = state.rules
    detectives = list(state.start_detectives)
    if r.mrx_start:
        where = {r.mrx_start}
    else:
        where = set(r.start_cards) - set(detectives)
    for event in state.public_events:
        if event in ("X:dealt", "X:double") or event.startswith("end:") or (event[0] == "D" and "@" in event):
            continue  # the deal (already in `detectives`), a double-move card, the end
        who, _, what = event.partition(":")
        if who.startswith("D"):  # a detective's move: he is not where it ends
            if what != "pass":
                station = int(what.split("->")[1])
                detectives[int(who[1:]) - 1] = station
                where.discard(station)
            continue
        ticket, _, seen = what.partition("@")
        if seen:
            where = {int(seen)}
            continue
        t = TICKETS.index(ticket)
        where = {
            dest
            for s in where
            for dest, transport in r.neighbours[s]
            if (t == BLACK or transport == t) and dest not in detectives
        }
    if state.winner is not None and state.winner != MRX and state.mrx in detectives:
        return {state.mrx}  # caught: everyone sees where
    return where


def board_string(state, show_mrx: bool) -> str:
    """A readable board: the map, tickets and Mr X's log; Mr X shown when `show_mrx`
    (his own view, or the debugging view), else where he may be."""
    r = state.rules
    if state.winner is not None:
        status = "Mr X wins" if state.winner == MRX else "detectives win"
    elif state.dealing:
        status = "dealing the start cards"
    else:
        status = "to move: " + (
            "Mr X" + (" (double move)" if state.double_left else "") if state.turn == 0 else f"detective {state.turn}"
        )
    lines = [f"Round {state.round()}/{r.rounds}, {status}"]
    maybe = set() if show_mrx or state.dealing else possible_mrx_stations(state)
    if r.params["map"] == "london":
        lines += _london_picture(state, show_mrx, maybe)
    elif r.edges == parse_map("glasses")[1]:
        marks = {d: f"D{k + 1}" for k, d in enumerate(state.detectives)}
        if show_mrx and state.mrx:
            marks[state.mrx] = "X" if state.mrx not in marks else "X" + marks[state.mrx]
        lines += _glasses_picture(
            {s: f"{s}:{m}" if (m := marks.get(s)) else (f"{s}?" if s in maybe else str(s)) for s in range(1, 12)}
        )
    else:
        marks = {d: f"D{k + 1}" for k, d in enumerate(state.detectives)}
        if show_mrx and state.mrx:
            marks[state.mrx] = "X" + marks.get(state.mrx, "")
        lines.append("stations: " + " ".join(f"{s}[{m}]" for s, m in sorted(marks.items())))
    t = state.mrx_tickets
    lines.append(
        f"Mr X{' at ' + str(state.mrx) if show_mrx and state.mrx else ''}: taxi {t[0]} bus {t[1]} "
        f"underground {t[2]} black {t[3]} double {t[4]}"
    )
    for k, (d, dt) in enumerate(zip(state.detectives, state.detective_tickets)):
        lines.append(f"D{k + 1} at {d}: taxi {dt[0]} bus {dt[1]} underground {dt[2]}")
    log = [
        f"{i + 1}:{TICKETS[tk]}" + (f"@{st}" if rev or show_mrx else "") for i, (tk, st, rev, _) in enumerate(state.log)
    ]
    lines.append("log: " + (" ".join(log) if log else "-"))
    if maybe:
        lines.append(f"Mr X may be at ({len(maybe)}): " + " ".join(map(str, sorted(maybe))))
    return "\n".join(lines)


# -- the glasses map -------------------------------------------------------------------

# Column of each glasses station in the picture, and its row (0 top, 2 middle, 4 bottom).
_GLASSES_LAYOUT = {
    1: (0, 2),
    2: (1, 2),
    3: (2, 0),
    4: (2, 4),
    5: (3, 2),
    6: (4, 2),
    7: (5, 2),
    8: (6, 0),
    9: (6, 4),
    10: (7, 2),
    11: (8, 2),
}
_CELL, _GAP = 6, 3


def _glasses_picture(labels: dict[int, str]) -> list[str]:
    """The glasses map drawn in five text rows, one fixed-width cell per station."""
    rows = [[" "] * (9 * (_CELL + _GAP)) for _ in range(5)]
    for station, (col, row) in _GLASSES_LAYOUT.items():
        x = col * (_CELL + _GAP)
        rows[row][x : x + _CELL] = f"{labels[station]:^{_CELL}}"
    for a, b, _ in parse_map(GLASSES_EDGES)[1]:
        (ca, ra), (cb, rb) = _GLASSES_LAYOUT[a], _GLASSES_LAYOUT[b]
        gap = min(ca, cb) * (_CELL + _GAP) + _CELL + 1
        if ra == rb:
            rows[ra][gap] = "-"
        else:  # a diagonal between the middle row and the top or bottom row
            left_row = ra if ca < cb else rb
            right_row = rb if ca < cb else ra
            up = right_row < left_row  # rising to the right
            rows[(ra + rb) // 2][gap] = "/" if up else "\\"
    return ["".join(r).rstrip() for r in rows]


# -- the London board ------------------------------------------------------------------

LONDON_COLUMNS, LONDON_ROWS = 100, 38  # a terminal cell is about twice as tall as wide


@functools.lru_cache(maxsize=1)
def london_cells() -> dict[int, tuple[int, int]]:
    """Each London station's (row, column) in the grid: its board position scaled, moved
    to the nearest free cell of its row (or the next rows) when two fall together."""
    positions = london_positions()
    xs = [x for x, _ in positions.values()]
    ys = [y for _, y in positions.values()]
    taken, out = set(), {}
    for station in sorted(positions):
        x, y = positions[station]
        row = round((y - min(ys)) / (max(ys) - min(ys)) * (LONDON_ROWS - 1))
        col = round((x - min(xs)) / (max(xs) - min(xs)) * (LONDON_COLUMNS - 1))
        for dr, dc in sorted(
            ((dr, dc) for dr in (0, 1, -1) for dc in range(-3, 4)), key=lambda rc: (abs(rc[0]), abs(rc[1]))
        ):
            cell = (row + dr, col + dc)
            if cell not in taken and 0 <= cell[0] < LONDON_ROWS and 0 <= cell[1] < LONDON_COLUMNS:
                break
        taken.add(cell)
        out[station] = cell
    return out


@functools.lru_cache(maxsize=1)
def _london_stops() -> dict[int, str]:
    """Each station's mark by the best transport stopping there."""
    mark: dict[int, str] = {}
    for a, b, transport in parse_map("london")[1]:
        for s in (a, b):
            if transport != FERRY:
                mark[s] = max(mark.get(s, "."), ".+#"[transport], key=".+#".index)
    return mark


def _london_picture(state, show_mrx: bool, maybe: set[int]) -> list[str]:
    grid = [[" "] * LONDON_COLUMNS for _ in range(LONDON_ROWS)]
    cells = london_cells()
    stops = _london_stops()
    for station, (row, col) in cells.items():
        grid[row][col] = "?" if station in maybe else stops.get(station, ".")
    for k, station in enumerate(state.detectives):
        row, col = cells[station]
        grid[row][col] = str(k + 1)
    if show_mrx and state.mrx:
        row, col = cells[state.mrx]
        grid[row][col] = "X"
    border = "+" + "-" * LONDON_COLUMNS + "+"
    legend = "  . taxi  + bus  # underground  1-5 detectives" + ("  X Mr X" if show_mrx else "  ? Mr X may be here")
    return [border] + ["|" + "".join(row) + "|" for row in grid] + [border, legend]


# -- the map as data (the web page draws it) ----------------------------------------------


def map_json(state, show_mrx: bool) -> dict | None:
    """The map as a seat sees it, for drawing: stations at their positions (London's
    printed board, the glasses picture's layout; None for another map, which has none),
    connections with their transport, the detectives' stations, Mr X's station only when
    `show_mrx` (his own view, or everything) else the stations he may be at, and the
    ticket counts and travel log that `board_string` shows."""
    r = state.rules
    if r.params["map"] == "london":
        positions = london_positions()
    elif r.edges == parse_map("glasses")[1]:
        positions = {s: (100 * col, 50 * row) for s, (col, row) in _GLASSES_LAYOUT.items()}
    else:
        return None
    hidden = not show_mrx and not state.dealing
    maybe = possible_mrx_stations(state) if hidden else set()
    log = [[TICKETS[tk], st if rev or show_mrx else None] for tk, st, rev, _ in state.log]
    return {
        "kind": "scotland_yard",
        "num_stations": r.num_stations,
        "stations": [[s, x, y] for s, (x, y) in sorted(positions.items())],
        "edges": [[a, b, TRANSPORTS[t]] for a, b, t in r.edges],
        "detectives": list(state.detectives),
        "to_move": None if state.winner is not None or state.dealing else state.turn,
        "mrx": state.mrx if show_mrx and state.mrx else None,
        "possible": sorted(maybe),
        "mrx_tickets": list(state.mrx_tickets),
        "detective_tickets": [list(t) for t in state.detective_tickets],
        "log": log,
    }
