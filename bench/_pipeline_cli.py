"""What every benchmark pipeline script takes: the command line ``_streams_runs`` gives it, and
SIGTERM as the way to stop. Standard library only: quixstreams' scripts run in their own venv.
"""

from __future__ import annotations

import argparse
import signal
from typing import Any

PIPELINES = ("filter", "count", "window")


def pipeline_parser(*, extra_pipelines: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """``PIPELINE --bootstrap --topic --out --group --state-dir [--commit-interval]``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("pipeline", choices=PIPELINES + extra_pipelines)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=not extra_pipelines, default="")
    parser.add_argument("--group", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--commit-interval", type=float, default=5.0)
    return parser


class StopOnTerm:
    """``requested`` turns true at SIGTERM: a hand-written loop's condition."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, _signum: int, _frame: Any) -> None:
        self.requested = True
