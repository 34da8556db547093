"""Generated bad (and some good) inputs to the CLI, run one at a time in a forked child
of a process that has imported polyzero once, and classified.

Shared by `benchmarks/fuzz_inputs.py` (thousands of cases) and `tests/test_fuzz.py` (a
fixed sample). Case i of seed s is the same on every run, so a run can resume by index.

Classes: `ok` (exit 0, input was valid or harmless), `clean_error` (one line on stderr,
exit 2, or 1 for an operating-system error, no traceback), `traceback`, `crash` (killed
by a signal), `hang` (past the timeout), `accepted_nonsense` (exit 0 on an input that
must be refused), `unclean_error` (a non-zero exit without exactly one line), and
`refused_valid` (an error on an input that must work).
"""

from __future__ import annotations

import io
import os
import random
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

BAD_CLASSES = ("traceback", "crash", "hang", "accepted_nonsense", "unclean_error", "refused_valid")

# A small run every checkpoint case copies and corrupts (tic-tac-toe, two learning steps).
FIXTURE_ARGS = [
    "train",
    "tic_tac_toe",
    "--no-progress",
    "--set",
    "train.steps=2",
    "--set",
    "train.positions_per_step=16",
    "--set",
    "train.batch_size=8",
    "--set",
    "train.replay_size=64",
    "--set",
    "train.minibatches_per_step=1",
    "--set",
    "search.num_simulations=2",
    "--set",
    "selfplay.concurrent_games=4",
    "--set",
    "eval.every=0",
    "--set",
    "eval.final_games=0",
    "--set",
    "eval.simulations=2",
    "--set",
    "net.channels=4",
    "--set",
    "net.blocks=1",
    "--set",
    "train.checkpoint_every=1",
]
TINY = FIXTURE_ARGS[3:]  # the same small settings, for generated train commands


@dataclass
class Case:
    id: int
    kind: str
    argv: list[str]
    expect: str  # "error": must be refused; "ok": must work; "any": either, cleanly
    stdin: bytes = b""
    files: dict = field(default_factory=dict)  # name in the case directory -> bytes
    corrupt: tuple | None = None  # (path in the copied run, how)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "argv": self.argv,
            "expect": self.expect,
            "stdin": self.stdin[:200].decode("latin-1"),
            "files": sorted(self.files),
            "corrupt": list(self.corrupt) if self.corrupt else None,
        }


