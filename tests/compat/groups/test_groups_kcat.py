"""kcat's balanced consumer (``kcat -G group topic``, librdkafka 2.0): two processes share a topic.

Each kcat prints ``partition offset`` per record; the two outputs together hold every record
exactly once, each kcat only from the partitions the group assigned it; after both exit (close
commits the offsets kcat stored), the group's committed offsets are the end offsets.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.groups.conftest import (
    SESSION_MS,
    ends_of,
    produce,
    wait_until,
)
from tests.compat.harness import committed_offsets
from tests.conftest import create_topic

KCAT = "/usr/bin/kcat"
PARTITIONS = 4


class Kcat:
    def __init__(self, name: str, workdir: Path, bootstrap: str, group: str, topic: str) -> None:
        self.name = name
        self.out = workdir / f"{name}.out"
        self.err = workdir / f"{name}.err"
        self.topic = topic
        cmd = [
            KCAT,
            "-b",
            bootstrap,
            "-G",
            group,
            "-X",
            f"session.timeout.ms={SESSION_MS}",
            "-X",
            "heartbeat.interval.ms=500",
            "-X",
            "auto.commit.interval.ms=500",
            "-o",
            "beginning",
            "-u",
            "-f",
            "%p %o\\n",
            topic,
        ]
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err)

    def assignment(self) -> set[int]:
        """The partitions of its last "rebalanced ... assigned:" line, empty after a revoke."""
        owned: set[int] = set()
        for line in self.err.read_text(errors="replace").splitlines():
            if "rebalanced" not in line:
                continue
            parts = {int(p) for p in re.findall(re.escape(self.topic) + r" \[(\d+)\]", line)}
            owned = parts if "assigned:" in line else owned - parts
        return owned

    def records(self) -> list[tuple[int, int]]:
        text = self.out.read_text()
        lines = text[: text.rfind("\n") + 1].splitlines()  # not a line kcat is still writing
        return [(int(p), int(o)) for p, o in (line.split() for line in lines if line.strip())]

    def describe(self) -> str:
        err = self.err.read_text(errors="replace")[-1500:]
        return (
            f"{self.name}: owns {sorted(self.assignment())}, {len(self.records())} records\n{err}"
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self.name} ignored SIGTERM for 15s") from None
        return int(self.proc.returncode)


@pytest.fixture
def kcats(tmp_path: Path) -> Iterator[list[Kcat]]:
    started: list[Kcat] = []
    yield started
    for k in started:
        if k.proc.poll() is None:
            k.proc.kill()
            k.proc.wait()


def test_two_kcat_share_a_topic(
    kcats: list[Kcat], tmp_path: Path, bootstrap: str, group_id: str
) -> None:
    topic = create_topic(bootstrap, PARTITIONS)
    kcats += [Kcat(name, tmp_path, bootstrap, group_id, topic) for name in ("kcat1", "kcat2")]

    def balanced() -> bool:
        owned = [k.assignment() for k in kcats]
        return sorted(map(len, owned)) == [2, 2] and owned[0] | owned[1] == set(range(PARTITIONS))

    wait_until(
        balanced,
        30,
        lambda: (
            f"{PARTITIONS} partitions split 2/2 over two kcat -G\n"
            + "\n".join(k.describe() for k in kcats)
        ),
    )

    produced = produce(bootstrap, topic, dict.fromkeys(range(PARTITIONS), 25))
    wait_until(
        lambda: sum(len(k.records()) for k in kcats) >= len(produced),
        30,
        lambda: (
            f"{sum(len(k.records()) for k in kcats)} of {len(produced)} records consumed\n"
            + "\n".join(k.describe() for k in kcats)
        ),
    )
    everything = [rec for k in kcats for rec in k.records()]
    assert sorted(everything) == sorted(produced), (
        f"the two kcat printed {len(everything)} records ({len(set(everything))} distinct), "
        f"expected each of the {len(produced)} produced exactly once"
    )
    for k in kcats:
        seen = {p for p, _ in k.records()}
        assert seen == k.assignment(), (
            f"{k.name} printed records of partitions {sorted(seen)}, owns {sorted(k.assignment())}"
        )

    for k in kcats:
        code = k.stop()
        assert code == 0, f"{k.name} exited with {code}\n{k.describe()}"
    assert committed_offsets(bootstrap, group_id, topic, PARTITIONS) == ends_of(produced), (
        "after both kcat closed, the committed offsets are not the end offsets"
    )
