"""The broker's refusal of a request: a Kafka error code and a message for the client."""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class KafkaError(Exception):
    """Refuse (part of) a request with ``code``; ``message`` goes to clients that take one.

    >>> KafkaError(ErrorCode.invalid_partitions, "the count can only grow").code
    <ErrorCode.invalid_partitions: 37>
    """

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
