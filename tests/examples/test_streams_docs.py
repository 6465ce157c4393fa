"""The code of ``docs/streams.md`` runs as written.

``>>>`` examples run as doctests. Every other ``python`` block runs in order in one namespace
(they use the test driver, no broker), except the blocks that need a running broker — those
calling ``run()``, ``start()`` or ``app.store(`` — which are only compiled.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "streams.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NEEDS_BROKER = (".run()", ".start()", "app.store(")


def blocks() -> list[tuple[int, str]]:
    """``(line number, code)`` of every python block."""
    text = DOC.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]


def test_the_doctests_pass() -> None:
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_every_python_block_runs_or_at_least_compiles() -> None:
    namespace: dict[str, object] = {"__name__": "streams_docs"}
    ran = 0
    for line, code in blocks():
        if ">>>" in code:
            continue
        compiled = compile(code, f"{DOC}:{line}", "exec")
        if any(marker in code for marker in NEEDS_BROKER):
            continue
        try:
            exec(compiled, namespace)
        except Exception as error:
            pytest.fail(f"the block at docs/streams.md:{line} raised {error!r}")
        ran += 1
    assert ran >= 8
