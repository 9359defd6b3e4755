"""Pulsar Functions (Python) on external schemas.

* `FunctionSchema`: the custom input schema (`--custom-schema-inputs`), built by the runtime as
  `FunctionSchema(record_cls, schema_properties)`; undecodable messages arrive as `Rejected`.
* `ExternalFunction`: a base class whose `handle(value, context)` gets decoded values and whose
  results are published encoded, with the schema id in the `__schema_id` property.
* `ValidateFunction` (inputs on `ValidatingSchema`): valid messages to the output topic untouched,
  invalid ones to a DLQ topic.
* `LocalRunner` / `LocalContext`: run a function in this process as the runtime would.

See docs/functions.md for deployment with `pulsar-admin functions create`.
"""

from ..errors import PublishError
from .base import DEAD_LETTER_TOPIC, ExternalFunction
from .local import LocalContext, LocalRunner, RunResult, make_input_schema
from .schema import FunctionSchema, Rejected
from .validate import Valid, ValidateFunction, ValidatingSchema

__all__ = [
    "DEAD_LETTER_TOPIC",
    "ExternalFunction",
    "FunctionSchema",
    "LocalContext",
    "LocalRunner",
    "PublishError",
    "Rejected",
    "RunResult",
    "Valid",
    "ValidateFunction",
    "ValidatingSchema",
    "make_input_schema",
]
