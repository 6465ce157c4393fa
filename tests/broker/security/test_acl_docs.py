"""docs/security.md's table of what each API needs is the code's (``required_acls``)."""

from __future__ import annotations

import re
from pathlib import Path

from sluice.broker.security.required_acls import markdown_table

DOC = Path(__file__).parents[3] / "docs" / "security.md"


def test_the_documented_table_is_the_code_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- required-acls:[^\n]*-->\n(.*?)<!-- /required-acls -->", text, re.S)
    assert found, "docs/security.md has no required-acls table"
    assert found.group(1) == markdown_table(), (
        "docs/security.md's table differs from required_acls.REQUIRED: paste "
        "markdown_table()'s output between the markers"
    )
