"""README.md runs ``make up`` first and its tour beside it, then the quickstart's own page beside
the same ``make up``; when both are done, the quickstart's results must still be exact — the tour
must never touch the quickstart."""

from __future__ import annotations

import time
from pathlib import Path

from tests.docs.conftest import QUICKSTART_ORDERS
from tests.docs.script import Session, run_page
from tests.e2e.test_quickstart import expected, in_parquet, in_sqlite


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
