"""kcat (librdkafka 2.0, an older librdkafka than confluent-kafka's) against a real broker process.

Metadata listing, producing from a file with keys (to a topic that does not exist yet, so it is
auto-created), and consuming to the end.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

KCAT = "/usr/bin/kcat"
TIMEOUT = 15.0  # seconds: the bound on every kcat run


def kcat(*args: str) -> str:
    """Run kcat; returns its stdout, fails the test with its stderr if it fails."""
    done = subprocess.run(
        [KCAT, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, (
        f"kcat {' '.join(args)} exited {done.returncode}\nstderr: {done.stderr}"
    )
    return done.stdout


def test_metadata_lists_topic(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=3)
    text = kcat("-L", "-b", bootstrap, "-t", topic)
    assert f'topic "{topic}" with 3 partitions:' in text, f"kcat -L printed:\n{text}"
    for p in range(3):
        assert f"partition {p}, leader " in text, f"partition {p} missing:\n{text}"

    meta = json.loads(kcat("-L", "-J", "-b", bootstrap, "-t", topic))
    brokers = [b["name"] for b in meta["brokers"]]
    assert brokers == [bootstrap], f"brokers: expected [{bootstrap!r}], got {brokers}"
    [listed] = meta["topics"]
    assert listed["topic"] == topic and "error" not in listed, f"topic entry: {listed}"
    leaders = {p["partition"]: (p["leader"], p.get("error")) for p in listed["partitions"]}
    node = meta["brokers"][0]["id"]
    expected = {p: (node, None) for p in range(3)}
    assert leaders == expected, f"partitions: expected {expected}, got {leaders}"


def test_produce_file_and_consume_to_end(bootstrap: str, topic_name: str, tmp_path: Path) -> None:
    lines = [f"key-{i}:value {i} with: a colon and ünïcode" for i in range(200)]
    lines[7] = "key-only:"
    lines[8] = ":no-key-value"
    source = tmp_path / "input.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    # the topic does not exist yet: the producer's metadata request auto-creates it
    kcat("-P", "-b", bootstrap, "-t", topic_name, "-K:", "-l", str(source))

    out = kcat("-C", "-b", bootstrap, "-t", topic_name, "-e", "-o", "beginning", "-K:")
    got = out.splitlines()
    assert len(got) == len(lines), f"expected {len(lines)} messages, got {len(got)}"
    assert got == lines, "consumed content differs from the file"

    # keys, values and offsets as kcat's JSON envelope shows them
    out = kcat("-C", "-b", bootstrap, "-t", topic_name, "-e", "-o", "195", "-J")
    envelopes = [json.loads(line) for line in out.splitlines()]
    got_json = [(e["partition"], e["offset"], e["key"], e["payload"]) for e in envelopes]
    expected = [(0, i, f"key-{i}", f"value {i} with: a colon and ünïcode") for i in range(195, 200)]
    assert got_json == expected, f"expected {expected}, got {got_json}"
