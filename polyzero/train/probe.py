"""The learned model against the true game: k-step agreement (`polyzero probe RUN`).

A learned model is only as good as what it predicts k steps into an imagined
future. From positions of games played by uniform random moves, or by moves
sampled from the model's own prior (closer to what its self-play reaches; chance
events by their true probabilities either way), the model is unrolled along the actions the game
actually took,

    s^0 = h(o_t),   s^k = g(s^(k-1), a_(t+k-1)),   f(s^k),

and each prediction is compared with the truth at step t + k (MuZero, Eq. 1's
targets; NDMZ, Section 3.2's five predictions):

* policy: whether the top move is legal, the top-move and uniform tests of the
  NDMZ paper (Section 4.3: no illegal action above any legal one; none above
  1/|A|), and agreement with the model's own prediction f(h(o_(t+k))) from the
  true observation (top move and total variation);
* value: |v^k - v(h(o_(t+k)))|, the drift of the imagined value from the value the
  model gives the real position;
* reward: |r^k - u_(t+k)| against the reward the learner is trained on;
* NDMZ only: the identity prediction i^k (who acts: either player, chance, or the
  terminal player) and the chance policy c^k against the true chance
  probabilities (total variation);
* with ``baseline``, an AlphaZero run of the same game (a network given the
  rules): agreement of the model's top move with that network's on the true
  position, and the value difference;
* on a game with an exact solution (Nannon): value, top move and a one-step
  look-ahead against the exact values (:mod:`polyzero.train.probe_exact`).

k = 0 is h and f alone; every row counts only steps inside the game.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..errors import UsageError
from ..games.chance import sample_chance
from .probe_exact import (
    EXACT_METRICS,
    after_moves,
    exact_solution,
    exact_views,
    score_exact_chance,
    score_exact_choice,
    score_lookahead,
    score_real_roll,
)

#: metric -> what it measures, in the order the table shows them
METRICS = {
    "legal_top": "the top move is legal",
    "top_move": "NDMZ top-move test (no illegal action above a legal one)",
    "uniform": "NDMZ uniform test (no illegal action above 1/|A|)",
    "agree_self": "top move equals f(h(o)) on the true position",
    "tv_self": "total variation to f(h(o)) on the true position",
    "value_drift": "|v^k - v(h(o))| on the true position",
    "reward_err": "|r^k - reward target|",
    "identity_acc": "NDMZ identity prediction correct",
    "chance_tv": "NDMZ chance policy: total variation to the true probabilities",
    "agree_baseline": "top move equals the AlphaZero network's",
    "value_vs_baseline": "|v^k - AlphaZero network's value|",
    **EXACT_METRICS,
}


@dataclass
class Steps:
    """Every step of the recorded games, in order: decision, chance and terminal steps."""

    game_id: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)  # "choice", "chance" or "terminal"
    obs: list = field(default_factory=list)  # the model's encoding at choice steps, else None
    baseline_obs: list = field(default_factory=list)
    legal: list = field(default_factory=list)  # legal game actions at choice steps, else None
    action: list[int] = field(default_factory=list)  # the model's action index taken from here
    reward: list[float] = field(default_factory=list)  # reward target of the transition INTO this step
    identity: list[int] = field(default_factory=list)  # NDMZ identity of who acts here
    chance: list = field(default_factory=list)  # [(outcome, prob)] at chance steps
    exact_value: list[float] = field(default_factory=list)  # exact value for the model's player here, or nan
    move_values: list = field(default_factory=list)  # {legal action: exact value} at decisions, else None
    after: list = field(default_factory=list)  # with exact values: each move's true successors (after_moves)


def record_games(
    game,
    encode,
    games: int,
    seed: int,
    *,
    ndmz_layout=None,
    terminal_reward=False,
    baseline_encode=None,
    max_steps: int = 400,
    policy=None,
    exact=None,
) -> Steps:
    """Plays `games` games (at most `max_steps` steps each) by uniform random legal moves,
    or by sampling `policy(obs [1, ...], legal) -> probabilities over legal`, and records
    each step. MuZero's reward target on board games is 0 except, with
    `terminal_reward`, the last mover's outcome on the final transition; single-agent
    games carry their rewards. With `exact` (:func:`exact_solution`), each step's exact value
    for the player whose value the model gives there (the mover; at chance and terminal
    steps the last mover) and each decision's exact move values."""
    rng = np.random.default_rng(seed)
    single = game.num_players() == 1
    out = Steps()

    def push(kind, obs=None, base=None, legal=None, action=-1, reward=0.0, ident=-1, chance=None, moves=None):
        out.kind.append(kind), out.obs.append(obs), out.baseline_obs.append(base), out.legal.append(legal)
        out.action.append(action), out.reward.append(reward), out.identity.append(ident)
        out.chance.append(chance), out.move_values.append(moves)
        out.after.append(after_moves(state, player, encode) if moves else None)
        who = player if kind == "choice" else last
        out.exact_value.append(np.nan if exact is None or who is None else exact.state_value(state, who))

    for g in range(games):
        state = game.new_initial_state()
        into = 0.0  # the reward target of the transition into the next recorded step
        player = last = None  # the player to move; the last one who moved
        for _ in range(max_steps):
            out.game_id.append(g)
            if state.is_terminal():
                push("terminal", action=ndmz_layout.end if ndmz_layout else -1, reward=into, ident=3)
                break
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                o = sample_chance(state, rng, apply=False)
                push(
                    "chance",
                    action=ndmz_layout.chance_action(o) if ndmz_layout else o,
                    reward=into,
                    ident=2,
                    chance=outcomes,
                )
                state.apply_action(o)
                into = 0.0
                continue
            player = state.current_player()
            legal = state.legal_actions()
            obs = encode([state])
            a = int(
                legal[rng.integers(len(legal))]
                if policy is None
                else legal[rng.choice(len(legal), p=policy(obs, legal))]
            )
            moves = exact.move_values(state) if exact is not None else None
            push(
                "choice",
                obs[0],
                baseline_encode([state])[0] if baseline_encode else None,
                legal,
                a,
                into,
                player,
                None,
                moves,
            )
            last = player
            before = state.returns()[player]
            state.apply_action(a)
            gained = state.returns()[player] - before
            into = gained if single or (terminal_reward and state.is_terminal()) else 0.0
    return out


