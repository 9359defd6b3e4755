"""Schemas shared by the tests."""

from __future__ import annotations

import json

ORDER_V1 = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
    }
)
ORDER_V2 = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "item", "type": "string"},
            {"name": "quantity", "type": "int", "default": 1},
        ],
    }
)
