"""The validation function: deploy with `--classname validate.ValidateFunction` (docs/functions.md).

Valid messages go to the output topic untouched, invalid ones to `dlq.topic` with reasons.
"""

from pulsar_external_schema.functions import ValidateFunction

__all__ = ["ValidateFunction"]
