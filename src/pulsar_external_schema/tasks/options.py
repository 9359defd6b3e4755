"""The options of the `pulsar-external` data source, parsed once on the driver.

Pulsar options have the Pulsar Spark connector's names (`service.url`, `admin.url`) and Spark's
Kafka source names (`startingOffsets`, `failOnDataLoss`, ...). Every other option is a key of this
package's configuration (`schema.registry.url`, `use.latest.version`, `rule.executors...`), checked
the same way: an unknown key is an error that names it. Among them, `pulsar.client.conf` (a
Pulsar `client.conf`) and `pulsar.client.<key>` (any of its keys) give the cluster's TLS and
credentials (`connections.py`), for the broker and the admin API alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._settings import boolean, integer
from ..config import CLIENT_PREFIX, ExternalSchemaConfig, with_broker_token
from ..connections import ClientConf, Layer, layered
from ..errors import ConfigError
from .offsets import parse_offsets

#: Option names are case-insensitive (Spark lowercases them); errors use the documented spelling.
SPELLING = {
    "topicpattern": "topicPattern",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "maxentriesperpartition": "maxEntriesPerPartition",
    "minpartitions": "minPartitions",
    "failondataloss": "failOnDataLoss",
    "includedata": "includeData",
    "trustruleproperties": "trustRuleProperties",
    "producername": "producerName",
    "sequencebase": "sequenceBase",
    "registerforwarded": "registerForwarded",
    "forwardto": "forwardTo",
    "deadlettertopic": "deadLetterTopic",
}

SOURCE_OPTIONS = {
    "service.url": "Pulsar service URL, e.g. pulsar://127.0.0.1:6650 (required, unless "
    "pulsar.client.conf gives brokerServiceUrl)",
    "admin.url": "Pulsar admin REST URL, e.g. http://127.0.0.1:8080 (required to read, unless "
    "pulsar.client.conf gives webServiceUrl)",
    "topic": "one topic to read, or the topic written to",
    "topics": "comma-separated topics to read",
    "topicpattern": "regex over full topic names of one namespace, e.g. persistent://public/default/orders-.*",
    "startingoffsets": "earliest (default), latest, or JSON per partition topic",
    "endingoffsets": "latest (default), or JSON per partition topic; batch queries only",
    "maxentriesperpartition": "at most this many entries per partition per micro-batch",
    "minpartitions": "at least this many Spark partitions: large topic partitions are read in pieces",
    "failondataloss": "true (default): fail when messages to read were deleted by retention",
    "includedata": "true: add a binary `data` column with the original payload (for a DLQ)",
    "protobuf.message.class": "import path of the generated Protobuf class (pkg.module.Class)",
    "pulsar.auth.token": "a JWT for the broker and the admin API",
    "trustruleproperties": "true (default): a DLQ copy skips the rule it failed; false: validate it all",
    "read.timeout.ms": "how long a read waits for a message the broker announced (default 30000)",
    "reader": "auto (default): the native reader where it can read the query, else the Python path; "
    "native: the native reader or an error; python: the Python path",
    "producername": "writer: producer name prefix; enables deduplicated, exactly-once writes",
    "sequencebase": "writer: the batch number of a batch write; added to the micro-batch id of a stream",
    "writer": "writer: auto (default): `data` rows sent by the native extension where it can send them, "
    "else by pulsar-client; native: the native extension or an error; python: pulsar-client",
    "registerforwarded": "writer: true (default): register the writer version of each `data` row's "
    "`__schema_id` under the topic's subject, so its readers' subject check passes",
    "forwardto": "stream (the validation job): forward each valid message, untouched, to this topic as "
    "it is read, and give the verdict columns only (`spark/forwarding.py`); needs deadLetterTopic",
    "deadlettertopic": "stream, with forwardTo: where invalid messages go, with `__rule.*` reasons",
}


#: Rows per Arrow batch a range reader gives (the Spark source's; `arrow.read_batches` takes a
#: `batch_size`).
ROWS_PER_BATCH = 8192

#: The values of the options `reader` and `writer`: the native extension where it can (`auto`),
#: always (`native`), or never (`python`).
PATHS = ("auto", "native", "python")

#: Options Spark itself passes to every source and sink.
SPARK_OPTIONS = frozenset({"path", "checkpointlocation", "queryname"})


@dataclass(frozen=True)
class SourceOptions:
    service_url: str
    admin_url: str | None
    topics: tuple[str, ...]
    topic_pattern: str | None
    starting_offsets: str | dict[str, Any]
    ending_offsets: str | dict[str, Any]
    max_entries_per_partition: int | None
    min_partitions: int | None
    fail_on_data_loss: bool
    include_data: bool
    protobuf_message_class: str | None
    auth_token: str | None = field(repr=False)
    read_timeout_ms: int
    trust_rule_properties: bool
    producer_name: str | None
    sequence_base: int | None
    register_forwarded: bool = True
    reader: str = "auto"
    """Which reader reads: auto, native or python (`native.py`)."""
    writer: str = "auto"
    """Which producer sends a sink's `data` rows: auto, native or python (`native.py`)."""
    forward_to: str | None = None
    """A stream's topic of valid messages, forwarded as they are read (`forwarding.py`)."""
    dead_letter_topic: str | None = None
    """With `forward_to`: the topic of invalid messages."""
    batch_size: int = ROWS_PER_BATCH
    """Rows per Arrow batch of a range read (`rows.py`, `native.py`); and the most rows a writer
    encodes at once (`writing/rows.py`)."""
    protobuf_class_named: str = "option 'protobuf.message.class'"
    """How the caller spells `protobuf_message_class` in its errors (an option, an argument)."""
    config: dict[str, Any] = field(default_factory=dict, repr=False)
    """This package's configuration keys (the registry, serdes and rules)."""
    client: ClientConf = field(default_factory=ClientConf)
    """How to connect: `pulsar.client.*` with `service.url`, `admin.url` and `pulsar.auth.token`
    over them; every Pulsar client and admin call of the query is made from it."""

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        values = {key.lower(): value for key, value in options.items() if key.lower() not in SPARK_OPTIONS}
        source = {key: values.pop(key) for key in list(values) if key in SOURCE_OPTIONS}
        token = source.get("pulsar.auth.token")
        values = with_broker_token(values, token, "pulsar.auth.token")
        config = ExternalSchemaConfig.from_dict(values)  # fail on the driver, with the key's name
        # the options over `pulsar.client.<key>` over the file of `pulsar.client.conf`; a line
        # in the driver's log where a key's URL is used over the file's
        chosen = layered(
            Layer(
                ClientConf().overridden(
                    service_url=source.get("service.url"),
                    web_service_url=source.get("admin.url"),
                    token=token,
                ),
                "the options",
                {"service_url": "option 'service.url'", "web_service_url": "option 'admin.url'"},
                explicit=True,
            ),
            *ClientConf.prefixed_layers(values, CLIENT_PREFIX, "option"),
        )
        chosen.announce()
        client = chosen.conf
        service_url = client.service_url
        if not service_url:
            raise ConfigError(
                "option 'service.url' is required (the Pulsar service URL, e.g. pulsar://127.0.0.1:6650), "
                "or brokerServiceUrl in the file of 'pulsar.client.conf'"
            )
        client.check()
        # the client configuration read once: executors get its keys, not the file's path
        values = {
            **{k: v for k, v in values.items() if not k.lower().startswith(CLIENT_PREFIX)},
            **(config.pulsar_client.as_options(CLIENT_PREFIX) if config.pulsar_client else {}),
        }
        topics = tuple(t.strip() for t in source.get("topics", "").split(",") if t.strip())
        if source.get("topic"):
            topics = (*topics, source["topic"].strip())
        parsed = cls(
            service_url=service_url,
            admin_url=client.web_service_url,
            topics=topics,
            topic_pattern=source.get("topicpattern"),
            starting_offsets=parse_offsets("startingOffsets", source.get("startingoffsets"), "earliest"),
            ending_offsets=parse_offsets("endingOffsets", source.get("endingoffsets"), "latest"),
            max_entries_per_partition=_positive_int(source, "maxentriesperpartition"),
            min_partitions=_positive_int(source, "minpartitions"),
            fail_on_data_loss=_bool(source, "failondataloss", True),
            include_data=_bool(source, "includedata", False),
            protobuf_message_class=source.get("protobuf.message.class"),
            auth_token=token,
            read_timeout_ms=_positive_int(source, "read.timeout.ms") or 30_000,
            trust_rule_properties=_bool(source, "trustruleproperties", True),
            producer_name=source.get("producername"),
            sequence_base=_int(source, "sequencebase"),
            register_forwarded=_bool(source, "registerforwarded", True),
            reader=_choice(source, "reader", PATHS, "auto"),
            writer=_choice(source, "writer", PATHS, "auto"),
            forward_to=source.get("forwardto") or None,
            dead_letter_topic=source.get("deadlettertopic") or None,
            config=values,
            client=client,
        )
        if (parsed.forward_to is None) != (parsed.dead_letter_topic is None):
            raise ConfigError(
                "the options 'forwardTo' and 'deadLetterTopic' go together: set both, or neither"
            )
        return parsed

    def require_topics(self) -> None:
        if not self.topics and not self.topic_pattern:
            raise ConfigError("set one of the options 'topic', 'topics' or 'topicPattern'")
        if self.topics and self.topic_pattern:
            raise ConfigError("set either 'topic'/'topics' or 'topicPattern', not both")
        if not self.admin_url:
            raise ConfigError(
                "option 'admin.url' is required to read (the Pulsar admin REST URL, e.g. "
                "http://127.0.0.1:8080), or webServiceUrl in the file of 'pulsar.client.conf'"
            )


def _bool(source: Mapping[str, str], key: str, default: bool) -> bool:
    value = source.get(key)
    if value is None:
        return default
    flag = boolean(value)
    if flag is None:
        raise ConfigError(f"option {SPELLING.get(key, key)!r} takes true or false, not {value!r}")
    return flag


def _choice(source: Mapping[str, str], key: str, choices: tuple[str, ...], default: str) -> str:
    value = source.get(key)
    if value is None:
        return default
    if value.strip().lower() in choices:
        return value.strip().lower()
    raise ConfigError(f"option {SPELLING.get(key, key)!r} takes {', '.join(choices)}, not {value!r}")


def _int(source: Mapping[str, str], key: str) -> int | None:
    value = source.get(key)
    if value is None:
        return None
    number = integer(value)
    if number is None:
        raise ConfigError(f"option {SPELLING.get(key, key)!r} takes an integer, not {value!r}")
    return number


def _positive_int(source: Mapping[str, str], key: str) -> int | None:
    number = _int(source, key)
    if number is not None and number <= 0:
        raise ConfigError(f"option {SPELLING.get(key, key)!r} must be positive, not {number}")
    return number
