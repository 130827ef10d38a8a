"""Progress of a sampling run, shown where the user is looking: an HTML table that updates in
place in Jupyter, one line redrawn on a terminal, a line every 10% otherwise (logs, CI), as
the CLI's progress does. It only reads the run's counters, so it never changes the draws."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class Progress:
    """Shows per-chain states `(iteration, warmup, divergences)` of a run of `chains` chains
    with `warmup` + `draws` iterations each.

    :param mode: ``"auto"`` (Jupyter, else a terminal line, else 10% lines), ``"notebook"``,
        ``"terminal"``, ``"lines"`` or ``"off"``.
    """

    def __init__(
        self,
        chain_ids: list[int],
        warmup: int,
        draws: int,
        mode: str = "auto",
        stream: Optional[TextIO] = None,
    ) -> None:
        self.chain_ids = chain_ids
        self.warmup = warmup
        self.total = max(warmup + draws, 1)
        self.stream = stream if stream is not None else sys.stderr
        if mode == "auto":
            if _in_notebook():
                mode = "notebook"
            elif getattr(self.stream, "isatty", lambda: False)():
                mode = "terminal"
            else:
                mode = "lines"
        self.mode = mode
        self.start = time.monotonic()
        self.last_decile = -1
        self.handle = None
        self.last_text = ""

    def _fraction(self, states) -> float:
        done = sum(min(it, self.total) for it, _, _ in states)
        return done / (self.total * max(len(states), 1))

    def _summary(self, states) -> str:
        fraction = self._fraction(states)
        divergent = sum(d for it, warm, d in states if not warm)
        in_warmup = sum(1 for it, warm, _ in states if warm and it < self.total)
        phase = f"{in_warmup} in warmup" if in_warmup else "sampling"
        if fraction >= 1:
            phase = "done"
        elapsed = time.monotonic() - self.start
        text = (
            f"{len(states)} chains: {100 * fraction:3.0f}% ({phase}), "
            f"{divergent} divergent after warmup, {elapsed:.1f} s"
        )
        return text

    def _html(self, states) -> str:
        rows = []
        for chain_id, (it, warm, divergent) in zip(self.chain_ids, states):
            fraction = min(it, self.total) / self.total
            phase = "warmup" if warm and it < self.total else "sampling"
            if it >= self.total:
                phase = "done"
            color = "#c0392b" if divergent and not warm else "#2e86c1"
            rows.append(
                f"<tr><td>chain {chain_id}</td>"
                f"<td><div style='width:12em;background:#ddd'>"
                f"<div style='width:{100 * fraction:.1f}%;background:{color};height:0.8em'>"
                f"</div></div></td><td>{it}/{self.total}</td><td>{phase}</td>"
                f"<td>{divergent} divergent</td></tr>"
            )
        elapsed = time.monotonic() - self.start
        return (
            "<table style='font-family:monospace'>"
            + "".join(rows)
            + f"</table><div style='font-family:monospace'>{elapsed:.1f} s</div>"
        )

    def update(self, states) -> None:
        """Shows the current states (called a few times a second)."""
        if self.mode == "off":
            return
        if self.mode == "notebook":
            from IPython.display import HTML, display

            html = HTML(self._html(states))
            if self.handle is None:
                self.handle = display(html, display_id=True)
            else:
                self.handle.update(html)
        elif self.mode == "terminal":
            text = self._summary(states)
            pad = " " * max(len(self.last_text) - len(text), 0)
            self.stream.write("\r" + text + pad)
            self.stream.flush()
            self.last_text = text
        else:
            decile = int(10 * self._fraction(states))
            if decile > self.last_decile:
                self.last_decile = decile
                self.stream.write(self._summary(states) + "\n")
                self.stream.flush()

    def message(self, text: str) -> None:
        """A message from a chain (a rejected proposal; the run rate-limits them)."""
        if self.mode == "off":
            return
        if self.mode == "terminal" and self.last_text:
            self.stream.write("\n")
            self.last_text = ""
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self, states, message: str = "") -> None:
        """The final state, and a closing message."""
        if self.mode == "off":
            return
        self.update(states)
        if self.mode == "terminal":
            self.stream.write("\n")
        if message:
            if self.mode == "notebook":
                from IPython.display import display

                display(message)
            else:
                self.stream.write(message + "\n")
        self.stream.flush()
