"""A trained network out of polyzero: TorchScript or ONNX files that run without it.

AlphaZero: one graph, observation [B, *obs] -> (policy logits [B, A], value [B]).
MuZero: its three functions as three graphs (MuZero paper, Section 3 / Appendix B):
h (representation) observation -> hidden state, g (dynamics) (hidden state, action
[B] int64) -> (next hidden state, reward [B]; zeros for board games, which have no
reward head), and f (prediction) hidden state -> (policy logits, value [B]); values
and rewards are scalars (a categorical support is already turned into its expected
value). A JSON file beside them says what goes in and comes out. NDMZ and Student of
Games networks are refused with the reason (docs/export.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from .errors import UsageError

__all__ = ["export_run", "export_network", "FORMATS"]

FORMATS = ("torchscript", "onnx")
SUFFIX = {"torchscript": ".pt", "onnx": ".onnx"}
OPSET = 17


class _Represent(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, obs):
        return self.net.represent(obs)


class _Dynamics(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, hidden, action):
        nxt, reward = self.net.dynamics(hidden, action)
        return nxt, self.net.reward_scalar(reward, hidden.shape[0], hidden)


class _Predict(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, hidden):
        logits, value = self.net.predict(hidden, root=False)
        return logits, self.net.value_scalar(value)


def _graphs(algo: str, net, obs_shape) -> list[tuple[str, nn.Module, tuple, list[str], list[str]]]:
    """(name, module, example inputs, input names, output names) of each graph to write."""
    obs = torch.zeros((2, *obs_shape), dtype=torch.float32)
    if algo == "alphazero":
        return [("", net, (obs,), ["observation"], ["policy_logits", "value"])]
    if algo == "muzero":
        if net.prefix_head is not None:
            raise UsageError(
                "export does not describe a value-prefix network (muzero.value_prefix): its g "
                "carries an LSTM state between steps that these graphs have no input for"
            )
        with torch.no_grad():
            hidden = net.represent(obs)
        action = torch.zeros(2, dtype=torch.int64)
        return [
            ("h", _Represent(net), (obs,), ["observation"], ["hidden"]),
            ("g", _Dynamics(net), (hidden, action), ["hidden", "action"], ["next_hidden", "reward"]),
            ("f", _Predict(net), (hidden,), ["hidden"], ["policy_logits", "value"]),
        ]
    raise UsageError(
        f"export handles alphazero and muzero networks; a {algo} run's network is not supported "
        "(NDMZ's chance and identity heads and Student of Games' CVPN take inputs this export "
        "does not describe)"
    )


def _write(fmt: str, module: nn.Module, inputs: tuple, names_in: list[str], names_out: list[str], path: Path):
    if fmt == "torchscript":
        with torch.no_grad():
            traced = torch.jit.trace(module, inputs, check_trace=False)
        traced.save(str(path))
        return
    try:
        import onnx  # noqa: F401 - the exporter needs it
    except ImportError:
        raise UsageError("--format onnx needs the onnx package: pip install 'polyzero[export]'") from None
    axes = {n: {0: "batch"} for n in names_in + names_out}
    with torch.no_grad():
        torch.onnx.export(
            module,
            inputs,
            str(path),
            input_names=names_in,
            output_names=names_out,
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )


def export_network(algo: str, net: nn.Module, obs_shape, fmt: str, out: Path, meta: dict) -> list[Path]:
    """Write `net` (an `algo` network, in eval mode) as `fmt` to `out` (MuZero: out's stem
    with -h, -g and -f); returns the files written, the JSON description last."""
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    net = net.eval().cpu()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written, graphs = [], {}
    for name, module, inputs, names_in, names_out in _graphs(algo, net, obs_shape):
        path = out if not name else out.with_name(f"{out.stem}-{name}{out.suffix}")
        _write(fmt, module.eval(), inputs, names_in, names_out, path)
        written.append(path)
        graphs[name or "network"] = {
            "file": path.name,
            "inputs": names_in,
            "outputs": names_out,
            "shapes": {n: list(t.shape[1:]) for n, t in zip(names_in, inputs)},
        }
    info = out.with_name(out.stem + ".json")
    info.write_text(json.dumps({**meta, "format": fmt, "graphs": graphs}, indent=1) + "\n")
    return written + [info]


def export_run(run, fmt: str, out=None) -> list[Path]:
    """The latest checkpoint of a run directory (or a checkpoint) as `fmt` files;
    default output RUN/export/model.pt or .onnx."""
    from .config import build_config, read_toml
    from .games import load_game
    from .train.agents import checkpoint_network
    from .train.checkpoint import resolve_checkpoint

    ckpt = resolve_checkpoint(run)
    cfg = build_config(base=read_toml(ckpt / "config.toml"))
    if cfg.algo not in ("alphazero", "muzero"):
        _graphs(cfg.algo, None, ())  # the refusal, with its reason
    game = load_game(cfg.game)
    algo, net = checkpoint_network(ckpt, cfg, game)
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    out = Path(out) if out is not None else Path(run) / "export" / f"model{SUFFIX[fmt]}"
    meta = {
        "game": cfg.game,
        "algo": cfg.algo,
        "checkpoint": ckpt.name,
        "num_actions": game.num_distinct_actions(),
        "observation_shape": list(algo.encoder.shape),
        "perspective": cfg.net.perspective,
        "note": "observations as polyzero.games.ObservationEncoder writes them (net.perspective 'mover': "
        "a two-player game's observation from the side of the player to move); values for the "
        "player to move",
    }
    return export_network(cfg.algo, net, algo.encoder.shape, fmt, out, meta)
