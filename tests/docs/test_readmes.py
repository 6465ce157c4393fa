"""The READMEs are scripts: their ``sh`` blocks run as written, in order, in a fresh copy of the
repository, and print what the text says (``tests/docs/script.py`` reads the pages).

README.md runs ``make up`` first and its tour beside it, then the quickstart's own page beside the
same ``make up``; when both are done, the quickstart's results must still be exact — the tour must
never touch the quickstart. Every other example's page runs on its own, from its own ``make
broker``. Pages that need the broker on 127.0.0.1:9092 run one after the other (one test file:
``make test`` gives a file to one worker).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.script import Session, blocks, output_matches, run_page
from tests.e2e.test_quickstart import expected, in_parquet, in_sqlite

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parents[1]
QUICKSTART_ORDERS = 60
# Every example's page but the quickstart's (README.md's test runs it beside its `make up`).
EXAMPLES = sorted(
    readme.parent.name
    for readme in (ROOT / "examples").glob("*/README.md")
    if readme.parent.name != "quickstart"
)


def fresh_copy(target: Path) -> Path:
    """The repository's files as a clone would have them (committed or new, not ignored), with
    the test's virtualenv linked in as ``.venv`` (already installed: ``make`` installs nothing)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(VENV)
    os.utime(target / "pyproject.toml", (0, 0))  # older than the venv's install stamp
    return target


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    return fresh_copy(tmp_path / "sluice")


def user_environment() -> dict[str, str]:
    """Our environment as a user's shell would have it: no virtualenv active, no pytest."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH") and not key.startswith("PYTEST")
    }
    venv_bin = str(VENV / "bin")
    environment["PATH"] = os.pathsep.join(
        part for part in environment.get("PATH", "").split(os.pathsep) if part != venv_bin
    )
    return environment


@pytest.fixture
def session(clone: Path, tmp_path: Path) -> Iterator[Session]:
    environment = user_environment()
    # the quickstart's generator stops after this many orders, so its results can be checked
    environment["QUICKSTART_ORDERS"] = str(QUICKSTART_ORDERS)
    work = tmp_path / "session"
    work.mkdir()
    opened = Session(clone, work, environment)
    yield opened
    problems = opened.close()
    assert not problems, "\n".join(problems)


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


def test_the_readme_runs_beside_the_quickstart_and_leaves_it_exact(
    clone: Path, session: Session
) -> None:
    run_page(session, clone / "README.md")
    # the quickstart's own page, beside the same `make up`
    run_page(session, clone / "examples" / "quickstart" / "README.md")
    # the generator has stopped after QUICKSTART_ORDERS orders: every one counted once
    deadline = time.monotonic() + 180
    want = expected(clone)
    while time.monotonic() < deadline:
        if in_sqlite(clone) == want and _parquet_totals(clone) == want:
            break
        time.sleep(1)
    assert sum(count for _, count in want.values()) == QUICKSTART_ORDERS
    assert in_sqlite(clone) == want
    assert _parquet_totals(clone) == want


def _parquet_totals(folder: Path) -> dict[tuple[str, int], tuple[float, int]]:
    return {key: (round(revenue, 2), count) for key, (revenue, count) in in_parquet(folder).items()}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_readme_runs_as_written(example: str, clone: Path, tmp_path: Path) -> None:
    environment = user_environment()
    # mktemp of the page (pg_sync's throwaway PostgreSQL) goes to a folder removed afterwards;
    # not in tmp_path, which is private to root (pg_sync, as root, runs PostgreSQL as postgres)
    temporary = Path(tempfile.mkdtemp(prefix="sluice-readme-"))
    temporary.chmod(0o755)
    environment["TMPDIR"] = str(temporary)
    work = tmp_path / "session"
    work.mkdir()
    try:
        session = Session(clone, work, environment)
        try:
            run_page(session, clone / "examples" / example / "README.md")
        finally:
            problems = session.close()
        assert not problems, "\n".join(problems)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
