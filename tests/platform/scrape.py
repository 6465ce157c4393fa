"""Scraping a ``/metrics`` endpoint as Prometheus does, for the metrics tests of every part."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families


class Scraped:
    """The samples of one scrape, by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples: list[tuple[str, dict[str, str], float]] = [
            (sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def all(self, name: str, **labels: str) -> list[float]:
        """Values of the samples named ``name`` whose labels include ``labels``."""
        return [
            value
            for sample, have, value in self.samples
            if sample == name and all(have.get(k) == v for k, v in labels.items())
        ]

    def get(self, name: str, **labels: str) -> float:
        """The one sample named ``name`` with ``labels`` (fails naming what is there)."""
        found = self.all(name, **labels)
        assert len(found) == 1, (
            f"expected one sample {name}{labels}, found {found}; samples named so: "
            f"{[(n, lab) for n, lab, _ in self.samples if n == name][:10]}"
        )
        return found[0]

    def total(self, name: str, **labels: str) -> float:
        """The sum of the samples named ``name`` with ``labels``."""
        return sum(self.all(name, **labels))


def scrape(port: int, host: str = "127.0.0.1") -> Scraped:
    """GET ``http://host:port/metrics`` and parse it."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return Scraped(response.read().decode())


def scrape_until(
    port: int, done: Callable[[Scraped], bool], timeout: float = 30.0, what: str = ""
) -> Scraped:
    """Scrape until ``done`` holds (the values settle asynchronously, the endpoint may not be up
    yet); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last = "nothing (the endpoint never answered)"
    while True:
        try:
            scraped = scrape(port)
        except OSError as error:
            last = f"no answer: {error}"
        else:
            if done(scraped):
                return scraped
            last = scraped.text[-2000:]
        if time.monotonic() > deadline:
            raise AssertionError(f"metrics never showed {what or 'the expected values'}: {last}")
        time.sleep(0.2)
