"""A process that builds a search player keeps the thread count its config names.

Numba's threading layer, started by the first parallel tree kernel, sets OpenMP's
thread count (torch's intra-op pool included) to every core; arena, play, ladders
and engines then ran their networks on every core, several times slower on a busy
machine. Each check runs in a fresh interpreter: which thread count a process takes
is decided once, by the first call."""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A player of an untrained tiny network searching 64 games at once (64 trees: the
# batch the parallel kernels split); prints torch's and numba's thread counts after.
SCRIPT = """
import numba, torch
from polyzero.algos import make_algorithm
from polyzero.algos.player import SearchPlayer
from polyzero.config import build_config
from polyzero.games import load_game
from polyzero.nets.inference import set_threads

{before}
cfg = build_config("tic_tac_toe", "alphazero", overrides=["net.channels=8", "net.blocks=1",
    "net.value_hidden=8", "net.width=16", "net.layers=1", "threads={threads}"])
game = load_game(cfg.game)
algo = make_algorithm(cfg, game)
player = SearchPlayer(algo, algo.make_evaluator(algo.build_network(), "cpu"), cfg.search.params(8), "p")
player.act([game.new_initial_state() for _ in range(64)])
print(torch.get_num_threads(), numba.get_num_threads())
"""


def _threads_after_search(threads: int, before: str = "") -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT.format(before=before, threads=threads))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    torch_threads, numba_threads = map(int, out.split()[-2:])
    return torch_threads, numba_threads


def test_search_player_keeps_its_configs_threads():
    assert _threads_after_search(1) == (1, 1)


def test_an_explicit_thread_count_wins_over_the_players_config():
    # An engine's --threads (set_threads) comes before the agent is built.
    # the cores this process may run on: numba's own maximum (under taskset, fewer than cpu_count)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert _threads_after_search(1, before=f"set_threads({cores})") == (cores, cores)
