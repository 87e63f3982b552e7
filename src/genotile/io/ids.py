"""Vector IDs (sequence, sample and variant names) that keep the TSV outputs parseable.

Outputs write IDs verbatim, tab-separated, one row per line, UTF-8, no quoting. So an ID
must be UTF-8 text, not empty, and free of control characters (tab, CR, LF and the rest
of U+0000-U+001F, U+007F): one would split a column or a row. Spaces are allowed (only a
VCF sample or variant ID can hold one; a FASTA ID ends at the first whitespace), and so
are quotes and '#': read the outputs as plain tab-separated text with quoting off (e.g.
pandas `read_csv(sep="\\t", quoting=csv.QUOTE_NONE, keep_default_na=False)`).
"""

import re

from genotile.errors import GenotileError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_id(name: bytes | str, path, where: str, what: str = "ID") -> str:
    """`name` as text, or a GenotileError naming the file, the place (record, column) and the problem."""
    if isinstance(name, bytes):
        try:
            text = name.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GenotileError(
                f"{path}: {where}: {what} {name!r} is not UTF-8 text "
                f"(byte 0x{name[exc.start]:02x} at position {exc.start + 1})"
            ) from None
    else:
        text = name
    if not text:
        raise GenotileError(f"{path}: {where} has an empty {what}")
    bad = _CONTROL.search(text)
    if bad:
        raise GenotileError(
            f"{path}: {where}: {what} {text!r} holds a control character "
            f"({bad.group()!r} at position {bad.start() + 1}); IDs are written to "
            "tab-separated outputs as they are"
        )
    return text


def check_ids(names, path, what: str) -> None:
    """Every name of a list (e.g. VCF samples); the place named is its position in the list."""
    if all(names) and not _CONTROL.search("".join(names)):  # the common case, at C speed
        return
    for k, name in enumerate(names, start=1):
        check_id(name, path, f"{what} {k}", what=f"{what} ID")


def check_unique(names, path, what: str, order: str = "", hint: str = "") -> None:
    """No name twice: the first repeat is refused, naming both positions (1-based; `order` says
    in what order they count) and then `hint`."""
    if len(set(names)) == len(names):  # the common case, at C speed
        return
    first: dict[str, int] = {}
    for k, name in enumerate(names, start=1):
        if name in first:
            raise GenotileError(f"{path}: duplicate {what} ID {name!r} ({what}s {first[name]} and {k}{order}){hint}")
        first[name] = k
