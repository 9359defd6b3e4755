"""The Spark source's options (tasks/options.py): which are source options and which config keys,
what each requires, and their errors."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from spark_support import offline_options

from pulsar_external_schema import ConfigError
from pulsar_external_schema.tasks.options import SourceOptions
from pulsar_external_schema.tasks.topic_metadata import full_topic_name


def test_options_split_into_source_options_and_config_keys() -> None:
    options = offline_options(
        topics="a, b",
        maxEntriesPerPartition="10",
        includeData="TRUE",
        checkpointLocation="/tmp/x",
        **{"use.latest.version": "true"},
    )
    assert options.topics == ("a", "b") and options.max_entries_per_partition == 10 and options.include_data
    assert options.config == {"schema.registry.url": "http://r", "use.latest.version": "true"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"maxEntriesPerPartition": "0"}, "must be positive"),
        ({"failOnDataLoss": "maybe"}, "takes true or false"),
        ({"schema.registry.ulr": "x"}, "unknown config key 'schema.registry.ulr'"),
        ({"forwardTo": "persistent://public/default/t"}, "'forwardTo' and 'deadLetterTopic' go together"),
        (
            {"deadLetterTopic": "persistent://public/default/d"},
            "'forwardTo' and 'deadLetterTopic' go together",
        ),
    ],
)
def test_bad_options_name_the_option(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        offline_options(**extra)


def test_reading_needs_a_service_url_topics_and_an_admin_url() -> None:
    with pytest.raises(ConfigError, match=r"'service\.url' is required"):
        SourceOptions.parse({"schema.registry.url": "http://r"})
    with pytest.raises(ConfigError, match="'topic', 'topics' or 'topicPattern'"):
        offline_options().require_topics()
    with pytest.raises(ConfigError, match="not both"):
        offline_options(topic="a", topicPattern="persistent://t/n/.*").require_topics()
    with pytest.raises(ConfigError, match=r"'admin\.url' is required"):
        SourceOptions.parse(
            {"service.url": "pulsar://x", "schema.registry.url": "http://r", "topic": "a"}
        ).require_topics()


def test_short_topic_names_are_completed_as_the_clients_do() -> None:
    assert full_topic_name("orders") == "persistent://public/default/orders"
    assert full_topic_name("t/n/orders") == "persistent://t/n/orders"
    assert full_topic_name("non-persistent://t/n/o") == "non-persistent://t/n/o"
    with pytest.raises(ConfigError):
        full_topic_name("n/orders")
