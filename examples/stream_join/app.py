"""Which ad impressions were clicked: a windowed left join of two streams.

Inputs (keys are impression ids, values JSON):

- ``ad-impressions``: an ad was shown, ``{"ad": "ad-7", "user": "alice"}``;
- ``ad-clicks``: an impression was clicked, ``{"target": "/shoes"}``.

A click counts for an impression if it comes at most 10 s after it (``JoinWindows.of("10s")``
with ``before(0)``: never before it); records up to 5 s out of order are still joined
(``grace("5s")``). Every impression goes to ``ad-impression-outcomes``:

- with its click, ``{"ad": "ad-7", "user": "alice", "clicked": true, "target": "/shoes"}``, as
  soon as the click is there (one record per click: an impression clicked twice gives two);
- alone, ``{..., "clicked": false, "target": null}``, once its window has closed (stream time
  past its time + 10 s + 5 s) without a click. A left join never emits an unmatched record
  early only to take it back: the wait is what makes the output final.

Run it with ``python examples/stream_join/app.py [BOOTSTRAP]`` (default ``SLUICE_BOOTSTRAP``,
then ``localhost:9092``).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from sluice.dsl import App, JoinWindows

CLICK_WINDOW = JoinWindows.of("10s").before(0).grace("5s")


def outcome(impression: dict[str, Any], click: dict[str, Any] | None) -> dict[str, Any]:
    """The joiner: the impression, whether it was clicked, and where the click led."""
    return {
        **impression,
        "clicked": click is not None,
        "target": None if click is None else click["target"],
    }


def build(
    bootstrap: str,
    *,
    application_id: str = "ad-click-join",
    impressions_topic: str = "ad-impressions",
    clicks_topic: str = "ad-clicks",
    output_topic: str = "ad-impression-outcomes",
    **settings: Any,
) -> App:
    """The join; ``settings`` are :class:`~sluice.dsl.App` keyword arguments."""
    app = App(application_id, bootstrap, **settings)
    impressions = app.stream(impressions_topic)
    clicks = app.stream(clicks_topic)
    impressions.left_join(clicks, outcome, CLICK_WINDOW, name="clicks").to(output_topic)
    return app


def main(argv: list[str]) -> None:
    bootstrap = argv[1] if len(argv) > 1 else os.environ.get("SLUICE_BOOTSTRAP", "localhost:9092")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(bootstrap).run()


if __name__ == "__main__":
    main(sys.argv)
