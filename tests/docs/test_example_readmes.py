"""Every example's README.md runs as written, each from its own ``make broker`` (the spark
pipeline's and the cluster's pages have files of their own; README.md's test runs the
quickstart's page)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.conftest import ROOT, run_example_page

SEPARATE = {"cluster", "quickstart", "spark_pipeline"}
EXAMPLES = sorted(
    readme.parent.name
    for readme in (ROOT / "examples").glob("*/README.md")
    if readme.parent.name not in SEPARATE
)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_readme_runs_as_written(example: str, clone: Path, tmp_path: Path) -> None:
    run_example_page(example, clone, tmp_path)
