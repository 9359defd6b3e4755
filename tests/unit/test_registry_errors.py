"""What a failed registry request means is decided in one place (registry.py), for every caller."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.schema_registry.error import SchemaRegistryError
from contracts import mock_factory

from pulsar_external_schema import ConfigError, RegistryUnavailableError, UnknownSchemaIdError
from pulsar_external_schema.registry import TRANSPORT_ERRORS, failure_kind, registry_error
from pulsar_external_schema.topic_schemas import registered_schema


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (SchemaRegistryError(404, 40401, "Subject not found"), "not found"),
        (SchemaRegistryError(404, 40403, "Schema not found"), "not found"),
        (SchemaRegistryError(404, 404, "Not Found"), "rejected"),
        (SchemaRegistryError(401, 40101, "Unauthorized"), "rejected"),
        (SchemaRegistryError(422, 42201, "Invalid schema"), "rejected"),
        (SchemaRegistryError(503, 50003, "Unavailable"), "unavailable"),
        (SchemaRegistryError(429, 429, "Too many requests"), "unavailable"),
        (SchemaRegistryError(-1, -1, "Unknown"), "unavailable"),
        (TRANSPORT_ERRORS[0]("refused"), "unavailable"),  # httpx2 (or httpx): the client's own
        (TimeoutError(), "unavailable"),
        (ValueError("bad bytes"), None),
    ],
)
def test_each_registry_failure_has_one_meaning(error: BaseException, kind: str | None) -> None:
    assert failure_kind(error) == kind


@pytest.mark.parametrize(
    ("error", "raised", "says"),
    [
        (SchemaRegistryError(404, 40401, "Subject not found"), ConfigError, "has no registered schema"),
        (SchemaRegistryError(401, 40101, "Unauthorized"), ConfigError, "Unauthorized (HTTP 401"),
        (SchemaRegistryError(503, 50003, "Unavailable"), RegistryUnavailableError, "could not read"),
    ],
)
def test_the_registered_schema_of_a_topic_reports_each_kind_as_such(
    monkeypatch: pytest.MonkeyPatch, error: Exception, raised: type[Exception], says: str
) -> None:
    """A 401 is a credentials problem, not an outage to wait out (it used to say 'unavailable')."""
    factory = mock_factory()

    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(factory.registry_client, "get_latest_version", fail)
    with pytest.raises(raised, match=says.replace("(", r"\(")):
        registered_schema(factory, "persistent://acme/orders/payments")


@pytest.mark.parametrize(
    ("error", "raised", "says"),
    [
        (
            SchemaRegistryError(404, 40403, "Schema not found"),
            UnknownSchemaIdError,
            "answered: Schema not found",
        ),
        (SchemaRegistryError(403, 40301, "Forbidden"), ConfigError, "refused: Forbidden (HTTP 403"),
        (SchemaRegistryError(503, 50003, "Unavailable"), RegistryUnavailableError, "failed: Unavailable"),
        (TRANSPORT_ERRORS[0]("refused"), RegistryUnavailableError, "cannot reach the registry at"),
    ],
)
def test_registry_error_is_one_package_error_per_kind_naming_where(
    error: Exception, raised: type[Exception], says: str
) -> None:
    made = registry_error(
        error, "reading schema 7", "http://registry:8081", topic="t", subject="t-value", schema_id="7"
    )

    assert type(made) is raised
    assert made is not None and says in str(made)
    assert str(made).startswith("reading schema 7: ") and "http://registry:8081" in str(made)
    assert (made.topic, made.subject, made.schema_id) == ("t", "t-value", "7")
    assert registry_error(ValueError("bad bytes"), "reading", "http://registry:8081") is None


def test_json_schema_evolution_reports_a_registry_outage_as_the_packages_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It let confluent-kafka's `SchemaRegistryError` through as it was."""
    from pulsar_external_schema import JsonSchemaEvolution

    evolution = JsonSchemaEvolution({"schema.registry.url": "mock://evolution"})

    def down(*args: object, **kwargs: object) -> None:
        raise SchemaRegistryError(503, 50003, "Unavailable")

    monkeypatch.setattr(evolution._client, "get_versions", down)
    monkeypatch.setattr(evolution._client, "lookup_schema", down)
    schema = '{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}'
    with pytest.raises(
        RegistryUnavailableError, match=r"acme-value: the registry at mock://evolution failed"
    ):
        evolution.ensure_producer_schema("acme-value", schema)


def _raised_in(module: str, text: str) -> BaseException:
    """The JSON parser's error on `text`, raised from code of the module named `module`."""
    scope: dict[str, Any] = {"__name__": module, "json": __import__("json")}
    exec("def parse(text):\n    return json.loads(text)", scope)  # a frame of that module
    try:
        scope["parse"](text)
    except ValueError as error:
        return error
    raise AssertionError("parsed")


def test_a_page_the_registry_client_could_not_read_is_not_a_registry() -> None:
    """A success answer whose body is not JSON (the client's `response.json()` failed) is "not a
    registry"; the same parser's error out of a serde reading a schema's text is not the
    registry's at all."""
    from pulsar_external_schema.registry import describe, not_a_registry

    page = _raised_in("confluent_kafka.schema_registry._sync.schema_registry_client", "<html>")
    assert not_a_registry(page) and failure_kind(page) == "rejected"
    assert "a success status and a body that is not JSON" in describe(page)
    schema_text = _raised_in("confluent_kafka.schema_registry.common.json_schema", "{not json")
    assert not not_a_registry(schema_text) and failure_kind(schema_text) is None
