"""Glue for Snakemake `script:` rules: logging to the rule's log, clear errors."""

import logging
import sys

from genotile.errors import GenotileError

log = logging.getLogger("genotile")


def run_rule(snakemake, step) -> None:
    """Run `step(snakemake)`, logging to the rule's log file.

    A GenotileError (bad input, bad config) ends the job with its one-line
    message on stderr and in the log; anything else is a bug, logged with its
    traceback and re-raised.
    """
    handler = logging.FileHandler(snakemake.log[0], mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        step(snakemake)
    except GenotileError as exc:
        log.error("%s", exc)
        print(f"genotile error: {exc}", file=sys.stderr)
        sys.exit(1)
    except Exception:
        log.exception("unexpected error in rule %s", snakemake.rule)
        raise
    finally:
        handler.close()
