"""Why a child ended: its exit status in words, the last error line of its log, and the last
lines of its log for a message.

>>> describe_exit(1), describe_exit(-9), describe_exit(0)
('exited 1', 'killed by SIGKILL', 'exited 0')
>>> error_line([
...     "Traceback (most recent call last):",
...     '  File "app.py", line 3, in <module>',
...     "    raise ProcessingError('orders[0]@257: processing failed')",
...     "ProcessingError: orders[0]@257: processing failed",
...     "bye",
... ])
'ProcessingError: orders[0]@257: processing failed'
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from pathlib import Path

__all__ = ["describe_exit", "error_line", "last_error_line", "log_tail", "signal_name"]

_TAIL_BYTES = 64 * 1024
"""How much of a log's end is searched for the last error."""
_LONGEST = 400
"""An error line is cut to this many characters."""
_EXCEPTION = re.compile(
    r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)\b(?::.*)?"
)
"""A Python exception's last line (``module.NameError: message``)."""
_LOGGED = re.compile(r"(?:^|\s|\[)(?:ERROR|CRITICAL|FATAL)(?:\]|:|\s)")
"""A log record of an error level (``2026-01-01 12:00:00 ERROR name: message``)."""
_CLI_ERROR = re.compile(r"(?:error|fatal):\s\S.*", re.IGNORECASE)
"""What the ``sluice`` commands print before they exit (``error: cannot serve ...``)."""


def signal_name(code: int) -> str | None:
    """The name of the signal that ended a process with ``returncode`` ``code`` (negative)."""
    if code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def describe_exit(code: int) -> str:
    """A process's ``returncode`` in words, as ``kubectl describe`` and ``docker ps`` do."""
    name = signal_name(code)
    return f"exited {code}" if name is None else f"killed by {name}"


def error_line(lines: Sequence[str]) -> str | None:
    """The last line of ``lines`` that looks like an error: a traceback's final line, an
    exception line, an ``ERROR``/``CRITICAL`` log record or an ``error: …`` message."""
    found: str | None = None
    in_traceback = False
    for raw in lines:
        line = raw.rstrip()
        if not line:
            continue
        if line.startswith("Traceback (most recent call last):"):
            in_traceback = True
            continue
        if in_traceback and line[0].isspace():
            continue  # a frame of the traceback
        if in_traceback:
            in_traceback = False
            found = line  # the traceback's final line, whatever it looks like
            continue
        stripped = line.strip()
        if _EXCEPTION.fullmatch(stripped) or _LOGGED.search(line) or _CLI_ERROR.match(stripped):
            found = stripped
    if found is None:
        return None
    return found if len(found) <= _LONGEST else found[: _LONGEST - 1] + "…"


def last_error_line(log: Path, start: int = 0) -> str | None:
    """The last error line of ``log`` after byte ``start`` (where the last run began), looking
    at its last 64 KiB at most; None if there is none or the log cannot be read."""
    try:
        with log.open("rb") as file:
            size = file.seek(0, 2)
            begin = max(start, size - _TAIL_BYTES)
            file.seek(begin)
            data = file.read()
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    if begin > start and lines:
        lines = lines[1:]  # the first line read may be cut
    return error_line(lines)


def log_tail(log: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of ``log``, indented (to follow a message), or why there are
    none.

    >>> log_tail(Path("no-such.log"))
    '(no log at no-such.log)'
    """
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"(no log at {log})"
    return "\n".join(f"  {line}" for line in text.splitlines()[-lines:])
