"""What ``sluice up`` does with the schemas its ``topics:`` declare: register each under its
topic's subject (``<topic>-key`` / ``<topic>-value``) through the schema registry's REST API,
once the registry answers and has elected its writer. Registering is idempotent (the same schema
keeps its id and version); a schema the subject's compatibility level refuses stops ``sluice up``
with the registry's reasons, before anything that would write to the topic starts. A secured
registry is reached with the admin's ``headers`` (basic authentication) and a TLS ``context``
trusting the deployment's CA.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence

from sluice.up.spec import TopicSpec

__all__ = ["SchemaRegistrationError", "register_schemas"]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_RETRIED = (50001, 50002, 50003)
"""The registry's store, timeout and forwarding errors: it is still starting or electing."""


class SchemaRegistrationError(Exception):
    """The registry refused a schema (``refused``) or never answered; ``str()`` says which and
    why."""

    def __init__(self, message: str, *, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


def register_schemas(
    url: str,
    topics: Sequence[TopicSpec],
    report: Callable[[str], None],
    *,
    timeout: float = 90.0,
    headers: Mapping[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> None:
    """Register every schema ``topics`` declare at the registry at ``url`` (reached with
    ``headers`` and ``context`` when secured)."""
    for topic in topics:
        for subject, spec in topic.schemas():
            body = {"schema": spec.file.read_text(encoding="utf-8")}
            if spec.schema_type != "AVRO":
                body["schemaType"] = spec.schema_type
            answer = _post_until_served(
                f"{url}/subjects/{urllib.parse.quote(subject, safe='')}/versions",
                body,
                timeout,
                headers or {},
                context,
            )
            report(f"schema {subject}: id {answer['id']} ({spec.file.name})")


def _post_until_served(
    url: str,
    body: dict[str, str],
    timeout: float,
    headers: Mapping[str, str],
    context: ssl.SSLContext | None,
) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        request = urllib.request.Request(
            url,
            json.dumps(body).encode(),
            {"Content-Type": _CONTENT_TYPE, **headers},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                answer: dict[str, int] = json.loads(response.read())
                return answer
        except urllib.error.HTTPError as error:
            try:
                problem = json.loads(error.read())
            except ValueError:
                problem = {"error_code": error.code, "message": error.reason}
            if problem.get("error_code") not in _RETRIED:
                raise SchemaRegistrationError(
                    f"{url}: refused ({problem.get('error_code')}): {problem.get('message')}",
                    refused=True,
                ) from None
            last = str(problem.get("message"))
        except OSError as error:
            last = str(error)
        time.sleep(0.5)
    raise SchemaRegistrationError(f"{url}: no answer in {timeout:.0f} s ({last})", refused=False)
