"""The registry's errors: an HTTP status, Confluent's error code and a message.

Every refusal the registry makes is a :class:`RegistryError`; the REST layer answers it as
Confluent does, ``{"error_code": <code>, "message": "..."}`` with the status. The codes and
messages are those of Confluent Schema Registry's ``Errors.java``::

    404  40401 subject not found          40402 version not found       40403 schema not found
         40404 subject soft-deleted       40405 subject not soft-deleted (before permanent)
         40406 version soft-deleted       40407 version not soft-deleted (before permanent)
         40408 no subject compatibility   40409 no subject mode
    409  409   incompatible schema (Confluent before 8.0; 8.x answers 40901)
    422  42201 invalid schema             42202 invalid version         42203 invalid compatibility
         42204 invalid mode               42205 operation not permitted 42206 reference exists
         42207 id does not match          42208 invalid subject         422  malformed request body
    500  50001 store error                50002 operation timeout       50003 forwarding failed

>>> error = subject_not_found("orders-value")
>>> error.status, error.body()
(404, {'error_code': 40401, 'message': "Subject 'orders-value' not found."})
"""

from __future__ import annotations

from typing import Any

from sluice.errors import SluiceError

__all__ = [
    "RegistryError",
    "compatibility_not_configured",
    "forwarding_failed",
    "id_does_not_match",
    "incompatible_schema",
    "invalid_compatibility",
    "invalid_mode",
    "invalid_request",
    "invalid_schema",
    "invalid_subject",
    "invalid_version",
    "mode_not_configured",
    "not_permitted",
    "reference_exists",
    "schema_not_found",
    "store_error",
    "subject_not_found",
    "subject_not_soft_deleted",
    "subject_soft_deleted",
    "timeout",
    "version_not_found",
    "version_not_soft_deleted",
    "version_soft_deleted",
]


class RegistryError(SluiceError):
    """A request the registry refuses: ``status`` (HTTP), Confluent's ``code``, ``message``."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        """The response body, Confluent's ``ErrorMessage``."""
        return {"error_code": self.code, "message": self.message}


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    if schema_id is None:
        return RegistryError(404, 40403, "Schema not found")
    return RegistryError(404, 40403, f"Schema {schema_id} not found")


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete "
        "permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being permanently "
        "deleted",
    )


def compatibility_not_configured(subject: str) -> RegistryError:
    return RegistryError(
        404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
    )


def mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(
        404, 40409, f"Subject '{subject}' does not have subject-level mode configured"
    )


def incompatible_schema(message: str) -> RegistryError:
    return RegistryError(409, 409, message)


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, 42201, message)


def invalid_version(version: str) -> RegistryError:
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility(value: object = None) -> RegistryError:
    shown = "" if value is None else f" {value!r}"
    return RegistryError(
        422,
        42203,
        f"Invalid compatibility level{shown}. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )


def invalid_mode(value: object = None) -> RegistryError:
    shown = "" if value is None else f" {value!r}"
    return RegistryError(
        422, 42204, f"Invalid mode{shown}. Valid values are READWRITE, READONLY, and IMPORT."
    )


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def reference_exists(message: str) -> RegistryError:
    return RegistryError(422, 42206, message)


def id_does_not_match(message: str) -> RegistryError:
    return RegistryError(422, 42207, message)


def invalid_subject(subject: str) -> RegistryError:
    return RegistryError(422, 42208, f"The specified subject '{subject}' is not valid.")


def invalid_request(message: str) -> RegistryError:
    """A request body that is JSON but not the shape asked for (Confluent: 422)."""
    return RegistryError(422, 422, message)


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, message)


def timeout(message: str) -> RegistryError:
    return RegistryError(500, 50002, message)


def forwarding_failed(message: str) -> RegistryError:
    return RegistryError(500, 50003, message)
