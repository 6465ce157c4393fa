"""examples/cluster/README.md runs as written: three brokers, one killed with ``kill -9`` while
orders flow (a file of its own, so that ``make test`` runs it beside the other pages)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.conftest import run_example_page


@pytest.mark.timeout(600)
def test_the_cluster_readme_runs_as_written(clone: Path, tmp_path: Path) -> None:
    run_example_page("cluster", clone, tmp_path)
