"""The bar a long scan draws on a terminal: pages read of those estimated, their rate,
and the time left at that rate, redrawn in place on one line."""

from __future__ import annotations

from typing import TextIO

WIDTH = 36  # characters of the bar between its brackets


class ProgressBar:
    """Draws `label (R pages/s)  [###---]  25%  1500/6000  00:00:12` on `out`, a
    terminal, each time `draw` is called; `close` ends the line."""

    def __init__(self, total: int, out: TextIO, label: str = "scanning") -> None:
        self.total = max(total, 1)
        self.out = out
        self.label = label

    def draw(self, pages: int, rate: float) -> None:
        """Redraw the line for `pages` read at `rate` pages a second."""
        share = min(pages / self.total, 1.0)
        filled = int(share * WIDTH)
        bar = "#" * filled + "-" * (WIDTH - filled)
        # Erasing to the end of the line: a shorter line leaves nothing of the last one.
        self.out.write(
            f"\r{self.label} ({rate:.0f} pages/s)  [{bar}]  {share:4.0%}  "
            f"{pages}/{self.total}  {_time_left(self.total - pages, rate)}\x1b[K"
        )
        self.out.flush()

    def close(self) -> None:
        """End the bar's line."""
        self.out.write("\n")
        self.out.flush()


def _time_left(pages: int, rate: float) -> str:
    """Return HH:MM:SS for `pages` at `rate` a second, or --:--:-- without a rate."""
    if rate <= 0:
        return "--:--:--"
    minutes, seconds = divmod(round(max(pages, 0) / rate), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02}:{minutes:02}:{seconds:02}"