def _tv(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return 0.5 * np.abs(p - q).sum(-1)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


class _Accumulator:
    """Sums and counts per metric and k."""

    def __init__(self, steps: int):
        self.sums = {m: np.zeros(steps + 1) for m in METRICS}
        self.counts = {m: np.zeros(steps + 1) for m in METRICS}

    def add(self, metric: str, k: int, values: np.ndarray) -> None:
        values = np.asarray(values, np.float64)
        self.sums[metric][k] += values.sum()
        self.counts[metric][k] += values.size

    def table(self) -> tuple[dict, dict]:
        """(mean per metric and k, None where nothing was counted; counts per metric and k)."""
        return {
            m: [None if c == 0 else float(s / c) for s, c in zip(self.sums[m], self.counts[m])]
            for m in METRICS
            if self.counts[m].any()
        }, {m: [int(c) for c in self.counts[m]] for m in METRICS if self.counts[m].any()}


class LearnedModel:
    """The learned model's h, g and f as NumPy calls, for MuZero's and NDMZ's networks."""

    def __init__(self, net, ndmz: bool):
        self.net, self.ndmz = net.eval(), ndmz
        self.has_reward = ndmz or net.reward_head is not None

    @torch.inference_mode()
    def initial(self, obs: np.ndarray):
        s = self.net.represent(torch.from_numpy(np.asarray(obs, np.float32)))
        return (s,) + self._predict(s, root=True)

    @torch.inference_mode()
    def step(self, s, action: np.ndarray):
        """(s', reward [M], identity logits [M, 4] or None)."""
        a = torch.from_numpy(np.asarray(action, np.int64))
        if self.ndmz:
            r, s2, ident = self.net.dynamics(s, a)
            return s2, r.numpy(), ident.numpy()
        s2, reward_out = self.net.dynamics(s, a)
        return s2, self.net.reward_scalar(reward_out, s.shape[0], s2).numpy(), None

    @torch.inference_mode()
    def predict(self, s):
        return self._predict(s, root=False)

    def _predict(self, s, root: bool):
        """(choice logits [M, A], chance logits or None, value [M])."""
        if self.ndmz:
            p, c, v = self.net.predict(s)
            return p.numpy(), c.numpy(), v.numpy()
        logits, value = self.net.predict(s, root=root)
        return logits.numpy(), None, self.net.value_scalar(value).numpy()


def model_policy(net, ndmz: bool):
    """The model's own prior f(h(o)) over the legal moves, for `record_games(policy=...)`:
    positions like those the model's self-play reaches, without the search."""
    model = LearnedModel(net, ndmz)

    def policy(obs: np.ndarray, legal: list[int]) -> np.ndarray:
        logits = model.initial(obs)[1][0, legal]
        return _softmax(logits.astype(np.float64))

    return policy


def _masked_top(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, logits, -np.inf).argmax(1)


def _views(model: LearnedModel, steps: Steps, kind: np.ndarray, baseline, noop: int | None):
    """The true positions as the model sees them, f(h(o)), and as the baseline network does;
    the legal mask of every step (NDMZ: the choice player's no-op at chance and terminal steps)."""
    n = len(kind)
    choice_idx = np.flatnonzero(kind == "choice")
    if not len(choice_idx):
        raise UsageError("the probe's games have no decision steps")
    _, logits, _, value = model.initial(np.stack([steps.obs[i] for i in choice_idx]))
    own = {"logits": np.zeros((n, logits.shape[1])), "value": np.zeros(n)}
    own["logits"][choice_idx], own["value"][choice_idx] = logits, value
    legal = np.zeros((n, logits.shape[1]), np.bool_)
    for i in choice_idx:
        legal[i, steps.legal[i]] = True
    if noop is not None:
        legal[kind != "choice", noop] = True
    base = None
    if baseline is not None:
        b_logits, b_value = baseline(np.stack([steps.baseline_obs[i] for i in choice_idx]))
        base = {"top": np.full(n, -1), "value": np.zeros(n)}
        base["top"][choice_idx] = _masked_top(b_logits, legal[choice_idx][:, : b_logits.shape[1]])
        base["value"][choice_idx] = b_value
    return choice_idx, own, legal, base


def _score_choice(acc: _Accumulator, k: int, logits, value, u, legal, own, base) -> None:
    """The metrics at decision steps u (rows of `logits` and `value`)."""
    m = legal[u]
    p = _softmax(logits)
    acc.add("legal_top", k, m[np.arange(len(u)), p.argmax(1)])
    top = _masked_top(logits, m)
    acc.add("agree_self", k, top == _masked_top(own["logits"][u], m))
    acc.add("tv_self", k, _tv(p, _softmax(own["logits"][u])))
    acc.add("value_drift", k, np.abs(value - own["value"][u]))
    if base is not None:
        acc.add("agree_baseline", k, top == base["top"][u])
        acc.add("value_vs_baseline", k, np.abs(value - base["value"][u]))


def _score_tests(acc: _Accumulator, k: int, logits, legal_rows) -> None:
    """The NDMZ paper's top-move and uniform dynamics tests (Section 4.3)."""
    p = _softmax(logits)
    worst_legal = np.where(legal_rows, p, np.inf).min(1)
    best_illegal = np.where(legal_rows, -np.inf, p).max(1)
    acc.add("top_move", k, ~(best_illegal > worst_legal))
    acc.add("uniform", k, ~(best_illegal > 1.0 / p.shape[1]))


def _chance_truth(steps: Steps, rows, layout, width: int) -> np.ndarray:
    truth = np.zeros((len(rows), width))
    for row, i in enumerate(rows):
        for o, prob in steps.chance[i]:
            truth[row, layout.chance_action(o)] = prob
    return truth


def probe(net, steps: Steps, unroll: int, *, ndmz_layout=None, baseline=None, batch: int = 2048) -> dict:
    """The per-k table of :data:`METRICS` for a MuZero (`ndmz_layout` None) or NDMZ network
    on recorded steps; `baseline`: an AlphaZero evaluator (obs -> logits, values). The
    legality tests run over the model's whole action set (NDMZ's includes chance
    outcomes, no-op and end, all illegal for a choice player); for NDMZ they also run at
    chance and terminal steps, where the choice player's legal action is no-op, as the
    paper's tests do."""
    model = LearnedModel(net, ndmz_layout is not None)
    kind = np.asarray(steps.kind)
    n, gid = len(kind), np.asarray(steps.game_id)
    actions, rewards = np.asarray(steps.action, np.int64), np.asarray(steps.reward, np.float64)
    identity = np.asarray(steps.identity)
    choice_idx, own, legal, base = _views(model, steps, kind, baseline, ndmz_layout and ndmz_layout.noop)
    exact = exact_views(steps, legal.shape[1]) if steps.exact_value else None
    acc = _Accumulator(unroll)
    for lo in range(0, len(choice_idx), batch):
        t0 = choice_idx[lo : lo + batch]
        s, logits, chance_logits, value = model.initial(np.stack([steps.obs[i] for i in t0]))
        for k in range(unroll + 1):
            t = t0 + k
            inside = t < n
            inside[inside] = gid[t[inside]] == gid[t0[inside]]
            if k > 0:  # rows past their game step with any valid action: they are not counted
                s, reward, ident = model.step(s, np.maximum(actions[np.minimum(t - 1, n - 1)], 0))
                logits, chance_logits, value = model.predict(s)
                if model.has_reward:
                    acc.add("reward_err", k, np.abs(reward[inside] - rewards[t[inside]]))
                if ident is not None:
                    # the choice players relative to the root's, as the replay labels them
                    want, root = identity[t[inside]], identity[t0[inside]]
                    want = np.where(want < 2, (want != root).astype(np.int64), want)
                    acc.add("identity_acc", k, ident[inside].argmax(1) == want)
            if not inside.any():
                break
            tt = np.minimum(t, n - 1)
            here = inside & (kind[tt] == "choice")
            tested = inside if ndmz_layout is not None else here
            _score_tests(acc, k, logits[tested], legal[tt[tested]])
            if here.any():
                _score_choice(acc, k, logits[here], value[here], tt[here], legal, own, base)
                if exact is not None:
                    top = _masked_top(logits[here], legal[tt[here]])
                    score_exact_choice(acc, k, value[here], top, tt[here], exact)
                    if k == 0:
                        score_real_roll(acc, model, tt[here], exact)
                    if ndmz_layout is not None:
                        score_lookahead(acc, k, model, ndmz_layout, s[torch.from_numpy(here)], tt[here], exact)
            here = inside & (kind[tt] == "chance")
            if exact is not None and here.any():
                score_exact_chance(acc, k, value[here], tt[here], exact)
            if chance_logits is not None and here.any():
                truth = _chance_truth(steps, tt[here], ndmz_layout, logits.shape[1])
                acc.add("chance_tv", k, _tv(_softmax(chance_logits[here]), truth))
    means, counts = acc.table()
    return {"k": list(range(unroll + 1)), "metrics": means, "counts": counts}


def dynamics_tests(net, game, unroll_steps: int, games: int = 500, seed: int = 0) -> dict:
    """The NDMZ paper's dynamics tests (Section 4.3) on `games` random games:
    {"top_move": [K+1 accuracies], "uniform": [...], "positions": [K+1 counts]}."""
    from ..games import ObservationEncoder

    steps = record_games(game, ObservationEncoder(game).encode, games, seed, ndmz_layout=net.layout)
    result = probe(net, steps, unroll_steps, ndmz_layout=net.layout)
    return {
        "top_move": result["metrics"]["top_move"],
        "uniform": result["metrics"]["uniform"],
        "positions": result["counts"]["top_move"],
    }


def format_table(result: dict) -> str:
    """The per-k table as fixed-width text, one metric a row."""
    ks = result["k"]
    lines = [f"{'metric':<26}" + "".join(f"{'k=' + str(k):>8}" for k in ks)]
    for name, row in result["metrics"].items():
        lines.append(f"{name:<26}" + "".join(f"{'-' if v is None else format(v, '.3f'):>8}" for v in row))
    return "\n".join(lines)


def plot_probe(result: dict, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, row in result["metrics"].items():
        ax = (
            left
            if name
            in ("legal_top", "top_move", "uniform", "agree_self", "identity_acc", "agree_baseline")
            + ("agree_exact", "greedy_agree_exact", "roll_agree_exact")
            else right
        )
        ks = [k for k, v in zip(result["k"], row) if v is not None]
        ax.plot(ks, [v for v in row if v is not None], marker="o", label=name)
    left.set(title="agreement (higher is better)", xlabel="unroll step k", ylim=(0, 1.02))
    right.set(title="error (lower is better)", xlabel="unroll step k")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _load(path: str | Path):
    """(config, game, algorithm, network) of a run directory or checkpoint."""
    from ..config import build_config, read_toml
    from ..games import load_game
    from .agents import checkpoint_network
    from .checkpoint import resolve_checkpoint

    ckpt = resolve_checkpoint(path)
    cfg = build_config(base=read_toml(ckpt / "config.toml"))
    game = load_game(cfg.game)
    algo, net = checkpoint_network(ckpt, cfg, game)
    return cfg, game, algo, net, ckpt


def probe_run(
    path: str | Path,
    *,
    baseline: str | Path | None = None,
    games: int = 200,
    seed: int = 0,
    unroll: int | None = None,
    out: Path | None = None,
    moves: str = "random",
) -> dict:
    """Probes the learned model of a MuZero or NDMZ run (see the module docstring) on games
    of `moves` = "random" (uniform) or "model" (sampled from the model's own prior); writes
    probe.json and probe.png to `out` (default RUN/probe) and returns the result."""
    from .checkpoint import atomic_write, read_state

    cfg, game, algo, net, ckpt = _load(path)
    if getattr(algo, "unroll_steps", None) is None:  # an algorithm with a learned model declares its unroll
        raise UsageError(f"probe needs a run with a learned model (muzero or ndmz); {path} is a {cfg.algo} run")
    layout = getattr(algo, "layout", None)  # NDMZ's actions: choices, chance outcomes, no-op, end
    ndmz = layout is not None
    k_max = unroll if unroll is not None else algo.unroll_steps
    if k_max < 0 or games < 1:
        raise UsageError("probe needs --games >= 1 and --unroll >= 0")
    if moves not in ("random", "model"):
        raise UsageError(f"--moves must be random or model, not {moves!r}")
    base_eval = base_encode = None
    if baseline is not None:
        b_cfg, b_game, b_algo, b_net, _ = _load(baseline)
        if getattr(b_algo, "unroll_steps", None) is not None or b_cfg.game != cfg.game:  # the true game's
            raise UsageError(
                f"--baseline must be an alphazero run of {cfg.game}; {baseline} is a {b_cfg.algo} run of {b_cfg.game}"
            )
        base_eval, base_encode = b_algo.make_evaluator(b_net, "cpu"), b_algo.encode
    steps = record_games(
        game,
        algo.encode,
        games,
        seed,
        ndmz_layout=layout,
        terminal_reward=bool(getattr(algo, "terminal_reward", False)),
        baseline_encode=base_encode,
        policy=model_policy(net, ndmz) if moves == "model" else None,
        exact=exact_solution(game),
    )
    result = probe(net, steps, k_max, ndmz_layout=layout, baseline=base_eval)
    result.update(
        run=str(path),
        checkpoint=str(ckpt),
        algo=cfg.algo,
        game=cfg.game,
        games=games,
        seed=seed,
        learning_step=read_state(ckpt).get("step"),
        moves=moves,
        baseline=None if baseline is None else str(baseline),
        definitions={m: METRICS[m] for m in result["metrics"]},
    )
    out = Path(out) if out is not None else ckpt.parent.parent / "probe"  # RUN/checkpoints/step_N -> RUN/probe
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "probe.json", json.dumps(result, indent=1).encode())
    except OSError as exc:
        raise UsageError(f"cannot write the probe's results to {out}: {exc.strerror}") from None
    result["plot"] = str(plot_probe(result, out / "probe.png", f"{cfg.algo} on {cfg.game}: the model k steps ahead"))
    result["json"] = str(out / "probe.json")
    return result
