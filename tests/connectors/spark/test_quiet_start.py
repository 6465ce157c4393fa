"""Spark starts without its JVM start-up noise for users of ``examples/quickstart/summary.py``
and :func:`sluice.connectors.spark.session`, unless they ask for it (``--verbose``,
``SLUICE_SPARK_VERBOSE=1``); every other line of the JVM's stderr still reaches the user."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.connectors.spark._quiet import VERBOSE_ENV, _filtered_stderr, verbose_requested

SUMMARY = Path(__file__).parents[3] / "examples" / "quickstart" / "summary.py"
NOISE = (
    "Using incubator modules",
    "log4j",
    "SLF4J",
    "resolves to a loopback address",
    "SPARK_LOCAL_IP",
    "native-hadoop",
    "Setting default log level",
    "setLogLevel",
)
"""What a plain local ``SparkSession`` prints on stderr before doing anything."""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake as the quickstart's ``spark-sink`` writes it: revenue updates per tier and window."""
    root = tmp_path_factory.mktemp("lake")
    folder = root / "revenue-by-tier"
    folder.mkdir()
    table = pa.table(
        {
            "tier": ["gold", "gold", "silver"],
            "window_start": [1_700_000_040_000, 1_700_000_040_000, 1_700_000_040_000],
            "revenue": [10.0, 25.5, 7.0],
            "orders": [1, 2, 1],
        }
    )
    pq.write_table(table, folder / "part-0.parquet")
    return root


def _summary(lake: Path, *options: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in (VERBOSE_ENV, "SPARK_LOCAL_IP")}
    return subprocess.run(
        [sys.executable, str(SUMMARY), "--lake", str(lake), *options],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**clean, **env},
    )


def test_summary_prints_no_start_up_noise(lake: Path) -> None:
    done = _summary(lake, env={})
    assert done.returncode == 0, done.stderr
    assert "gold" in done.stdout and "25.5" in done.stdout and "silver" in done.stdout
    shown = [line for line in done.stderr.splitlines() if any(n in line for n in NOISE)]
    assert not shown, f"start-up noise on stderr: {shown}\n--- stderr\n{done.stderr}"


@pytest.mark.parametrize(
    ("value", "asked"),
    [("1", True), ("true", True), (" Yes ", True), ("on", True), ("0", False), ("", False)],
)
def test_the_noise_is_shown_when_asked(
    value: str, asked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Starting Spark a second time only to see its noise would cost a minute of CI: what
    # decides is whether the user asked (session() then starts Spark as it is).
    monkeypatch.setenv(VERBOSE_ENV, value)
    assert verbose_requested() is asked


def test_other_lines_of_a_child_pass_through(capfd: pytest.CaptureFixture[str]) -> None:
    lines = [
        "WARNING: Using incubator modules: jdk.incubator.vector",
        "26/11/27 10:00:00 ERROR Executor: Exception in task 0.0",
        'Setting default log level to "WARN".',
        "a line without a newline at the end",
    ]
    script = "import sys; sys.stderr.write(" + repr("\n".join(lines)) + ")"
    with _filtered_stderr():
        child = subprocess.Popen([sys.executable, "-c", script])
    assert child.wait(30) == 0
    expected = f"{lines[1]}\n{lines[3]}"
    err = ""
    deadline = time.monotonic() + 10
    while err != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        err += capfd.readouterr().err
    assert err == expected, err
