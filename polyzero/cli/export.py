"""`polyzero export`: a run's network as TorchScript or ONNX files."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..validation import check_output_file, path_arg

EXAMPLES = """examples:
  polyzero export runs/c4 --format onnx                  # runs/c4/export/model.onnx and model.json
  polyzero export runs/c4 --format torchscript --out c4.pt
  polyzero export runs/ttt-muzero --format onnx --out ttt.onnx   # ttt-h.onnx, ttt-g.onnx, ttt-f.onnx
"""


def register(sub) -> None:
    ex = sub.add_parser(
        "export",
        help="a run's network as TorchScript or ONNX",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="Write the network of RUN's latest checkpoint (or of a checkpoint "
        "directory) as TorchScript or ONNX, with a JSON file describing its "
        "inputs and outputs. AlphaZero: one graph, observation -> (policy "
        "logits, value). MuZero: three graphs, h, g and f (docs/export.md).",
    )
    ex.add_argument("run_path", type=Path, metavar="RUN", help="a run directory or checkpoint directory")
    ex.add_argument("--format", required=True, choices=["torchscript", "onnx"], help="the file format")
    ex.add_argument(
        "--out",
        type=path_arg(check_output_file, "--out"),
        metavar="FILE",
        help="output file (default: RUN/export/model.pt or model.onnx; MuZero adds -h, -g, -f to its name)",
    )
    ex.set_defaults(run=run)


def run(args) -> int:
    from ..export import export_run

    for path in export_run(args.run_path, args.format, args.out):
        print(path)
    return 0
