"""Java ``.properties`` files, read as ``java.util.Properties`` reads them.

The broker reads its ``server.properties`` (:mod:`sluice.broker.config`) and Connect's
``FileConfigProvider`` its secret files (:mod:`sluice.connect.runtime.config_providers`) through
:func:`read_properties`; each keeps its own meaning of the keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from sluice.errors import ConfigError

__all__ = ["read_properties"]


def read_properties(path: Path) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line, key, value)`` from a Java ``.properties`` file.

    Comments (``#``, ``!``), ``key=value``, ``key: value`` and ``key value`` forms and
    backslash line continuations are understood, as ``java.util.Properties`` does.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(path)) from None
    i = 0
    while i < len(lines):
        start = i + 1
        text = lines[i].lstrip()
        while text.endswith("\\") and not text.endswith("\\\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + lines[i].lstrip()
        i += 1
        if not text or text[0] in "#!":
            continue
        cut = min(
            (p for p in (text.find("="), text.find(":"), text.find(" ")) if p >= 0), default=-1
        )
        if cut < 0:
            raise ConfigError("expected key=value", source=str(path), line=start)
        key, value = text[:cut].strip(), text[cut + 1 :].strip()
        if value[:1] in "=:" and text[cut] == " ":
            value = value[1:].strip()
        yield start, key, value
