"""The documentation keeps its promises about the code."""

from __future__ import annotations

from conftest import REPO

from pulsar_external_schema.config import KEYS


def test_configuration_reference_lists_every_key() -> None:
    reference = (REPO / "docs" / "configuration.md").read_text()

    missing = [key for key in KEYS if f"| `{key}` |" not in reference]

    assert missing == []