# ---------------------------------------------------------------- value pools
BAD_COUNTS = ["-1", "0", "abc", "1e9", "99999999999999999999", "nan", "", "1.5", "-99999999999"]
BAD_SEEDS = ["-1", "abc", "99999999999999999999", "1.5", "", "4294967296", "-2147483649"]
BAD_DIRS = ["/dev/null", "/dev/zero", "{dir}/afile", "{dir}/afile/sub", "/proc/self/status"]
BAD_FILES = ["/dev/null", "/dev/zero", "{dir}/empty_dir", "{dir}/afile/sub", "/proc/self/status", "/"]
BAD_SPECS = [
    "mcts:0",
    "mcts:-1",
    "mcts:x",
    "mcts:",
    "mcts-solver:1.5",
    "cfr:0",
    "cfr:-3",
    "ismcts:x",
    "sog:-1",
    "sog:1,0",
    "sog:a,b",
    "gtp:",
    "uci:",
    "gnugo:-1",
    "stockfish:x",
    "nosuch",
    "{dir}/afile",
    "/dev/null",
    "random@5",
    "{dir}/empty_dir",
    "mcts:99999999999999999999",
    ":",
    "@",
    "sog:1,1,net=/dev/null",
]
GOOD_GAMES = [
    "tic_tac_toe",
    "connect_four",
    "kuhn_poker",
    "leduc_poker",
    "nannon",
    "breakthrough(rows=6,columns=6)",
    "hex(board_size=5)",
    "go(board_size=5)",
    "othello",
    "dark_hex(board_size=3)",
    "liars_dice",
    "turn_based_simultaneous_game(game=matrix_rps())",
    "pig(winscore=10)",
    "mnk(m=4,n=4,k=3)",
]
BAD_GAME_STRINGS = [
    "",
    " ",
    "(",
    "connect_four(",
    "connect_four(rows=)",
    "connect_four(rows=1,rows=2)",
    "connect_four(rows=abc)",
    "nosuchgame",
    "go(board_size=9.5)",
    "go(komi=nan)",
    "go(komi=inf)",
    "\u30b2\u30fc\u30e0",
    "a" * 5000,
    "turn_based_simultaneous_game(game=nosuch())",
    "turn_based_simultaneous_game(game=tic_tac_toe())",
    "connect_four((rows=3))",
    "connect_four(rows=3)(x)",
    "sheriff",
    "matrix_rps",
    "kuhn_poker(players=3)",
    "hanabi",
    "tic_tac_toe(x=1)",
    "go(board_size=1)",
    "hex(board_size=0)",
    "connect_four(rows=0)",
    "cartpole",
    "blotto",
    "connect_four(rows=-5)",
]
# Integer parameters of some games, to mutate (game, parameter).
INT_PARAMS = [
    ("connect_four", "rows"),
    ("connect_four", "columns"),
    ("connect_four", "x_in_row"),
    ("go", "board_size"),
    ("hex", "board_size"),
    ("breakthrough", "rows"),
    ("breakthrough", "columns"),
    ("pig", "players"),
    ("pig", "winscore"),
    ("kuhn_poker", "players"),
    ("leduc_poker", "players"),
    ("liars_dice", "numdice"),
    ("mnk", "m"),
    ("mnk", "k"),
    ("dark_hex", "board_size"),
    ("quoridor", "players"),
    ("oware", "num_houses_per_player"),
    ("first_sealed_auction", "players"),
    ("go_fish", "players"),
    ("negotiation", "num_items"),
    ("sheriff", "max_items"),
    ("hanabi", "colors"),
]
INT_VALUES = [0, 1, -1, 2, 3, 100000, 2**31, 2**63, -(2**63), "1.5", "x", "true"]
# Every register()ed subcommand, a valid command line each ({dir}: the case's directory;
# {run}: a copy of the fixture run). Mutations make them invalid.
TEMPLATES = {
    "train": ["train", "tic_tac_toe", "--run-dir", "{dir}/r", *TINY],
    "arena": ["arena", "random", "mcts:5", "--game", "tic_tac_toe", "--games", "2", "--seed", "1", "--no-progress"],
    "play": ["play", "tic_tac_toe", "--agent", "random", "--seed", "1"],
    "solve": ["solve", "nannon(points=4,checkers=1)", "--no-progress"],
    "ladder": ["ladder", "{run}", "--games", "1", "--levels", "1", "--seed", "0", "--no-progress"],
    "tournament": ["tournament", "{run}", "--games", "1", "--out", "{dir}/t", "--seed", "0", "--no-progress"],
    "exploitability": ["exploitability", "cfr:5", "--game", "kuhn_poker", "--seeds", "1", "--no-progress"],
    "sog-probe": ["sog-probe", "{run}", "--points", "1"],
    "plot": ["plot", "{run}", "--out", "{dir}/p"],
    "probe": ["probe", "{run}", "--games", "2"],
    "serve": ["serve", "{run}", "--port", "-1"],  # never a valid serve: it would listen forever
    "export": ["export", "{run}", "--format", "onnx", "--out", "{dir}/m.onnx"],
    "presets": ["presets", "--show", "alphazero_tic_tac_toe"],
    "gtp": ["gtp", "--agent", "random", "--game", "go(board_size=5)"],
    "uci": ["uci", "--agent", "random"],
    "replay": ["replay", "{dir}/game.jsonl"],
}
VALUE_FLAGS = {
    "--games": BAD_COUNTS,
    "--seeds": BAD_COUNTS,
    "--seed": BAD_SEEDS,
    "--out": BAD_DIRS,
    "--run-dir": BAD_DIRS,
    "--record": BAD_DIRS,
    "--agent": BAD_SPECS,
    "--game": BAD_GAME_STRINGS,
    "--levels": ["0", "-1", "a,b", "", ",", "1,,2"],
    "--port": ["-1", "99999", "x"],
    "--points": ["-1", "x"],
    "--format": ["pdf", ""],
    "--show": ["nosuch", ""],
}
STDIN_LINES = [
    "",
    " ",
    "0",
    "-1",
    "9" * 100,
    "x" * 10000,
    "undo",
    "moves",
    "?",
    "help",
    "a1",
    "\u00e9",
    "\t",
    "\x1b[2J",
    "y",
    "n",
    "99999999999999999999",
    "1e9",
    "x(1,1)",
    "e5",
    "pass",
    "resign",
    "quit",
    "Bet",
    "0 1",
    "\u202e",
    "\\",
    "'",
    "moves moves",
]
TOML_BAD = {
    float: ["nan", "inf", "-inf", '"x"', "[]", "true", "1e400"],
    int: ["99999999999999999999", "1.5", '"x"', "true", "[1]", "{a = 1}", "9223372036854775807"],
    str: ["1", "[]", "{}", "true"],
    bool: ["1", '"yes"', "[]"],
    list: ['"x"', "[1]", "[[]]"],
}


