"""Progress lines for long steps: at most one every few seconds, to the log."""

import logging
import time

log = logging.getLogger("genotile")


class Progress:
    def __init__(self, what: str, total: int | None = None, every: float = 5.0):
        self.what, self.total, self.every = what, total, every
        self.start = self.last = time.monotonic()

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            of = f"/{self.total}" if self.total else ""
            log.info("%s: %d%s (%.0f s)", self.what, done, of, now - self.start)

    def finish(self, done: int) -> float:
        elapsed = time.monotonic() - self.start
        log.info("%s: %d done in %.2f s", self.what, done, elapsed)
        return elapsed
