"""Exceptions shared by every part of Sluice.

The tree::

    SluiceError
    ├── ConfigError            a configuration value or file is wrong (names file, line, key)
    └── StorageError           the log could not be read or written (disk full, I/O error)
        └── CorruptRecordError a record batch failed validation (bad CRC, bad length)

Kafka's own wire-level errors are not exceptions here: the broker answers them as error codes.
"""

from __future__ import annotations


class SluiceError(Exception):
    """Base class of every error Sluice raises on purpose."""


class ConfigError(SluiceError):
    """A configuration value is invalid.

    The message names where the value came from, so that a user can fix it:

    >>> error = ConfigError("must be an integer", key="num.partitions", source="b.props", line=3)
    >>> str(error)
    'b.props:3: num.partitions: must be an integer'
    """

    def __init__(
        self,
        message: str,
        *,
        key: str | None = None,
        source: str | None = None,
        line: int | None = None,
    ) -> None:
        self.key = key
        self.source = source
        self.line = line
        self.reason = message
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        prefix = f"{key}: " if key is not None else ""
        super().__init__(f"{where}{prefix}{message}")


class StorageError(SluiceError):
    """The log could not be read or written (for example, the disk is full)."""


class CorruptRecordError(StorageError):
    """A record batch failed validation: bad CRC, bad length or a torn write."""
