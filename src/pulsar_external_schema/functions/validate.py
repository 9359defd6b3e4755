"""`ValidateFunction`: the validation pipeline inside the Pulsar cluster.

    pulsar-admin functions create --classname pulsar_external_schema.functions.ValidateFunction \\
        --custom-schema-inputs "$INPUTS" --output orders-valid \\
        --user-config '{"dlq.topic": "orders-dlq"}' ...

with INPUTS mapping each input topic to `{"schemaType":
"pulsar_external_schema.functions.ValidatingSchema", "schemaProperties": {"schema.registry.url":
...}}` as a JSON string (docs/functions.md has the whole command).

`ValidatingSchema` decodes each message with its schema id and its subject's data contract (READ
rules). A valid message goes on to the output topic untouched: same bytes, properties (so the same
schema id), key and event time; its writer version is registered under the output topic's subject
first, so that the output is a topic like any other for its readers. An invalid one (bad bytes,
no or unknown schema id, a failed rule, whatever the rule's action) goes to `dlq.topic` with its
original bytes and `__rule.*` reasons. `__rule.*` properties a producer set are not trusted, so
none can skip a rule. A registry outage raises, and the runtime redelivers the message later.

The input needs this schema, not the runtime's default serde: that one turns payloads that happen
to be UTF-8 text into `str` or even `int`, and the original bytes are lost.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..deadletter import configured_dead_letter_topic
from ..errors import ConfigError
from ..rules.actions import InvalidMessageAction
from ..schema_id import SCHEMA_ID_PROPERTY
from ..topic_schemas import ForwardedSchemas
from .base import DEAD_LETTER_TOPIC, ExternalFunction, publish_bytes
from .schema import FunctionSchema, Rejected


@dataclass(frozen=True)
class Valid:
    """A message that decoded and passed its rules, with its decoded value, and where the writer
    versions of what is forwarded are registered (the input schema's registry)."""

    value: Any
    message: Any
    forwarded: ForwardedSchemas


class ValidatingSchema(FunctionSchema):
    """`FunctionSchema` for `ValidateFunction`: `Valid(value, message)` or `Rejected`.

    A rule's DLQ action marks the message invalid instead of publishing it (the function writes
    its one DLQ topic), and the message's own `__rule.*` properties are ignored.
    """

    def _rule_actions(self) -> list[Any] | None:
        return [InvalidMessageAction()]

    def decode_message(self, msg: Any, *, trust_rule_properties: bool = False) -> Any:
        decoded = super().decode_message(msg, trust_rule_properties=False)
        return decoded if isinstance(decoded, Rejected) else Valid(decoded, msg, self.forwarded)

    @functools.cached_property
    def forwarded(self) -> ForwardedSchemas:
        """The output topics' subjects the writer versions of valid messages are registered under."""
        return ForwardedSchemas(self.factory)


class ValidateFunction(ExternalFunction):
    """Valid messages to the output topic untouched, invalid ones to `dlq.topic`. Each writer
    version a valid message carries is registered under the output topic's subject before the first
    of them is published, so the output's readers read it with their default config
    (`topic_schemas.ForwardedSchemas`); a subject that refuses one raises, and the runtime redelivers."""

    def process(self, input: Any, context: Any) -> None:
        dead_letter_topic = configured_dead_letter_topic(context.get_user_config_value)
        output_topic = context.get_output_topic()
        if not dead_letter_topic or not output_topic:
            raise ConfigError(
                f"ValidateFunction needs an output topic (--output) and the user config key "
                f'{DEAD_LETTER_TOPIC!r} (--user-config \'{{"{DEAD_LETTER_TOPIC}": "..."}}\')'
            )
        if isinstance(input, Rejected):
            self.rejected(input, context)
            return None
        if not isinstance(input, Valid):
            raise ConfigError(
                "ValidateFunction needs pulsar_external_schema.functions.ValidatingSchema on its inputs "
                f"(--custom-schema-inputs); it got a {type(input).__name__}"
            )
        msg = input.message
        properties = msg.properties()
        input.forwarded.forward(
            output_topic, properties.get(SCHEMA_ID_PROPERTY), source_topic=msg.topic_name()
        )
        publish_bytes(
            context,
            output_topic,
            bytes(msg.data()),
            properties,
            partition_key=msg.partition_key() or None,
            event_timestamp=msg.event_timestamp() or None,
            wait=self.wait_for_publish,
            timeout_seconds=self.publish_timeout_seconds,
        )
        return None
