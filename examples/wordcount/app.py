"""Word count with the Sluice Streams DSL: Kafka Streams' ``WordCountDemo``, in Python.

Lines of text arrive on ``streams-plaintext-input`` (plain UTF-8, one line per record, any key).
Each line is split into lowercase words; the words are re-keyed (through the internal topic
``streams-wordcount-words-repartition``, so that each word is counted in exactly one task) and
counted in the store ``counts`` (RocksDB, logged to ``streams-wordcount-counts-changelog``).
Every new count goes to ``streams-wordcount-output``: key the word, value its count (JSON).

Run it with ``python examples/wordcount/app.py [BOOTSTRAP]``; the bootstrap server comes from
the argument, else ``SLUICE_BOOTSTRAP``, else ``localhost:9092`` (``make broker``'s broker).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Any

from sluice.dsl import App
from sluice.serde import STRING

WORD = re.compile(r"[\w']+")


def words(line: str) -> list[str]:
    """The lowercase words of a line, punctuation dropped."""
    return WORD.findall(line.lower())


def build(
    bootstrap: str,
    *,
    application_id: str = "streams-wordcount",
    input_topic: str = "streams-plaintext-input",
    output_topic: str = "streams-wordcount-output",
    **settings: Any,
) -> App:
    """The word-count app; ``settings`` are :class:`~sluice.dsl.App` keyword arguments."""
    # every count goes out at once, as Kafka's WordCountDemo sets statestore.cache.max.bytes=0
    settings.setdefault("statestore_cache_max_bytes", 0)
    app = App(application_id, bootstrap, **settings)
    counts = (
        app.stream(input_topic, value_serde=STRING)
        .flat_map_values(words)
        .group_by(lambda key, word: word, name="words")
        .count(name="counts")
    )
    counts.to_stream().to(output_topic)
    return app


def main(argv: list[str]) -> None:
    bootstrap = argv[1] if len(argv) > 1 else os.environ.get("SLUICE_BOOTSTRAP", "localhost:9092")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(bootstrap).run()


if __name__ == "__main__":
    main(sys.argv)
