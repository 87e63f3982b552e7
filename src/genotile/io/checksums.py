"""Checksums of files: the SHA-256 that manifests, summaries and fingerprints record."""

import hashlib

READ = 1 << 22  # bytes read at a time


def file_sha256(path) -> str:
    """The SHA-256 of a file's content, as hex (what `sha256sum` prints).

    Parameters
    ----------
    path : str or os.PathLike
        A readable file.

    Returns
    -------
    str
        64 hex digits.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(READ), b""):
            digest.update(chunk)
    return digest.hexdigest()
