"""Validators and small helpers shared by the file connectors' settings.

>>> known_encoding("encoding", "utf-8")
>>> known_encoding("encoding", "utf-9")
Traceback (most recent call last):
...
ValueError: unknown encoding 'utf-9'
"""

from __future__ import annotations

import codecs
from typing import Any

__all__ = ["known_encoding"]


def known_encoding(name: str, value: Any) -> None:
    """A ConfigDef validator: ``value`` names a codec Python knows."""
    try:
        codecs.lookup(value)
    except LookupError:
        raise ValueError(f"unknown encoding {value!r}") from None