def _config_fields():
    """(section or None, key, type) of every config key, plug-in sections included."""
    import dataclasses
    import typing

    from polyzero.config import RunConfig

    cfg = RunConfig()
    out = []
    for name in cfg.section_names():
        value = getattr(cfg, name)
        if dataclasses.is_dataclass(value):
            hints = typing.get_type_hints(type(value))
            out += [
                (name, f.name, typing.get_origin(hints[f.name]) or hints[f.name]) for f in dataclasses.fields(value)
            ]
        else:
            kind = typing.get_type_hints(RunConfig)[name]
            out.append((None, name, typing.get_origin(kind) or kind))
    return out


# ---------------------------------------------------------------- generators
def _mutated_command(rng: random.Random, cid: int) -> Case:
    name = rng.choice(sorted(TEMPLATES))
    argv = list(TEMPLATES[name])
    flags = [i for i, a in enumerate(argv) if a in VALUE_FLAGS and i + 1 < len(argv)]
    how = rng.choice(["value", "value", "value", "drop", "unknown", "positional"])
    expect = "error"
    if how == "value" and flags:
        i = rng.choice(flags)
        pool = BAD_FILES if (name, argv[i]) == ("export", "--out") else VALUE_FLAGS[argv[i]]
        argv[i + 1] = rng.choice(pool)
        if argv[i] == "--game":
            expect = "any"  # some pooled game strings are valid games
    elif how == "drop" and len(argv) > 1:
        del argv[rng.randrange(1, len(argv))]
        expect = "any"  # dropping an optional flag's name or value may leave a valid command
    elif how == "unknown":
        token = rng.choice(["--bogus", "-x", "--games=", "--", "-"])
        argv.insert(rng.randrange(1, len(argv) + 1), token)
        expect = "any" if token == "--" else "error"  # "--" before positionals is valid syntax
    else:
        pos = 1 if len(argv) > 1 else 0
        argv[pos] = rng.choice(["", "nosuch", "/dev/null", "{dir}/afile", "-1", "\u00e9" * 3, "x" * 3000])
    if name == "serve":
        expect = "error"
    return Case(
        cid,
        f"cli:{name}:{how}",
        argv,
        expect,
        stdin=b"quit\n" if name in ("gtp", "uci") else b"",
        files={"game.jsonl": b'{"game": "tic_tac_toe", "moves": []}\n'},
    )


def _game_string(rng: random.Random, cid: int) -> Case:
    r = rng.random()
    if r < 0.4:
        spec, expect = rng.choice(BAD_GAME_STRINGS), "any"
    elif r < 0.55:
        spec, expect = rng.choice(GOOD_GAMES), "any"
    else:
        game, param = rng.choice(INT_PARAMS)
        spec, expect = f"{game}({param}={rng.choice(INT_VALUES)})", "any"
    command = rng.choice(["arena", "arena", "play", "train", "exploitability"])
    if command == "arena":
        argv = ["arena", "random", "random", "--game", spec, "--games", "1", "--no-progress"]
    elif command == "play":
        argv = ["play", spec, "--agent", "random"]
    elif command == "train":
        argv = ["train", spec, "--run-dir", "{dir}/r", *TINY]
    else:  # liars_dice is valid and takes a minute or two (exact best response): not a fuzz case
        spec = "kuhn_poker" if spec == "liars_dice" else spec
        argv = ["exploitability", "cfr:2", "--game", spec, "--seeds", "1", "--no-progress"]
    return Case(cid, f"game:{command}", argv, expect, stdin=b"0\n1\n2\n3\n4\n5\n6\n7\n8\nn\n")


def _player_spec(rng: random.Random, cid: int) -> Case:
    spec = rng.choice(BAD_SPECS)
    game = rng.choice(["tic_tac_toe", "kuhn_poker", "connect_four"])
    command = rng.choice(["arena", "play", "exploitability"])
    if command == "arena":
        argv = ["arena", spec, "random", "--game", game, "--games", "1", "--no-progress"]
    elif command == "play":
        argv = ["play", game, "--agent", spec]
    else:
        argv = ["exploitability", spec, "--game", "kuhn_poker", "--seeds", "1", "--no-progress"]
    return Case(cid, f"player:{command}", argv, "error")


