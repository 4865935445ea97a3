"""A one-line progress bar on stderr, redrawn at most a few times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``update(done, note)`` redraws ``[phase] ████░░░░ done/total note``.

    On a terminal the line is redrawn in place; otherwise a line is written
    every few seconds, so a CI log shows the run advancing without flooding.
    ``Progress(enabled=False)`` draws nothing.
    """

    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True, width: int = 24) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._every = 0.1 if self.tty else 5.0
        self._last = 0.0
        self._phase = ""
        self._total = 0
        self._drawn = False

    def start(self, phase: str, total: int) -> None:
        self.finish()
        self._phase, self._total, self._last = phase, total, 0.0

    def update(self, done: int, note: str = "", *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self._every:
            return
        self._last = now
        total = max(self._total, 1)
        filled = min(self.width, self.width * done // total)
        bar = "█" * filled + "░" * (self.width - filled)
        line = f"[{self._phase}] {bar} {done:,}/{self._total:,} {note}"
        if self.tty:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self.enabled and self._drawn and self.tty:
            self.stream.write("\n")
            self.stream.flush()
        self._drawn = False
