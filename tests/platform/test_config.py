"""Java ``.properties`` files, read as ``java.util.Properties`` reads them."""

from __future__ import annotations

from pathlib import Path

from sluice.config import read_properties


def test_properties_forms_comments_and_continuations(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\n\nnum.partitions=3\nlog.dirs: /data/a,/data/b\n"
        "log.retention.hours 2\nlisteners=PLAINTEXT://127.0.0.1:\\\n   9093\n"
    )
    entries = {key: (line, value) for line, key, value in read_properties(path)}
    assert entries["num.partitions"] == (4, "3")
    assert entries["log.dirs"] == (5, "/data/a,/data/b")
    assert entries["log.retention.hours"] == (6, "2")
    assert entries["listeners"] == (7, "PLAINTEXT://127.0.0.1:9093")