def _toml_config(rng: random.Random, cid: int) -> Case:
    fields = _config_fields()
    r = rng.random()
    if r < 0.1:
        body, expect = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))), "any"
    elif r < 0.2:
        body, expect = (
            rng.choice(
                [
                    b"[train\nsteps=1",
                    b"train.steps = = 1",
                    b"[[train]]\nsteps=1",
                    b"\xff\xfe[train]",
                    b"[train]\nsteps=1\n[train]\nsteps=2",
                    b"x = 1",
                    b"[nosuch]\na=1",
                    b"train = 3",
                    b"[search.deeper]\na=1",
                ]
            ),
            "error",
        )
    else:
        lines, expect = [], "error"
        for _ in range(rng.randrange(1, 4)):
            section, key, kind = rng.choice(fields)
            value = rng.choice(TOML_BAD.get(kind, ['"x"']))
            lines.append(f"[{section}]\n{key} = {value}" if section else f"{key} = {value}")
        body = "\n".join(sorted(lines, key=lambda line: not line.startswith("["))).encode()
        # top-level keys must come before tables in TOML; a misplaced one is a syntax error anyway
    argv = ["train", "tic_tac_toe", "--config", "{dir}/c.toml", "--run-dir", "{dir}/r", *TINY]
    return Case(cid, "toml", argv, expect, files={"c.toml": body})


CORRUPTIONS = [
    "truncate",
    "empty",
    "random",
    "non_utf8",
    "delete",
    "directory",
    "json_list",
    "foreign_pickle",
    "huge_step",
]
CHECKPOINT_FILES = [
    "checkpoints/latest",
    "checkpoints/{step}/config.toml",
    "checkpoints/{step}/learner.pt",
    "checkpoints/{step}/replay.npz",
    "checkpoints/{step}/state.json",
    "config.toml",
    "metrics.jsonl",
]


def _checkpoint(rng: random.Random, cid: int) -> Case:
    target = rng.choice(CHECKPOINT_FILES)
    how = rng.choice(CORRUPTIONS)
    command = rng.choice(["arena", "resume", "export", "plot", "ladder", "play"])
    argv = {
        "arena": ["arena", "{run}", "random", "--games", "1", "--no-progress"],
        "resume": ["train", "--resume", "{run}", "--no-progress", "--set", "train.steps=3"],
        "export": ["export", "{run}", "--format", "torchscript", "--out", "{dir}/m.pt"],
        "plot": ["plot", "{run}", "--out", "{dir}/p"],
        "ladder": ["ladder", "{run}", "--games", "1", "--levels", "1", "--no-progress"],
        "play": ["play", "tic_tac_toe", "--agent", "{run}"],
    }[command]
    return Case(cid, f"checkpoint:{command}", argv, "any", corrupt=(target, how))


def _play_stdin(rng: random.Random, cid: int) -> Case:
    game = rng.choice(
        [
            "tic_tac_toe",
            "connect_four",
            "kuhn_poker",
            "nannon",
            "go(board_size=5)",
            "breakthrough",
            "chess",
            "leduc_poker",
            "othello",
        ]
    )
    lines = [rng.choice(STDIN_LINES) for _ in range(rng.randrange(1, 30))]
    data = "\n".join(lines).encode()
    if rng.random() < 0.15:
        data += bytes([0xFF, 0xFE, 0x80])
    expect = "ok" if data.decode("utf-8", "replace") == data.decode("utf-8", "ignore") else "any"
    seat = rng.choice(["0", "1"])
    return Case(
        cid, "play_stdin", ["play", game, "--agent", "random", "--human-seat", seat, "--seed", "1"], expect, stdin=data
    )


KINDS = [
    (_mutated_command, 0.3),
    (_game_string, 0.2),
    (_player_spec, 0.1),
    (_toml_config, 0.15),
    (_checkpoint, 0.15),
    (_play_stdin, 0.1),
]


def generate(cid: int, seed: int = 0) -> Case:
    """Case `cid` of the stream with `seed`: the same case every time."""
    rng = random.Random(f"{seed}:{cid}")
    r, acc = rng.random(), 0.0
    for make, weight in KINDS:
        acc += weight
        if r < acc:
            return make(rng, cid)
    return KINDS[-1][0](rng, cid)


