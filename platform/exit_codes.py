"""How a ``sluice`` command ends: its exit code, and the error that carries one.

Exit codes: 0 success; 1 the operation failed (the broker refused, is unreachable, a record was
not delivered); 2 the command line or a configuration file is wrong; 130 interrupted (Ctrl-C).
The CLI's commands (:mod:`sluice.cli`) and the supervisor behind ``sluice up``
(:mod:`sluice.up`) both raise :class:`CliError`; ``sluice.cli.main()`` prints it and exits
with its code.

>>> error = CliError("no such topic: orders")
>>> error.message, error.exit_code
('no such topic: orders', 1)
"""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_USAGE", "CliError"]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """An error the user can act on: ``main()`` prints ``error: <message>``, no traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
