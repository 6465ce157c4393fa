"""docs/grafana/sluice-cluster.json imports into Grafana (a ``${DS_PROMETHEUS}`` input that every
panel uses) and every metric its panels query is one a running broker serves on ``/metrics``."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

from tests.broker.conftest import metered  # noqa: F401 - the fixture, used by name
from tests.conftest import BrokerProcess

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "sluice-cluster.json"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
METRIC = re.compile(r"\bkafka_[a-z0-9_]+\b")
WANTED = (  # what an operator of a cluster watches first (docs/operations.md, "What to watch")
    "Under-replicated partitions",
    "Offline partitions",
    "Active controllers",
    "ISR shrinks / expands per second",
    "Leaders per broker",
    "Partitions per broker",
    "Bytes in / out (clients)",
    "Replication bytes in / out",
    "Request latency (p99)",
)


def panels() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["__inputs"] == [
        {
            "name": "DS_PROMETHEUS",
            "label": "Prometheus",
            "description": "The Prometheus that scrapes the brokers' /metrics",
            "type": "datasource",
            "pluginId": "prometheus",
            "pluginName": "Prometheus",
        }
    ]
    found: list[dict[str, Any]] = dashboard["panels"]
    return found


def served_names(text: str) -> set[str]:
    """Every series name a Prometheus scraping ``text`` stores (a histogram's ``_bucket``,
    ``_sum`` and ``_count``; a counter under its ``_total`` name)."""
    names = set()
    for line in text.splitlines():
        typed = re.match(r"# TYPE (\S+) (\S+)$", line)
        if typed:
            name, kind = typed.groups()
            names.add(name)
            if kind == "histogram":
                names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
            if kind == "counter" and not name.endswith("_total"):
                names.add(f"{name}_total")
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def test_every_panel_uses_the_prometheus_input_and_the_wanted_ones_are_there() -> None:
    titles = [panel["title"] for panel in panels()]
    assert set(WANTED) <= set(titles), f"missing: {set(WANTED) - set(titles)}"
    assert len(set(titles)) == len(titles), titles
    for panel in panels():
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
            assert METRIC.search(target["expr"]), (panel["title"], target["expr"])
    ids = [panel["id"] for panel in panels()]
    assert len(set(ids)) == len(ids), ids


def test_every_metric_a_panel_queries_is_served_by_a_broker(
    metered: tuple[BrokerProcess, int],  # noqa: F811 - the fixture imported above
) -> None:
    _, port = metered
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        served = served_names(response.read().decode())
    queried = {
        name
        for panel in panels()
        for target in panel["targets"]
        for name in METRIC.findall(target["expr"])
    }
    assert queried, "no metric queried"
    assert queried <= served, f"queried but not served: {sorted(queried - served)}"
