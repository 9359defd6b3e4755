"""`read_table`'s arguments (`pulsar_external_schema.arrow`): each mistake is one `ConfigError`,
worded in the function's own names, before anything is asked of a broker or registry (the URLs
below answer nothing: a call that got that far would fail otherwise). The reads themselves run on
the real services: tests/integration/test_arrow.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from pulsar_external_schema import ConfigError
from pulsar_external_schema.arrow import read_batches, read_table

NOWHERE: dict[str, Any] = {
    "service_url": "pulsar://127.0.0.1:9",
    "admin_url": "http://127.0.0.1:9",
    "config": {"schema.registry.url": "http://127.0.0.1:9"},
}


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"topics": []}, "topics: give a topic name or a list of them"),
        ({"topics": "a,b"}, "give a list of topic names, not one string with commas"),
        ({"start": "first"}, "start takes 'earliest', 'latest' or a message id per partition topic"),
        ({"end": 42}, "end takes 'earliest', 'latest' or a message id per partition topic"),
        ({"start": {"t-partition-0": {"ledgerId": 1}}}, "start: partition 't-partition-0' takes"),
        ({"start": {"t": "earliest"}, "start_time": 0}, "give start or start_time, not both"),
        ({"end_time": "yesterday"}, "end_time takes a datetime or milliseconds since the epoch"),
        ({"start_time": -1}, "start_time takes a datetime or milliseconds"),
        ({"batch_size": 0}, "batch_size takes a positive number of rows, not 0"),
        ({"batch_size": True}, "batch_size takes a positive number of rows, not True"),
        ({"read_timeout_ms": 0}, "read_timeout_ms takes a positive number of milliseconds"),
        ({"reader": "fast"}, "reader takes auto, native, python, not 'fast'"),
        ({"config": {"topic": "t"}}, "config key 'topic' is not a configuration key here"),
        ({"config": {"schema.registry.urll": "http://x"}}, "schema.registry.url"),
        ({"service_url": None}, "service_url is required"),
        ({"admin_url": None}, "admin_url is required"),
        ({"tlsTrustCertsFilePathh": "/ca.pem"}, "tlsTrustCertsFilePath"),
        ({"progress": 5}, "progress takes a function of one ReadProgress, not 5"),
    ],
)
def test_a_mistake_is_one_config_error_before_any_call(arguments: dict[str, Any], said: str) -> None:
    topics = arguments.pop("topics", "persistent://public/default/orders")
    for read in (read_table, read_batches):
        with pytest.raises(ConfigError) as raised:
            read(topics, **{**NOWHERE, **arguments})
        assert said in str(raised.value)
        assert "\n" not in str(raised.value)


def test_a_client_configuration_gives_the_urls(tmp_path: Path) -> None:
    conf = tmp_path / "client.conf"
    conf.write_text("brokerServiceUrl=pulsar://127.0.0.1:9\nwebServiceUrl=http://127.0.0.1:9\n")
    # a config key's typo is found after the URLs' check (so the file gave them), before any call
    config = {"schema.registry.url": "http://127.0.0.1:9", "use.latest.versio": "true"}
    ways: list[dict[str, Any]] = [
        {"client_conf": str(conf)},
        {"config": {**config, "pulsar.client.conf": str(conf)}},
    ]
    for given in ways:
        with pytest.raises(ConfigError, match=r"use\.latest\.versio"):
            read_table("orders", **{"config": config, **given})
    with pytest.raises(ConfigError, match="service_url is required"):
        read_table("orders", config=config)


def test_a_naive_datetime_is_local_time_as_python_takes_it() -> None:
    from pulsar_external_schema.arrow import _end

    naive = dt.datetime(2026, 11, 28, 12, 0)
    assert _end("earliest", naive, "start") == int(naive.timestamp() * 1000)
    aware = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
    assert _end("earliest", aware, "start") == 1_795_867_200_000
    assert _end("latest", 5, "end") == 5
    assert _end({"orders-partition-1": {"ledgerId": 3, "entryId": 4}}, None, "start") == {
        "persistent://public/default/orders-partition-1": {"ledgerId": 3, "entryId": 4}
    }


@pytest.mark.parametrize(
    ("named", "spelling"),
    [(None, "option 'protobuf.message.class'"), ("protobuf_message_class", "protobuf_message_class")],
)
def test_a_protobuf_class_error_names_the_setting_as_its_caller_spells_it(
    named: str | None, spelling: str
) -> None:
    """The reading layer's words for the class: the Spark source's option, or `read_table`'s argument
    (the integration test reads a Protobuf topic without it: tests/integration/test_arrow.py)."""
    import dataclasses

    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.tasks.schemas import protobuf_class

    options = SourceOptions.parse({"service.url": "pulsar://127.0.0.1:9", "schema.registry.url": "http://x"})
    if named is not None:
        options = dataclasses.replace(options, protobuf_class_named=named)
    reader: Any = None  # not asked for: the class is the one named (without one, the registry's)
    with pytest.raises(ConfigError, match=f"^{spelling}: cannot import 'nowhere_pb2.Order'"):
        protobuf_class(dataclasses.replace(options, protobuf_message_class="nowhere_pb2.Order"), reader)
