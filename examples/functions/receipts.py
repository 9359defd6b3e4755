"""A Pulsar Function on external schemas: orders in, receipts out.

Deploy with `pulsar-admin functions create --py receipts.py --classname receipts.Receipts`, its
inputs on `pulsar_external_schema.functions.FunctionSchema` (`--custom-schema-inputs`) and the
registry URL in the user config; docs/functions.md has the whole command.

`handle` gets each order decoded (its data contract applied); what it returns is encoded with the
schema registered for the output topic and published with its schema id in `__schema_id`.
"""

from typing import Any

from pulsar_external_schema.functions import ExternalFunction


class Receipts(ExternalFunction):
    def handle(self, order: Any, context: Any) -> Any:
        context.get_logger().info("receipt for order %s", order["id"])
        return {"id": order["id"], "label": order["item"].upper()}
