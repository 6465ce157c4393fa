"""Confluent REST Proxy's error bodies and codes.

Every error the proxy answers is ``{"error_code": n, "message": "..."}``, with the HTTP
status ``n // 100`` for Confluent's five-digit codes (``40401`` → 404) and ``n`` itself for
the plain ones (``400``). The codes are those of Confluent's ``Errors`` and rest-utils'
``KafkaExceptionMapper``:

=====  ======================================================================
code   meaning
=====  ======================================================================
400    the request body is not JSON, or not the object the endpoint takes
40002  Kafka refused the request as invalid (a topic that exists, a bad config)
40401  topic not found
40402  partition not found
40403  consumer instance not found
40404  consumer group not found (v3)
40601  the Accept type's embedded format does not match the consumer's format
40901  the consumer is subscribed already (or assigned, and asked to subscribe)
40902  a consumer instance of that name exists in the group
42201  a schema'd key without a key schema
42202  a schema'd value without a value schema
42203  the data do not fit the schema (conversion of JSON failed)
42204  invalid consumer configuration
42205  invalid schema
42206  invalid payload (a field of the wrong type, a bad base64 string)
42207  the record could not be serialized (Schema Registry refused, unreachable)
50002  Kafka error
50003  retriable Kafka error (timed out, no leader)
=====  ======================================================================

>>> RestError(40401, "Topic not found.").status
404
>>> RestError(400, "bad").body()
{'error_code': 400, 'message': 'bad'}
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException

__all__ = [
    "BAD_REQUEST",
    "CONSUMER_ALREADY_EXISTS",
    "CONSUMER_ALREADY_SUBSCRIBED",
    "CONSUMER_FORMAT_MISMATCH",
    "CONSUMER_INSTANCE_NOT_FOUND",
    "GROUP_NOT_FOUND",
    "INVALID_CONSUMER_CONFIG",
    "INVALID_PAYLOAD",
    "INVALID_SCHEMA",
    "JSON_CONVERSION",
    "KAFKA_BAD_REQUEST",
    "KAFKA_ERROR",
    "KAFKA_RETRIABLE",
    "KEY_SCHEMA_MISSING",
    "PARTITION_NOT_FOUND",
    "SERIALIZATION",
    "TOPIC_NOT_FOUND",
    "VALUE_SCHEMA_MISSING",
    "RestError",
    "from_kafka",
    "status_of",
    "topic_not_found",
]

BAD_REQUEST = 400
KAFKA_BAD_REQUEST = 40002
TOPIC_NOT_FOUND = 40401
PARTITION_NOT_FOUND = 40402
CONSUMER_INSTANCE_NOT_FOUND = 40403
GROUP_NOT_FOUND = 40404
CONSUMER_FORMAT_MISMATCH = 40601
CONSUMER_ALREADY_SUBSCRIBED = 40901
CONSUMER_ALREADY_EXISTS = 40902
KEY_SCHEMA_MISSING = 42201
VALUE_SCHEMA_MISSING = 42202
JSON_CONVERSION = 42203
INVALID_CONSUMER_CONFIG = 42204
INVALID_SCHEMA = 42205
INVALID_PAYLOAD = 42206
SERIALIZATION = 42207
KAFKA_ERROR = 50002
KAFKA_RETRIABLE = 50003


def status_of(error_code: int) -> int:
    """The HTTP status of an error code: its first three digits.

    >>> status_of(42203), status_of(404)
    (422, 404)
    """
    return error_code // 100 if error_code >= 10000 else error_code


class RestError(Exception):
    """An error answered as Confluent's ``{"error_code", "message"}`` body."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        """The HTTP status to answer with."""
        return status_of(self.error_code)

    def body(self) -> dict[str, Any]:
        """The JSON body."""
        return {"error_code": self.error_code, "message": self.message}


def topic_not_found(topic: str) -> RestError:
    """Confluent's 40401."""
    return RestError(TOPIC_NOT_FOUND, f"Topic not found: {topic}.")


_NOT_FOUND = {
    KafkaError.UNKNOWN_TOPIC_OR_PART: TOPIC_NOT_FOUND,
    KafkaError._UNKNOWN_TOPIC: TOPIC_NOT_FOUND,
    KafkaError._UNKNOWN_PARTITION: PARTITION_NOT_FOUND,
    KafkaError.GROUP_ID_NOT_FOUND: GROUP_NOT_FOUND,
}
_BAD_REQUEST = {
    KafkaError.TOPIC_ALREADY_EXISTS,
    KafkaError.INVALID_CONFIG,
    KafkaError.INVALID_PARTITIONS,
    KafkaError.INVALID_REPLICATION_FACTOR,
    KafkaError.TOPIC_EXCEPTION,
    KafkaError.INVALID_REQUEST,
    KafkaError.POLICY_VIOLATION,
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.INVALID_RECORD,
    KafkaError.INVALID_TIMESTAMP,
    KafkaError.INVALID_REQUIRED_ACKS,
    KafkaError.NON_EMPTY_GROUP,
    KafkaError.INVALID_GROUP_ID,
}
_AUTH = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: 40301,
    KafkaError.GROUP_AUTHORIZATION_FAILED: 40301,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: 40301,
    KafkaError.SASL_AUTHENTICATION_FAILED: 40101,
    KafkaError._AUTHENTICATION: 40101,
}


def from_kafka(error: KafkaError | KafkaException | BaseException, *, topic: str = "") -> RestError:
    """The REST error for a Kafka client error, as rest-utils' ``KafkaExceptionMapper`` maps
    Kafka's exceptions (unknown topic 40401, invalid requests 40002, authorization 40301,
    retriable 50003, the rest 50002)."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        error = error.args[0]
    if not isinstance(error, KafkaError):
        return RestError(KAFKA_ERROR, f"Kafka error: {error}")
    code = error.code()
    text = error.str()
    if code in _NOT_FOUND:
        found = _NOT_FOUND[code]
        if found == TOPIC_NOT_FOUND:
            return topic_not_found(topic) if topic else RestError(found, text)
        return RestError(found, text)
    if code in _AUTH:
        return RestError(_AUTH[code], text)
    if code in _BAD_REQUEST:
        return RestError(KAFKA_BAD_REQUEST, text)
    if error.retriable() or code in (
        KafkaError._TIMED_OUT,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError.REQUEST_TIMED_OUT,
    ):
        return RestError(KAFKA_RETRIABLE, f"Retriable Kafka error: {text}")
    return RestError(KAFKA_ERROR, f"Kafka error: {text}")
