"""examples/spark_pipeline/README.md runs as written (the slowest page: a file of its own, so
that ``make test`` runs it beside the other pages)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.conftest import run_example_page


@pytest.mark.timeout(600)
def test_the_spark_pipeline_readme_runs_as_written(clone: Path, tmp_path: Path) -> None:
    run_example_page("spark_pipeline", clone, tmp_path)
