"""Topic -> subject strategies and the validated config."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext

from pulsar_external_schema import ConfigError, ExternalSchemaConfig
from pulsar_external_schema.config import is_config_key, pins_a_version
from pulsar_external_schema.subjects import (
    TopicName,
    full_topic_name_strategy,
    record_name_strategy,
    short_topic_name_strategy,
    subject_for,
    topic_name_strategy,
    topic_record_name_strategy,
)

URL = {"schema.registry.url": "http://127.0.0.1:1"}


@pytest.mark.parametrize(
    "topic",
    [
        "persistent://acme/sales/orders",
        "persistent://acme/sales/orders-partition-0",
        "persistent://acme/sales/orders-partition-17",
        "non-persistent://acme/sales/orders",
        "acme/sales/orders",
    ],
)
def test_every_form_of_a_topic_maps_to_one_subject(topic: str) -> None:
    assert subject_for(topic_name_strategy, topic) == "acme.sales.orders-value"
    assert subject_for(topic_name_strategy, topic, key=True) == "acme.sales.orders-key"


def test_bare_names_are_in_public_default() -> None:
    assert TopicName.parse("orders") == TopicName("public", "default", "orders")
    assert subject_for(topic_name_strategy, "orders-partition-2") == "public.default.orders-value"


def test_partition_suffix_is_only_stripped_at_the_end() -> None:
    assert TopicName.parse("t/n/a-partition-1-b").local_name == "a-partition-1-b"


def test_strategies() -> None:
    ctx = SerializationContext("persistent://acme/sales/orders-partition-3", MessageField.VALUE)
    assert short_topic_name_strategy(ctx, None) == "orders-value"
    assert record_name_strategy(ctx, "com.acme.Order") == "com.acme.Order"
    assert topic_record_name_strategy(ctx, "com.acme.Order") == "acme.sales.orders-com.acme.Order"
    assert topic_record_name_strategy(ctx, None) is None


@pytest.mark.parametrize(
    ("topic", "subject"),
    [
        ("orders", "persistent://public/default/orders-value"),
        ("acme/sales/orders-partition-3", "persistent://acme/sales/orders-value"),
        ("non-persistent://acme/sales/orders", "non-persistent://acme/sales/orders-value"),
    ],
)
def test_full_topic_is_topic_name_strategy_on_the_full_name_of_every_spelling(
    topic: str, subject: str
) -> None:
    assert subject_for(full_topic_name_strategy, topic) == subject
    assert subject_for(full_topic_name_strategy, topic, key=True) == subject.replace("-value", "-key")
    assert (
        ExternalSchemaConfig.from_dict({**URL, "subject.name.strategy": "full-topic"}).subject_name_strategy(
            SerializationContext(topic, MessageField.VALUE), None
        )
        == subject
    )


@pytest.mark.parametrize("topic", ["", "a/b", "persistent://only/two"])
def test_malformed_topics_are_rejected(topic: str) -> None:
    with pytest.raises(ValueError, match="topic"):
        TopicName.parse(topic)


# -- config ---------------------------------------------------------------------------------------


def test_minimal_config_and_defaults() -> None:
    config = ExternalSchemaConfig.from_dict(URL)

    # confluent-kafka's client waits forever by default; ours gives up after 10 s per attempt.
    assert config.registry == {"url": "http://127.0.0.1:1", "timeout": (10.0, 10.0, 10.0, 10.0)}
    assert config.serde == {}
    assert config.schema_id_location == "metadata"
    assert config.subject_name_strategy is topic_name_strategy
    assert not config.pins_a_version


def test_keys_are_routed_to_the_registry_client_and_the_serdes() -> None:
    config = ExternalSchemaConfig.from_dict(
        {
            **URL,
            "basic.auth.user.info": "u:p",
            "cache.latest.ttl.sec": "30",
            "schema.registry.ssl.ca.location": "/ca.pem",
            "auto.register.schemas": "false",
            "use.latest.with.metadata": "application.major.version=2, owner = bob",
            "schema.id.location": "prefix",
            "subject.name.strategy": "short-topic",
        }
    )

    assert config.registry == {
        "url": "http://127.0.0.1:1",
        "basic.auth.user.info": "u:p",
        "cache.latest.ttl.sec": 30,
        "ssl.ca.location": "/ca.pem",
        "timeout": (10.0, 10.0, 10.0, 10.0),
    }
    assert config.serde == {
        "auto.register.schemas": False,
        "use.latest.with.metadata": {"application.major.version": "2", "owner": "bob"},
    }
    assert config.schema_id_location == "prefix"
    assert config.subject_name_strategy is short_topic_name_strategy
    assert config.pins_a_version


def test_a_callable_strategy_is_accepted() -> None:
    def strategy(ctx: SerializationContext | None, record: str | None) -> str:
        return "fixed"

    assert (
        ExternalSchemaConfig.from_dict({**URL, "subject.name.strategy": strategy}).subject_name_strategy
        is strategy
    )


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({}, "'schema.registry.url' is required"),
        (
            {**URL, "auto.register.schema": True},
            "unknown config key 'auto.register.schema'; did you mean 'auto.register.schemas'",
        ),
        ({**URL, "url": "http://x"}, "'url' and 'schema.registry.url' are the same setting: give one"),
        ({**URL, "auto.register.schemas": "yes"}, "'auto.register.schemas' takes a boolean"),
        ({**URL, "auto.register.schemas": 1}, "'auto.register.schemas' takes a boolean"),
        ({**URL, "use.schema.id": "seven"}, "'use.schema.id' takes an integer"),
        ({**URL, "use.schema.id": True}, "'use.schema.id' takes an integer"),
        ({**URL, "use.latest.with.metadata": "major"}, "'major' is not of the form name=value"),
        ({**URL, "use.latest.with.metadata": {"a": 1}}, "takes string keys and values"),
        ({**URL, "schema.id.location": "headers"}, "takes 'metadata', 'prefix' or 'header'"),
        ({**URL, "subject.name.strategy": "topic-name"}, "'topic-name' is not one of topic, short-topic"),
        ({"schema.registry.url": ""}, "'schema.registry.url' takes a non-empty string"),
    ],
)
def test_bad_config_is_rejected_naming_the_key(conf: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ExternalSchemaConfig.from_dict(conf)


def test_schemas_are_taken_as_text_or_as_parsed_dicts() -> None:
    from contracts import mock_factory

    record = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    with mock_factory() as factory:
        from_dict, from_text = factory.avro(record), factory.avro(json.dumps(record))
        encoded = from_dict.encode("t", {"a": 1})
        assert from_text.decode("t", encoded.data, encoded.schema_id) == {"a": 1}
        assert json.loads(factory.json({"type": "object"}).encode("j", {"x": 1}).data) == {"x": 1}
        with pytest.raises(ConfigError, match=r"avro\(\) takes the schema as JSON text, a dict"):
            factory.avro(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("conf", "pinned"),
    [
        ({}, False),
        ({"use.latest.version": "false"}, False),
        ({"use.latest.version": False}, False),
        ({"use.latest.version": "true"}, True),
        ({"use.schema.id": 0}, True),
        ({"use.schema.id": "12"}, True),
        ({"use.latest.with.metadata": "major=2"}, True),
        ({"use.latest.with.metadata": {"major": "2"}}, True),
    ],
)
def test_whether_a_version_is_pinned_is_decided_in_one_place(conf: dict[str, Any], pinned: bool) -> None:
    """Raw values (the console tools', Spark options) and parsed ones (the factory's) agree."""
    assert pins_a_version(conf) is pinned
    assert (
        ExternalSchemaConfig.from_dict({"schema.registry.url": "mock://x", **conf}).pins_a_version is pinned
    )


def test_confluent_kafkas_name_for_the_latest_cache_ttl_and_the_earlier_one() -> None:
    config = ExternalSchemaConfig.from_dict({**URL, "cache.latest.ttl.sec": 30})
    assert config.registry["cache.latest.ttl.sec"] == 30
    with pytest.warns(DeprecationWarning, match="cache.latest.ttl.sec"):
        config = ExternalSchemaConfig.from_dict({**URL, "latest.cache.ttl.sec": 30})
    assert config.registry["cache.latest.ttl.sec"] == 30
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(ConfigError, match="are the same setting: give one"),
    ):
        ExternalSchemaConfig.from_dict({**URL, "cache.latest.ttl.sec": 30, "latest.cache.ttl.sec": 60})


def test_a_confluent_kafka_registry_client_config_works_as_it_is() -> None:
    """confluent-kafka's `SchemaRegistryClient` keys are taken as the Java names beside them."""
    config = ExternalSchemaConfig.from_dict(
        {
            "url": "https://registry:8081",
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.certificate.location": "/etc/cert.pem",
            "ssl.key.location": "/etc/key.pem",
            "ssl.key.password": "hunter2",
            "proxy": "http://proxy:3128",
            "timeout": 2.5,
            "basic.auth.user.info": "u:p",
        }
    )

    assert config.registry["url"] == "https://registry:8081"
    assert (config.registry["ssl.ca.location"], config.registry["proxy"]) == (
        "/etc/ca.pem",
        "http://proxy:3128",
    )
    assert config.registry["ssl.key.password"] == "hunter2" and "hunter2" not in repr(config)
    assert config.registry["timeout"] == (2.5, 2.5, 2.5, 2.5)  # httpx's (connect, read, write, pool)
    assert is_config_key("url") and is_config_key("timeout") and is_config_key("ssl.ca.location")


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        (
            {"url": "http://a", "schema.registry.url": "http://b"},
            "'url' and 'schema.registry.url' are the same",
        ),
        ({"proxy": "http://p", "schema.registry.proxy": "http://q"}, "'proxy' and 'schema.registry.proxy'"),
        ({"timeout": 5, "http.read.timeout.ms": 100}, "give either it or 'http.read.timeout.ms'"),
        ({"timeout": "soon"}, "takes a number of seconds, not 'soon'"),
        ({"timeout": -1}, "takes a positive number of seconds"),
        ({"timeout": True}, "takes a number of seconds"),
    ],
)
def test_a_setting_given_twice_or_a_bad_confluent_timeout_is_refused(
    conf: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ExternalSchemaConfig.from_dict({"url": "http://r", **conf} if "url" not in conf else conf)


@pytest.mark.parametrize(
    ("topic", "parts"),
    [
        ("orders", ("persistent", "public", "default", "orders")),
        ("acme/shop/orders", ("persistent", "acme", "shop", "orders")),
        (
            "non-persistent://acme/shop/orders-partition-2",
            ("non-persistent", "acme", "shop", "orders-partition-2"),
        ),
    ],
)
def test_a_topic_name_is_taken_apart_in_one_place(topic: str, parts: tuple[str, str, str, str]) -> None:
    from pulsar_external_schema.subjects import full_topic_name, split_topic

    assert split_topic(topic) == parts
    assert full_topic_name(topic) == f"{parts[0]}://{parts[1]}/{parts[2]}/{parts[3]}"


@pytest.mark.parametrize("topic", ["", "a/b", "a//c", "a/b/c/d", "http://a/b/c"])
def test_what_is_no_topic_name_is_refused(topic: str) -> None:
    from pulsar_external_schema.subjects import split_topic

    with pytest.raises(ValueError, match="is not a Pulsar topic name"):
        split_topic(topic)


def test_partitions_and_full_names() -> None:
    from pulsar_external_schema.subjects import is_full_topic_name, partition_of, partition_topic

    assert partition_of("persistent://a/b/orders-partition-12") == ("persistent://a/b/orders", 12)
    assert partition_of("persistent://a/b/orders") == ("persistent://a/b/orders", -1)
    assert partition_of("orders-partition-x") == ("orders-partition-x", -1)
    assert partition_topic("persistent://a/b/orders", 3) == "persistent://a/b/orders-partition-3"
    assert partition_of(partition_topic("persistent://a/b/orders", 3)) == ("persistent://a/b/orders", 3)
    assert is_full_topic_name("persistent://a/b/c") and not is_full_topic_name("/data/valid")


@pytest.mark.parametrize(
    ("config", "option", "conf"),
    [
        ({"decode.max.depth": "1_000"}, {"minPartitions": "1_000"}, {"operationTimeoutMs": "1_000"}),
        ({"decode.max.depth": "1e3"}, {"minPartitions": "1e3"}, {"operationTimeoutMs": "1e3"}),
        ({"decode.max.depth": "٣"}, {"minPartitions": "٣"}, {"operationTimeoutMs": "٣"}),
        ({"auto.register.schemas": "yes"}, {"includeData": "yes"}, {"tlsAllowInsecureConnection": "yes"}),
    ],
)
def test_a_boolean_or_an_integer_reads_alike_in_the_config_the_options_and_a_client_conf(
    config: dict[str, str], option: dict[str, str], conf: dict[str, str]
) -> None:
    """One reading of a setting's boolean and integer (`_settings.py`), as Java's parsers take
    them: what Python's `int()` would stretch to (underscores, other scripts' digits) is refused
    in the factory config, the Spark options and a `client.conf` alike, each naming its key."""
    from pulsar_external_schema.connections import ClientConf
    from pulsar_external_schema.tasks.options import SourceOptions

    [(key, value)] = config.items()
    with pytest.raises(ConfigError, match=f"config key {key!r} takes"):
        ExternalSchemaConfig.from_dict({"schema.registry.url": "http://r:8081", key: value})
    [(key, value)] = option.items()
    with pytest.raises(ConfigError, match=f"option {key!r} takes"):
        SourceOptions.parse(
            {
                "topic": "t",
                "service.url": "pulsar://a:6650",
                "schema.registry.url": "http://r:8081",
                key: value,
            }
        )
    [(key, value)] = conf.items()
    with pytest.raises(ConfigError, match=f"Pulsar client key {key!r}"):
        ClientConf.from_options({key: value})
