"""How ``tests/docs/script.py`` reads a page and runs it (no broker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.script import Session, blocks, output_matches, run_page


def test_blocks_are_read_with_their_expectations(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```sh\nmake up   # keeps going\nmake test\n```\n<!-- wait: running -->\n\n"
        "```sh\necho 'a b' \\\n  | cat\ncat > f <<'X'\nline\nX\n"
        "cat f   # in another terminal\n```\n"
        "<!-- retry -->\n\n```\na …\n```\n<!-- expect: ^line$ -->\n\n```python\nx = 1\n```\n"
    )
    first, second = blocks(page)
    assert [c.text for c in first.commands] == ["make up   # keeps going", "make test"]
    assert [c.background for c in first.commands] == [True, False]
    assert [c.skipped for c in first.commands] == [False, True]
    assert first.wait == ["running"]
    assert [c.text for c in second.commands] == [
        "echo 'a b' \\\n  | cat",
        "cat > f <<'X'\nline\nX",
        "cat f   # in another terminal",
    ]
    assert [c.line for c in second.commands] == [10, 12, 15]
    assert second.commands[2].background
    assert second.retry and second.prints == ["a …"] and second.expect == ["^line$"]
    assert output_matches("a b\nline\n", second) == []
    assert output_matches("b\n", second) == ["a line like 'a …'", "output matching '^line$'"]


def test_a_continued_command_keeps_running_by_the_comment_of_its_last_line(
    tmp_path: Path,
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\nsluice connect standalone x.yaml \\\n  -X a=b   # Ctrl-C stops it\n"
        "sluice topics create \\\n  lines   # makes lines\n```\n"
    )
    (block,) = blocks(page)
    assert [c.background for c in block.commands] == [True, False]


def test_a_page_runs_in_one_shell_and_a_failure_names_its_line(
    session: Session, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\nmkdir -p sub && cd sub\nexport GREETING=hello\n```\n\n"
        "```sh\necho $GREETING from $(basename $PWD)\n```\n\n```\nhello from sub\n```\n\n"
        "```sh\nfalse\n```\n"
    )
    with pytest.raises(AssertionError, match=r"page.md:15: 'false' exited with 1"):
        run_page(session, page)
