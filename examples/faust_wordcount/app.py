"""Word count with faust-streaming on Sluice: an agent, a table, its changelog.

Lines arrive on the topic ``wordcount-lines`` (plain UTF-8 text, one line per record). The agent
splits each line into lowercase words and re-sends them keyed by word to the internal topic
``wordcount-words``; a second agent counts them, so that every word is counted in exactly one
partition of the table ``word-counts``. The table is backed by the compacted changelog topic
``wordcount-word-counts-changelog``: after a restart — even with an empty data directory — faust
rebuilds the table from it before it processes anything new.

The counts are readable from outside in two ways:

- ``GET http://<web-host>:<web-port>/counts/`` serves the table as a JSON object;
- the changelog topic holds one record per update: key ``"word"``, value ``count`` (both JSON).

Settings come from the environment:

- ``SLUICE_BOOTSTRAP``: the broker URL (default ``kafka://localhost:9092``, the broker of
  ``make broker``);
- ``WORDCOUNT_DATA_DIR``: faust's data directory (default ``.sluice/faust-wordcount``);
- ``WORDCOUNT_PARTITIONS``: partitions of the topics faust creates (default 4, the same as
  ``wordcount-lines`` must have).

Run it with ``python app.py worker -l info --web-port 6066``.
"""

from __future__ import annotations

import os
import re
from typing import Any

import faust

BOOTSTRAP = os.environ.get("SLUICE_BOOTSTRAP", "kafka://localhost:9092")
DATA_DIR = os.environ.get("WORDCOUNT_DATA_DIR", ".sluice/faust-wordcount")
PARTITIONS = int(os.environ.get("WORDCOUNT_PARTITIONS", "4"))

WORD = re.compile(r"[\w']+")

os.makedirs(DATA_DIR, exist_ok=True)  # faust makes only the last level

app = faust.App(
    "wordcount",
    broker=BOOTSTRAP if "://" in BOOTSTRAP else f"kafka://{BOOTSTRAP}",
    datadir=DATA_DIR,
    store="memory://",
    topic_partitions=PARTITIONS,
    topic_replication_factor=1,
    # Commit often so that a stopped worker has little to redo.
    broker_commit_every=100,
    broker_commit_interval=1.0,
)

lines = app.topic("wordcount-lines", value_type=str, value_serializer="raw")
words = app.topic("wordcount-words", key_type=str, value_type=str, internal=True)
counts = app.Table("word-counts", default=int, partitions=PARTITIONS, help="Word -> count")


@app.agent(lines)
async def split(stream: Any) -> None:
    """Split lines into words, keyed by word so that each word lands in one table partition."""
    async for line in stream:
        text = line.decode() if isinstance(line, bytes) else str(line)
        for word in WORD.findall(text.lower()):
            await words.send(key=word, value=word)


@app.agent(words)
async def count(stream: Any) -> None:
    """Count each word in the table; every update goes to the changelog topic."""
    async for word in stream:
        counts[word] += 1


@app.page("/counts/")
async def get_counts(web: Any, request: Any) -> Any:
    """The whole table as JSON (one worker holds every partition)."""
    return web.json(dict(counts.items()))


if __name__ == "__main__":
    app.main()
