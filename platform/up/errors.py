"""The error ``sluice up`` stops with (or, on a reload, does not apply the file with): a part
that could not be started or configured. The supervisor (:mod:`sluice.up.supervisor`) raises it
and so does what it delegates to (:mod:`sluice.up.schema_services`).

>>> isinstance(UpError("the broker at 127.0.0.1:9092 did not answer in 90 s"), SluiceError)
True
"""

from __future__ import annotations

from sluice.errors import SluiceError

__all__ = ["UpError"]


class UpError(SluiceError):
    """A part could not be started or configured (the message says which and why)."""
