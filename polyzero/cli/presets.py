"""`polyzero presets`: the shipped presets, by name, with what they train."""

from __future__ import annotations

import argparse

EXAMPLES = """examples:
  polyzero presets                              # name, algorithm, game, first line of its comment
  polyzero presets --show muzero_connect_four   # the whole file, with the sources of its values
  polyzero train --preset muzero_connect_four   # train with it (the game and algorithm come with it)
"""


def register(sub) -> None:
    pr = sub.add_parser(
        "presets",
        help="list the shipped presets (train --preset NAME)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="List the configuration presets shipped with polyzero. Each names the "
        "algorithm and game it trains and cites the source of its values; "
        "`polyzero train --preset NAME` uses one (docs/configuration.md).",
    )
    pr.add_argument("--show", metavar="NAME", help="print the preset's TOML file")
    pr.set_defaults(run=run)


def run(args) -> int:
    from ..presets import list_presets, preset_summary, preset_text

    if args.show is not None:
        print(preset_text(args.show), end="")
        return 0
    rows = [preset_summary(n) for n in list_presets()]
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        where = f"{r['algo']} on {r['game']}"
        print(f"{r['name']:<{width}}  {where:<34}  {r['about'][:60]}")
    return 0
