"""Progress of long steps: a bar on a terminal, plain lines in a log.

Plain lines (to the `genotile` logger, so into a Snakemake rule's log file)
come at most every few seconds. When the logger writes to a terminal, a bar
redrawn in place replaces them.
"""

import logging
import sys
import time

log = logging.getLogger("genotile")


def _on_terminal() -> bool:
    handlers = log.handlers or logging.getLogger().handlers
    streams = [getattr(h, "stream", None) for h in handlers if not isinstance(h, logging.FileHandler)]
    return any(s is not None and hasattr(s, "isatty") and s.isatty() for s in streams)


class Progress:
    def __init__(self, what: str, total: int | None = None, every: float = 5.0):
        self.what, self.total, self.every = what, total, every
        self.start = self.last = time.monotonic()
        self.bar = _on_terminal() and log.isEnabledFor(logging.INFO)  # no bar under --quiet

    def update(self, done: int) -> None:
        now = time.monotonic()
        if self.bar:
            if now - self.last >= 0.2:
                self.last = now
                self._draw(done, now)
            return
        if now - self.last >= self.every:
            self.last = now
            of = f"/{self.total}" if self.total else ""
            log.info("%s: %d%s (%.0f s)", self.what, done, of, now - self.start)

    def _draw(self, done: int, now: float) -> None:
        if self.total:
            frac = min(done / self.total, 1.0)
            bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
            text = f"\r{self.what} [{bar}] {done}/{self.total} ({now - self.start:.0f} s)"
        else:
            text = f"\r{self.what}: {done} ({now - self.start:.0f} s)"
        sys.stderr.write(text)
        sys.stderr.flush()

    def finish(self, done: int) -> float:
        elapsed = time.monotonic() - self.start
        if self.bar:
            sys.stderr.write("\r\033[K")
        log.info("%s: %d done in %.2f s", self.what, done, elapsed)
        return elapsed
