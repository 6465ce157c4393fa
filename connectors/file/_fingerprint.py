"""File identity by content: a hash of the first bytes, so a renamed or copied file is recognised.

An inode alone cannot tell files apart (a deleted file's inode is reused, a copy has a new one);
the first :data:`FINGERPRINT_BYTES` bytes of a log file (timestamps, a header) almost always can.
A file shorter than that — or read only up to ``position`` — is fingerprinted over its first
``min(FINGERPRINT_BYTES, position)`` bytes, so the fingerprint stored with an offset can be
checked against any file that has at least ``position`` bytes.

>>> fingerprint(b"2024-01-01 start\\n")
'2da4007e1883c2f85883fbe6287a8464'
>>> len(fingerprint(b"")), fingerprint(b"a" * 5000) == fingerprint(b"a" * 1024)
(32, True)
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["FINGERPRINT_BYTES", "fingerprint", "fingerprint_fd", "fingerprint_path"]

FINGERPRINT_BYTES = 1024
"""How many leading bytes identify a file."""


def fingerprint(head: bytes) -> str:
    """The fingerprint (32 hex digits, BLAKE2b-128) of the first bytes of a file."""
    return hashlib.blake2b(head[:FINGERPRINT_BYTES], digest_size=16).hexdigest()


def fingerprint_fd(fd: int, position: int) -> str | None:
    """The fingerprint of an open file's first ``min(FINGERPRINT_BYTES, position)`` bytes.

    None when the file is shorter than that (it cannot be the file the offset was taken from).
    """
    length = min(FINGERPRINT_BYTES, position)
    head = os.pread(fd, length, 0)
    return fingerprint(head) if len(head) == length else None


def fingerprint_path(path: str, position: int) -> str | None:
    """:func:`fingerprint_fd` of the file at ``path`` (None when it cannot be read)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return fingerprint_fd(fd, position)
    except OSError:
        return None
    finally:
        os.close(fd)
