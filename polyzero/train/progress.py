"""The live progress display while training (stderr; off when not a terminal and asked so)."""

from __future__ import annotations

import sys

from tqdm import tqdm


class Progress:
    def __init__(self, total_steps: int, start_step: int, enabled: bool = True):
        self.bar = tqdm(total=total_steps, initial=start_step, desc="learning steps", unit="step",
                        file=sys.stderr, disable=not enabled, dynamic_ncols=True)

    def update(self, step: int, loss: dict, stats: dict, positions_per_s: float, last_eval: dict) -> None:
        self.bar.n = step
        post = {
            "games": stats["games"],
            "pos": stats["positions"],
            "loss": f"{loss['loss/total']:.3f}",
            "v": f"{loss['loss/value']:.3f}",
            "pi": f"{loss['loss/policy']:.3f}",
            "pos/s": f"{positions_per_s:.0f}",
        }
        for key, short in (("ray/weight_staleness", "stale"), ("ray/worker_failures", "fail"),
                           ("ray/queue", "queue")):
            if key in loss:
                post[short] = f"{loss[key]:g}"

        for key, value in last_eval.items():
            if key == "eval/return/mean":
                post["return"] = f"{value:.1f}"
            elif key.endswith("/score"):
                post[key[len("eval/"):-len("/score")]] = f"{value:.2f}"
        self.bar.set_postfix(post, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()
