"""The READMEs are scripts: their ``sh`` blocks run as written, in order, in a fresh copy of the
repository, and print what the text says (``tests/docs/script.py`` reads the pages).

Each page runs in a network namespace of its own, so that pages which all need the broker on
127.0.0.1:9092 (and ``make up``'s ports) can run at once on different ``make test`` workers:
``test_readme.py`` (README.md beside the quickstart's page), ``test_example_spark_pipeline.py``
and ``test_example_readmes.py`` (every other example).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.script import Session, run_page

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parents[1]
QUICKSTART_ORDERS = 60
"""The quickstart's generator stops after this many orders, so its results can be checked."""


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
    """A shell for README.md's page, in a network namespace of its own."""
    environment = user_environment()
    environment["QUICKSTART_ORDERS"] = str(QUICKSTART_ORDERS)
    work = tmp_path / "session"
    work.mkdir()
    opened = Session(clone, work, environment, own_network=True)
    yield opened
    problems = opened.close()
    assert not problems, "\n".join(problems)


def run_example_page(example: str, clone: Path, tmp_path: Path) -> None:
    """Run ``examples/<example>/README.md`` in a shell of its own (its own network namespace)."""
    environment = user_environment()
    # mktemp of the page (pg_sync's throwaway PostgreSQL) goes to a folder removed afterwards;
    # not in tmp_path, which is private to root (pg_sync, as root, runs PostgreSQL as postgres)
    temporary = Path(tempfile.mkdtemp(prefix="sluice-readme-"))
    temporary.chmod(0o755)
    environment["TMPDIR"] = str(temporary)
    work = tmp_path / "session"
    work.mkdir()
    try:
        session = Session(clone, work, environment, own_network=True)
        try:
            run_page(session, clone / "examples" / example / "README.md")
        finally:
            problems = session.close()
        assert not problems, "\n".join(problems)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
