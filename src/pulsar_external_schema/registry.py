"""What a failed registry request means: the one place that reads confluent-kafka's registry errors.

confluent-kafka's `SchemaRegistryClient` raises `SchemaRegistryError` with the HTTP status and
the registry's error code, and lets connection errors of its HTTP library through as they are.
`failure_kind` sorts them into what a caller decides on:

* `"not found"`: the subject, version or schema id does not exist (404 with 40401, 40402, 40403,
  or 40400 from confluent-kafka's mock registry);
* `"unavailable"`: the registry could not be reached or did not answer (transport errors, -1,
  408, 429, 5xx): worth retrying, and a consumer redelivers;
* `"rejected"`: the registry answered no (401, 403, 409, 422, another 404): retrying will not help
  (`is_conflict` tells a 409, a schema the subject's compatibility refuses);
* None: not a registry failure at all.

`registry_error` turns a failure into the package's error, naming what was being done, the
registry's URL, and the topic, subject and schema id where the caller has them: an outage is
always a `RegistryUnavailableError`; a caller chooses the class of "not found" and "rejected"
answers, whose meaning depends on what was asked. Every module that asks the registry goes
through it (a console tool's one-line message reads the same `failure_kind` and `describe`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from .errors import ConfigError, ExternalSchemaError, RegistryUnavailableError, UnknownSchemaIdError

try:  # confluent-kafka talks to the registry through httpx2 when installed, else httpx
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the environment
    import httpx as _http  # type: ignore[no-redef]

#: Errors of the registry client's transport: the registry could not be reached or did not answer.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (_http.TransportError, ConnectionError, TimeoutError)

#: Registry error codes for a subject, version or schema that does not exist.
NOT_FOUND_CODES = (40400, 40401, 40402, 40403)

FailureKind = Literal["not found", "unavailable", "rejected"]


def new_client(
    registry: dict[str, Any],
    mock: Callable[[dict[str, Any]], SchemaRegistryClient] | None = None,
    real: Callable[[dict[str, Any]], SchemaRegistryClient] | None = None,
) -> SchemaRegistryClient:
    """confluent-kafka's `SchemaRegistryClient` for a config's `registry` section (a `mock://` URL
    gives its in-memory registry, for unit tests), or the class `real` / `mock` of each
    (protobuf_text.py's). What its constructor refuses (a CA or key file that does not load, a
    bearer-auth source it does not know) is a `ConfigError` naming the problem, never a value: the
    section holds credentials."""
    conf = dict(registry)
    try:
        if str(conf.get("url", "")).startswith("mock://"):
            return mock(conf) if mock is not None else SchemaRegistryClient.new_client(conf)
        return real(conf) if real is not None else SchemaRegistryClient.new_client(conf)
    except (ValueError, TypeError, OSError) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise ConfigError(f"the schema registry client refused its configuration: {reason}") from None


def failure_kind(error: BaseException) -> FailureKind | None:
    """What a registry request's error means (see the module docstring); None: not the registry's."""
    if isinstance(error, SchemaRegistryError):
        status = error.http_status_code
        if status == 404 and error.error_code in NOT_FOUND_CODES:
            return "not found"
        if status in (-1, 408, 429) or status >= 500:
            return "unavailable"
        return "rejected"
    if not_a_registry(error):
        return "rejected"
    if isinstance(error, TRANSPORT_ERRORS):
        return "unavailable"
    return None


def is_conflict(error: BaseException) -> bool:
    """The registry refused a schema for its compatibility with the subject's versions (409)."""
    return isinstance(error, SchemaRegistryError) and error.http_status_code == 409


#: How confluent-kafka's client prefixes an answer whose body is not a registry's JSON error.
_NOT_JSON = "Unknown Schema Registry Error: "


def not_a_registry(error: BaseException) -> bool:
    """A server answered, but not as a schema registry does: an error whose body is no registry's
    JSON error, or a success whose body is not JSON at all (confluent-kafka's client lets the JSON
    parser's error through): a URL of something else (a web server, a single-page app), or a
    proxy's own page."""
    if isinstance(error, SchemaRegistryError):
        return (
            error.http_status_code > 0
            and error.error_code == -1
            and str(error.error_message).startswith(_NOT_JSON)
        )
    return isinstance(error, json.JSONDecodeError) and _raised_by_the_registry_client(error)


def _raised_by_the_registry_client(error: BaseException) -> bool:
    """Whether `error` came out of confluent-kafka's registry client, reading an answer (not out
    of a serde parsing a schema's text, nor of our own parsing)."""
    frame = error.__traceback__
    while frame is not None:
        if str(frame.tb_frame.f_globals.get("__name__", "")).endswith(".schema_registry_client"):
            return True
        frame = frame.tb_next
    return False


def describe(error: BaseException) -> str:
    """The registry's own words for an error (its message, status and code), or the error's text;
    for an answer no registry gives, what it was (the page itself would span a screen)."""
    if not_a_registry(error):
        answer = (
            f"HTTP {error.http_status_code} with a body that is not a schema registry's JSON"
            if isinstance(error, SchemaRegistryError)
            else "a success status and a body that is not JSON"
        )
        return (
            f"the server answered {answer}: is this the URL of a Confluent-compatible schema "
            "registry (or of a proxy before one)?"
        )
    if isinstance(error, SchemaRegistryError):
        return f"{error.error_message} (HTTP {error.http_status_code}, error {error.error_code})"
    return str(error) or type(error).__name__


def registry_error(
    error: BaseException,
    doing: str,
    url: str,
    *,
    topic: str | None = None,
    subject: str | None = None,
    schema_id: str | None = None,
    not_found: type[ExternalSchemaError] = UnknownSchemaIdError,
    rejected: type[ExternalSchemaError] = ConfigError,
) -> ExternalSchemaError | None:
    """The package's error for a registry request's `error` while `doing` (e.g. "could not read
    the schema of id 7"), or None when `error` is not a registry failure (`failure_kind`)."""
    kind = failure_kind(error)
    if kind is None:
        return None
    where: dict[str, Any] = {"topic": topic, "subject": subject, "schema_id": schema_id}
    if kind == "unavailable":
        said = (
            f"the registry at {url} failed: {describe(error)}"
            if isinstance(error, SchemaRegistryError)
            else f"cannot reach the registry at {url}: {describe(error)}"
        )
        return RegistryUnavailableError(f"{doing}: {said}", **where)
    if kind == "not found":
        return not_found(f"{doing}: the registry at {url} answered: {describe(error)}", **where)
    return rejected(f"{doing}: the registry at {url} refused: {describe(error)}", **where)
