"""The live progress display while training, on stderr.

On a terminal: one status line, redrawn in place and cut to the terminal's width
(80 columns at most): step, games and positions, losses, speed and time left. Off a
terminal (a pipe, `tee`, a log file): no redrawing and no carriage returns, a plain
status line every 5% of the run instead. Either way each evaluation gets a line of
its own, every score with its 95% interval, so the log keeps them.
"""

from __future__ import annotations

import math
import shutil
import sys
import time

WIDTH = 80


def readable(x: float) -> str:
    """12 -> '12', 12345 -> '12.3k', 2.5e6 -> '2.5M' (no '1e+4')."""
    if x is None or not math.isfinite(x):
        return "-"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.1f}{unit}"
    return f"{x:.0f}" if float(x).is_integer() or abs(x) >= 100 else f"{x:.1f}"


def duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def evaluation_line(step: int, scores: dict) -> str | None:
    """'eval step 40: mcts-solver:100 0.62 [0.41, 0.79] | random 0.95 [0.76, 0.99]'."""
    parts = []
    for key, value in scores.items():
        if key == "eval/return/mean":
            parts.append(
                f"return {value:.1f} [{scores.get('eval/return/ci_low', math.nan):.1f}, "
                f"{scores.get('eval/return/ci_high', math.nan):.1f}]"
            )
        elif key.endswith("/score"):
            name = key[len("eval/") : -len("/score")]
            parts.append(
                f"{name} {value:.2f} [{scores.get(f'eval/{name}/ci_low', math.nan):.2f}, "
                f"{scores.get(f'eval/{name}/ci_high', math.nan):.2f}]"
            )
        elif key == "eval/exploitability/mean":
            parts.append(
                f"exploitability {value:.4g} (min {scores.get('eval/exploitability/min', math.nan):.4g}, "
                f"max {scores.get('eval/exploitability/max', math.nan):.4g})"
            )
    return f"eval step {step}: " + " | ".join(parts) if parts else None


class Progress:
    def __init__(self, total_steps: int, start_step: int, enabled: bool = True, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.live = enabled and self.stream.isatty()
        self.total, self.start = total_steps, start_step
        self.t0 = time.perf_counter()
        self.every = max(1, total_steps // 20)
        self.shown_eval: dict = {}
        self.status = ""

    @property
    def bar(self):  # callers that wrote through the former tqdm bar: `progress.bar.write(line)`
        return self

    def _width(self) -> int:
        return min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns) if self.live else WIDTH

    def write(self, line: str, file=None) -> None:
        """A line of its own, above the status line (written also when the display is off:
        the supervisor's messages go through here)."""
        if self.live and self.status:
            self.stream.write("\r\033[K" + line + "\n" + self.status)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def update(self, step: int, loss: dict, stats: dict, positions_per_s: float, last_eval: dict) -> None:
        if not self.enabled:
            return
        if last_eval and last_eval is not self.shown_eval:  # a new evaluation (a new dict), even with equal scores
            self.shown_eval = last_eval
            line = evaluation_line(step, last_eval)
            if line:
                self.write(line)
        done = step - self.start
        left = (time.perf_counter() - self.t0) / done * (self.total - step) if done > 0 else math.nan
        head = [f"step {step}/{self.total}", f"{readable(stats['games'])} games {readable(stats['positions'])} pos"]
        eta = [f"ETA {duration(left)}"] if math.isfinite(left) else []
        short_loss = f"loss {loss['loss/total']:.3f}"
        full_loss = f"{short_loss} (v {loss['loss/value']:.3f} pi {loss['loss/policy']:.3f})"
        speed = f"{readable(positions_per_s)} pos/s"
        extra = [
            f"{short} {readable(loss[key])}"
            for key, short in (
                ("ray/weight_staleness", "stale"),
                ("ray/worker_failures", "fail"),
                ("ray/queue", "queue"),
            )
            if key in loss
        ]
        width = self._width()
        # the least needed go first when the line is too long: Ray's counters, the speed, the loss's parts
        for parts in (
            head + [full_loss, speed] + extra + eta,
            head + [full_loss, speed] + eta,
            head + [full_loss] + eta,
            head + [short_loss] + eta,
        ):
            status = " | ".join(parts)
            if len(status) <= width:
                break
        status = status[:width]
        self.status = status
        if self.live:
            self.stream.write("\r\033[K" + status)
            self.stream.flush()
        elif step % self.every == 0 or step == self.total:
            self.stream.write(status + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.live and self.status:
            self.stream.write("\n")
            self.stream.flush()
        self.status = ""
