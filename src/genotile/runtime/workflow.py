"""The Snakemake workflow's own process: its user errors said in one line, one run per directory.

A GenotileError raised while Snakemake parses the workflow (the config's checks in
rules/common.smk) or builds its DAG (an input function: a peer format past dense_max, a ccc3 plan
refused) would reach Snakemake, which prints it with the file, line and traceback of the
Snakefile (or as an InputFunctionException report). Here it is printed as the one
`genotile error: ...` line a job's error is (runtime/rule.py) and the process exits 1: SystemExit
passes Snakemake's handlers, which catch Exception, so nothing else is printed.

Snakemake's own lock (.snakemake/locks) is taken after the DAG is built, checked and written in
two steps: two runs started together can both find no lock and both write theirs, and then run
the same jobs over each other's files. `hold_run_lock` takes an exclusive flock at the start of
the run's execution (the Snakefile's onstart, before any hook or job touches a file); the kernel
releases it when the process ends, however it ends, so it never goes stale.
"""

import errno
import fcntl
import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn, TypeVar

from genotile.errors import GenotileError

RUN_LOCK = Path(".snakemake/genotile/run.lock")
_held: int | None = None  # the descriptor holding RUN_LOCK, for the life of the process

F = TypeVar("F", bound=Callable)


def refuse(message) -> NoReturn:
    """Print `genotile error: <message>` on stderr and end the process with status 1."""
    print(f"genotile error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """A GenotileError inside is `refuse`d: one line, status 1."""
    try:
        yield
    except GenotileError as exc:
        refuse(exc)


def one_line(func: F) -> F:
    """`func` (an input, params or resources function of a rule) with its GenotileError said in
    one line instead of Snakemake's InputFunctionException report."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with one_line_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def schema_error(exc: BaseException) -> GenotileError:
    """The config schema's refusal (Snakemake's WorkflowError around a jsonschema
    ValidationError) as one line: the key's path in the config and what is wrong with it."""
    cause: BaseException | None = exc
    while cause is not None:  # Snakemake raises its WorkflowError while handling jsonschema's
        path = getattr(cause, "absolute_path", None)
        message = getattr(cause, "message", None)
        if path is not None and message is not None:
            key = ".".join(str(k) for k in path) or "(the whole config)"
            return GenotileError(f"config: {key}: {message}")
        cause = cause.__cause__ or cause.__context__
    return GenotileError(f"config: {exc}")


SCHEMA_CACHE = Path(".snakemake/genotile/schema")


def validate_config(config: dict, schema_file, cache: Path = SCHEMA_CACHE) -> None:
    """`snakemake.utils.validate(config, schema_file)` as the workflow called it: the config
    checked against the JSON schema, each object's missing keys set to their schema `default`,
    a refusal `schema_error`'s one line; with the schema read once per content of its file.

    Snakemake reads the YAML schema with its own YAML loader (yte) on every parse: 0.12 s of the
    2-core VM's ~0.25 s parse, the import of yte and the pure-Python YAML parse of 10 kB. Here it
    is read so once, then kept as JSON in `cache` (beside the fingerprints: a dry run or a
    refused config leaves nothing in results/) under its content's SHA-256, and the validator
    Snakemake builds (Draft 2020-12, `properties` setting defaults first) is built from it:
    the same checks, defaults and messages (tests/workflow/test_config_validation.py)."""
    from jsonschema import Draft202012Validator, ValidationError, validators  # type: ignore[import-untyped]

    schema = _schema(Path(schema_file), Path(cache))
    validate_properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, subschema):  # as Snakemake's validate
        for name, sub in properties.items():
            if "default" in sub:
                instance.setdefault(name, sub["default"])
        yield from validate_properties(validator, properties, instance, subschema)

    with_defaults = validators.extend(Draft202012Validator, {"properties": set_defaults})
    try:
        with_defaults(schema).validate(config)
    except ValidationError as exc:
        raise schema_error(exc) from None


def _schema(path: Path, cache: Path) -> dict:
    """The schema in `path` as Snakemake reads it (JSON, else YAML through yte), kept as JSON in
    `cache` by the file's SHA-256; read from there while the content is the same."""
    import hashlib
    import json

    text = path.read_bytes()
    kept = cache / f"{hashlib.sha256(text).hexdigest()}.json"
    try:
        return json.loads(kept.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    from snakemake.common.configfile import load_configfile

    schema = json.loads(json.dumps(load_configfile(str(path))))  # plain dicts, as from YAML
    try:
        from genotile.util.atomic import write_text

        kept.parent.mkdir(parents=True, exist_ok=True)
        write_text(kept, json.dumps(schema) + "\n")
    except OSError:
        pass
    return schema


def hold_run_lock(enabled: bool = True, path: Path = RUN_LOCK) -> None:
    """Take the directory's run lock for this process, or refuse the run in one line.

    Called by the Snakefile's onstart, which Snakemake runs once the DAG is built and before
    any job starts (not for a dry run, nor in a cluster job, which runs with --no-hooks); a
    second call in the process does nothing. `enabled` False (`snakemake --nolock`) takes none.
    """
    global _held
    if not enabled or _held is not None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            refuse(
                f"another Snakemake run is working in {Path.cwd()} (it holds {path}): this one "
                "started nothing; run it again once the other has finished"
            )
        refuse(f"{path}: cannot lock it ({exc.strerror}); a file system without locks needs --nolock")
    _held = fd
