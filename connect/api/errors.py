"""Exceptions of the Connect runtime.

The tree (``SluiceError`` and ``ConfigError`` come from :mod:`sluice.errors`)::

    SluiceError
    ├── ConfigError             a connector, converter or transform setting is wrong (names the key)
    └── ConnectError            base of what Connect raises about data and plugins
        ├── ConverterError      bytes could not become Connect data, or the reverse
        └── TransformError      a single message transform or predicate could not handle a record

``ConverterError`` and ``TransformError`` play the part of Kafka's ``DataException``: they are
about one record, and ``errors.tolerance`` decides whether the task skips it or stops.
"""

from __future__ import annotations

from sluice.errors import SluiceError

__all__ = ["ConnectError", "ConverterError", "TransformError"]


class ConnectError(SluiceError):
    """Base class of the errors the Connect runtime raises on purpose."""


class ConverterError(ConnectError):
    """A converter met malformed input (bad JSON, a value that does not match its schema)."""


class TransformError(ConnectError):
    """A transformation or predicate could not handle a record (wrong type, missing field)."""
