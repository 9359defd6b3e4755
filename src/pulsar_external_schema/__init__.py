"""External schemas (Pulsar PIP-420) backed by a Confluent-compatible schema registry.

The public API is re-exported here; everything else is internal (plumbing such as
`rules.context.MessageContext` and `subjects.TopicName` stays in its module; importing them from
here still works for one release, with a `DeprecationWarning`).
"""

from ._deprecated import deprecated_names
from ._imports import lazy_exports
from ._version import VERSION

#: `typing.TYPE_CHECKING`, which type checkers read as true, without importing `typing`: the
#: console tools start from this module, and a Ctrl-C is theirs to handle once they run.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from .config import ExternalSchemaConfig
    from .connections import ClientConf, connect
    from .consumer import ConsumeResult, consume, consume_async, subscribe
    from .errors import (
        CelCompileError,
        CelEvaluationError,
        ConfigError,
        DeadLetteredError,
        DecodeError,
        DecodeLimitError,
        EncodeError,
        ExternalSchemaError,
        ForeignSchemaIdError,
        IncompatibleSchemaError,
        JsonataError,
        JsonSchemaError,
        MissingSchemaIdError,
        PublishError,
        PulsarAdminError,
        RegistryUnavailableError,
        RuleSetError,
        RuleViolationError,
        SchemaIdError,
        SchemaParseError,
        SparkTypeError,
        SubjectNotFoundError,
        UnknownSchemaIdError,
        UnsupportedBrokerError,
        UnsupportedProtobufError,
        ValueOutsideSchemaError,
    )
    from .factory import SchemaRegistrySchemaFactory
    from .json_evolution import JsonSchemaEvolution
    from .producer import AsyncProducer, Producer, create_async_producer, create_producer
    from .rules.checks import check_metadata, check_rule_set
    from .schema import EncodeData, ExternalSchema, KeyValue, KeyValueExternalSchema
    from .schema_id import SCHEMA_ID_PROPERTY

#: Imported on first use (`_imports.lazy_exports`: why). The errors too: they derive from
#: confluent-kafka's `SerializationError`, and importing confluent-kafka takes tens of
#: milliseconds, which a console tool's `--help` does not need.
_LAZY = {
    **dict.fromkeys(
        [
            "CelCompileError",
            "CelEvaluationError",
            "ConfigError",
            "DeadLetteredError",
            "DecodeError",
            "DecodeLimitError",
            "EncodeError",
            "ExternalSchemaError",
            "ForeignSchemaIdError",
            "IncompatibleSchemaError",
            "JsonSchemaError",
            "JsonataError",
            "MissingSchemaIdError",
            "PublishError",
            "PulsarAdminError",
            "RegistryUnavailableError",
            "RuleSetError",
            "RuleViolationError",
            "SchemaIdError",
            "SchemaParseError",
            "SparkTypeError",
            "SubjectNotFoundError",
            "UnknownSchemaIdError",
            "UnsupportedBrokerError",
            "UnsupportedProtobufError",
            "ValueOutsideSchemaError",
        ],
        ".errors",
    ),
    "SCHEMA_ID_PROPERTY": ".schema_id",
    "ExternalSchemaConfig": ".config",
    **dict.fromkeys(["ClientConf", "connect"], ".connections"),
    **dict.fromkeys(["ConsumeResult", "consume", "consume_async", "subscribe"], ".consumer"),
    "SchemaRegistrySchemaFactory": ".factory",
    "JsonSchemaEvolution": ".json_evolution",
    **dict.fromkeys(["AsyncProducer", "Producer", "create_async_producer", "create_producer"], ".producer"),
    **dict.fromkeys(["check_metadata", "check_rule_set"], ".rules.checks"),
    **dict.fromkeys(["EncodeData", "ExternalSchema", "KeyValue", "KeyValueExternalSchema"], ".schema"),
}

__version__ = VERSION

__all__ = [
    "SCHEMA_ID_PROPERTY",
    "AsyncProducer",
    "CelCompileError",
    "CelEvaluationError",
    "ClientConf",
    "ConfigError",
    "ConsumeResult",
    "DeadLetteredError",
    "DecodeError",
    "DecodeLimitError",
    "EncodeData",
    "EncodeError",
    "ExternalSchema",
    "ExternalSchemaConfig",
    "ExternalSchemaError",
    "ForeignSchemaIdError",
    "IncompatibleSchemaError",
    "JsonSchemaError",
    "JsonSchemaEvolution",
    "JsonataError",
    "KeyValue",
    "KeyValueExternalSchema",
    "MissingSchemaIdError",
    "Producer",
    "PublishError",
    "PulsarAdminError",
    "RegistryUnavailableError",
    "RuleSetError",
    "RuleViolationError",
    "SchemaIdError",
    "SchemaParseError",
    "SchemaRegistrySchemaFactory",
    "SparkTypeError",
    "SubjectNotFoundError",
    "UnknownSchemaIdError",
    "UnsupportedBrokerError",
    "UnsupportedProtobufError",
    "ValueOutsideSchemaError",
    "__version__",
    "check_metadata",
    "check_rule_set",
    "connect",
    "consume",
    "consume_async",
    "create_async_producer",
    "create_producer",
    "subscribe",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    _LAZY,
    deprecated_names(
        __name__,
        {
            "MessageContext": "pulsar_external_schema.rules.context.MessageContext",
            "TopicName": "pulsar_external_schema.subjects.TopicName",
        },
        wrapped=True,
    ),
)
