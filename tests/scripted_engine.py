"""A tiny scripted GTP / UCI peer for the engine tests: it plays the first free point
(GTP) or the first legal move (UCI), and misbehaves on request, so every failure path of
polyzero's engine clients is tested without timing a real engine.

    python scripted_engine.py gtp|uci [MODE] [AFTER] [PIDFILE]

MODE: ok (default), die (exit), hang (stop answering), illegal (an occupied point or an
illegal chess move), garbage (nonsense), resign, refuse (GTP: reject every `play`); on
the AFTER-th move request (default 1). PIDFILE: the process writes its id there.
"""

import os
import sys
import time

LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"


def fault(mode, requests, after):
    """What to do instead of a move: exit, hang, or the text of a bad answer (None: play)."""
    if requests < after or mode in ("ok", "refuse"):
        return None
    if mode == "die":
        sys.exit(3)
    if mode == "hang":
        time.sleep(3600)
    return mode


def reply(text):
    sys.stdout.write(text + "\n\n")
    sys.stdout.flush()


def gtp(mode, after):
    size, stones, requests = 19, [], 0
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd, args = words[0], words[1:]
        answer = ""
        if cmd == "protocol_version":
            answer = "2"
        elif cmd == "list_commands":
            answer = "\n".join(
                ["protocol_version", "list_commands", "boardsize", "clear_board", "komi", "play", "genmove", "quit"]
            )
        elif cmd == "boardsize":
            size = int(args[0])
        elif cmd == "clear_board":
            stones = []
        elif cmd == "play":
            if mode == "refuse":
                reply("? illegal move")
                continue
            stones.append(args[1].upper())
        elif cmd == "genmove":
            requests += 1
            bad = fault(mode, requests, after)
            free = [f"{c}{r}" for r in range(1, size + 1) for c in LETTERS[:size] if f"{c}{r}" not in stones]
            if bad == "illegal":
                answer = stones[0] if stones else "Z99"
            elif bad is not None:
                answer = {"garbage": "%%%", "resign": "resign"}[bad]
            else:
                answer = free[0] if free else "pass"
                stones.append(answer)
        elif cmd == "quit":
            reply("=")
            return
        reply(f"= {answer}")


def uci(mode, after):
    import chess

    board, requests = chess.Board(), 0
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "uci":
            print("id name scripted\nuciok", flush=True)
        elif words[0] == "isready":
            print("readyok", flush=True)
        elif words[0] == "position":
            board = chess.Board()
            for move in words[words.index("moves") + 1 :] if "moves" in words else []:
                board.push_uci(move)
        elif words[0] == "go":
            requests += 1
            bad = fault(mode, requests, after)
            move = {"illegal": "e2e5", "garbage": "%%%", "resign": "(none)"}.get(bad) or next(
                iter(board.legal_moves)
            ).uci()
            print(f"info depth 1\nbestmove {move}", flush=True)
        elif words[0] == "quit":
            return


if __name__ == "__main__":
    protocol = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "ok"
    after = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    if len(sys.argv) > 4:
        with open(sys.argv[4], "w") as f:
            f.write(str(os.getpid()))
    (gtp if protocol == "gtp" else uci)(mode, after)