# ---------------------------------------------------------------- running
def make_fixture(root: Path) -> Path:
    """The small run every checkpoint case copies (trained once, in this process)."""
    from polyzero.cli import main

    run = root / "fixture_run"
    if not (run / "checkpoints" / "latest").is_file():
        shutil.rmtree(run, ignore_errors=True)
        with open(os.devnull, "w") as sink:
            old = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = sink
            try:
                code = main(FIXTURE_ARGS + ["--run-dir", str(run)])
            finally:
                sys.stdout, sys.stderr = old
        assert code == 0, "the fuzz fixture run failed to train"
    return run


def _corrupt(run: Path, target: str, how: str, rng: random.Random) -> None:
    step = (run / "checkpoints" / "latest").read_text().strip()
    path = run / target.replace("{step}", step)
    data = path.read_bytes() if path.is_file() else b""
    if how == "delete" or how == "directory":
        if path.is_file():
            path.unlink()
        if how == "directory":
            path.mkdir(parents=True, exist_ok=True)
        return
    new = {
        "truncate": data[: len(data) // 2],
        "empty": b"",
        "random": bytes(rng.randrange(256) for _ in range(max(16, min(len(data), 4096)))),
        "non_utf8": b"\xff\xfe\xfd" + data[3:],
        "json_list": b"[1, 2, 3]\n",
        "huge_step": b"step_999999999999999999999\n" if target.endswith("latest") else b'{"step": 1e999}\n',
    }.get(how)
    if how == "foreign_pickle":
        import pickle

        new = pickle.dumps({"net": "not weights", "os": os.getcwd})  # a callable: weights_only must refuse it
    path.write_bytes(new)


def _substitute(argv: list[str], case_dir: Path) -> list[str]:
    return [a.replace("{dir}", str(case_dir)).replace("{run}", str(case_dir / "run")) for a in argv]


def prepare(case: Case, fixture: Path, case_dir: Path) -> list[str]:
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    (case_dir / "afile").write_text("a file, not a directory\n")
    (case_dir / "empty_dir").mkdir()
    shutil.copytree(fixture, case_dir / "run")
    for name, data in case.files.items():
        (case_dir / name).write_bytes(data)
    if case.corrupt:
        _corrupt(case_dir / "run", *case.corrupt, random.Random(case.id))
    return _substitute(case.argv, case_dir)


def _child(argv: list[str], case_dir: Path) -> None:
    """In the forked child: the CLI as `python -m polyzero` runs it (an escaping
    exception prints its traceback and exits 1)."""
    fd_in = os.open(case_dir / "stdin", os.O_RDONLY)
    fd_out = os.open(case_dir / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    fd_err = os.open(case_dir / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    for fd, target in ((fd_in, 0), (fd_out, 1), (fd_err, 2)):
        os.dup2(fd, target)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
    os.chdir(case_dir)
    os.environ["XDG_CACHE_HOME"] = str(case_dir / "cache")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    code = 1
    try:
        from polyzero.cli import main

        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - what an uncaught exception does to the real CLI
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code if isinstance(code, int) and 0 <= code < 256 else 1)


def run_case(case: Case, fixture: Path, work: Path, timeout: float = 60.0) -> dict:
    """Run one case in a forked child with a timeout; its result with its class."""
    case_dir = work / f"case_{case.id}"
    argv = prepare(case, fixture, case_dir)
    (case_dir / "stdin").write_bytes(case.stdin)
    start = time.monotonic()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(argv, case_dir)
    status, timed_out = None, False
    while status is None:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif time.monotonic() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            timed_out = True
        else:
            time.sleep(0.02)
    seconds = time.monotonic() - start
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) and not timed_out else None
    rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    stderr = (case_dir / "stderr").read_bytes().decode("utf-8", "replace")
    result = {
        **case.to_json(),
        "rc": rc,
        "signal": sig,
        "timed_out": timed_out,
        "seconds": round(seconds, 2),
        "stderr_tail": stderr[-600:],
        "class": classify(case.expect, rc, sig, timed_out, stderr),
    }
    shutil.rmtree(case_dir, ignore_errors=True)
    return result


def classify(expect: str, rc, sig, timed_out: bool, stderr: str) -> str:
    if timed_out:
        return "hang"
    if sig is not None:
        return "crash"
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if rc == 0:
        return "accepted_nonsense" if expect == "error" else "ok"
    lines = [line for line in stderr.splitlines() if line.strip()]
    if rc in (1, 2, 130) and len(lines) == 1 and "error" in lines[0] or rc == 130:
        return "refused_valid" if expect == "ok" and rc != 130 else "clean_error"
    return "unclean_error"
