"""A registry that accepts connections and never answers fails each request after
`http.read.timeout.ms` (confluent-kafka's client alone waits forever), and no secret of the
registry connection appears in a `repr`, an error, `str(schema)` or any log line."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pulsar_external_schema import (
    ConfigError,
    ExternalSchemaError,
    RegistryUnavailableError,
    SchemaRegistrySchemaFactory,
)
from pulsar_external_schema.config import ExternalSchemaConfig

TOPIC = "persistent://acme/orders/hung"
SECRET = "pl4nted-s3cret"
ORDER = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})


@pytest.fixture
def hung_registry() -> Iterator[str]:
    """A socket that accepts every connection and never answers (a registry under SIGSTOP)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def _bounded(call: Callable[[], Any]) -> BaseException | None:
    """Run `call` in a thread and give it a generous bound: a hang fails the test, not the suite."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # the test inspects it
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the call is still waiting on the registry"
    return outcome[0]


FAST = {"http.read.timeout.ms": 300, "max.retries": 1, "retries.wait.ms": 10, "retries.max.wait.ms": 20}


def test_encoding_a_new_schema_against_a_hung_registry_fails_with_a_typed_error(hung_registry: str) -> None:
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": hung_registry, **FAST})
    error = _bounded(lambda: factory.avro(ORDER).encode(TOPIC, {"id": 1}))
    assert isinstance(error, RegistryUnavailableError)
    assert error.topic == TOPIC and error.subject == "acme.orders.hung-value"
    assert hung_registry in str(error)


def test_decoding_an_unseen_id_against_a_hung_registry_fails_with_a_typed_error(hung_registry: str) -> None:
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": hung_registry, **FAST})
    error = _bounded(lambda: factory.avro(ORDER).decode(TOPIC, b"\x02", b"\x00\x00\x00\x00\x07"))
    assert isinstance(error, RegistryUnavailableError)
    assert error.schema_id == "7"


@pytest.mark.parametrize("key", ["http.read.timeout.ms", "http.connect.timeout.ms"])
def test_timeouts_must_be_positive(key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        ExternalSchemaConfig.from_dict({"schema.registry.url": "http://127.0.0.1:1", key: 0})


def test_the_timeouts_reach_the_registry_client() -> None:
    config = ExternalSchemaConfig.from_dict(
        {
            "schema.registry.url": "http://127.0.0.1:1",
            "http.connect.timeout.ms": 2000,
            "http.read.timeout.ms": 5000,
        }
    )
    factory = SchemaRegistrySchemaFactory(config)
    session = factory.registry_client._rest_client.session
    assert (session.timeout.connect, session.timeout.read) == (2.0, 5.0)


# -- secrets ---------------------------------------------------------------------------------------


def _secret_conf(url: str = "http://127.0.0.1:1") -> dict[str, Any]:
    return {
        "schema.registry.url": url,
        "basic.auth.user.info": f"svc:{SECRET}",
        "bearer.auth.client.secret": SECRET,
        "schema.registry.ssl.key.password": SECRET,
        "rule.executors._default_.param.secret.access.key": SECRET,
    }


def test_repr_of_a_config_masks_every_secret() -> None:
    config = ExternalSchemaConfig.from_dict(_secret_conf())
    shown = repr(config)
    assert SECRET not in shown
    assert "'basic.auth.user.info': '****'" in shown and "'secret.access.key': '****'" in shown
    assert "http://127.0.0.1:1" in shown  # what is not secret stays readable


@pytest.mark.parametrize("value", [["svc", SECRET], {"user": SECRET}, f"svc:{SECRET}".encode()])
def test_a_wrongly_typed_secret_is_not_quoted_in_the_error(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"basic\.auth\.user\.info") as raised:
        ExternalSchemaConfig.from_dict(
            {"schema.registry.url": "http://127.0.0.1:1", "basic.auth.user.info": value}
        )
    assert SECRET not in str(raised.value)


def test_credentials_in_the_registry_url_never_show(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://svc:{SECRET}@127.0.0.1:1"
    config = ExternalSchemaConfig.from_dict({"schema.registry.url": url, "max.retries": 0})
    assert config.registry["url"] == "http://127.0.0.1:1"
    assert config.registry["basic.auth.user.info"] == f"svc:{SECRET}"  # still sent, as the URL's were
    factory = SchemaRegistrySchemaFactory(config)
    schema = factory.avro(ORDER)
    with caplog.at_level(logging.DEBUG), pytest.raises(ExternalSchemaError) as raised:
        schema.encode(TOPIC, {"id": 1})
    shown = [
        str(raised.value),
        str(schema),
        repr(config),
        *(record.getMessage() for record in caplog.records),
    ]
    assert any("127.0.0.1:1" in text for text in shown)
    assert not [text for text in shown if SECRET in text]


def test_credentials_in_the_url_and_basic_auth_at_once_are_refused_without_quoting_them() -> None:
    with pytest.raises(ConfigError, match="give them once") as raised:
        ExternalSchemaConfig.from_dict(
            {"schema.registry.url": f"http://svc:{SECRET}@h:1", "basic.auth.user.info": f"svc:{SECRET}"}
        )
    assert SECRET not in str(raised.value)
