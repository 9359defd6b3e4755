"""The documentation keeps its promises about the code."""

from __future__ import annotations

from conftest import REPO

from pulsar_external_schema.config import ALIASES, KEYS


def test_configuration_reference_lists_every_key() -> None:
    reference = (REPO / "docs" / "configuration.md").read_text()

    missing = [key for key in KEYS if f"| `{key}` |" not in reference]
    spellings = [(alias, key) for alias, key in ALIASES.items() if f"| `{alias}` | `{key}`" not in reference]

    assert missing == [] and spellings == []
    assert "| `timeout` | confluent-kafka's request timeout, in seconds" in reference


def test_every_flag_docs_cli_md_names_is_a_flag_of_the_tool() -> None:
    """docs/cli.md and the console tools cannot disagree on a flag's name."""
    import argparse
    import re

    from pulsar_external_schema.cli import build_parser

    parser = build_parser()
    flags = set(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                flags |= set(command._option_string_actions)
    page = (REPO / "docs" / "cli.md").read_text()
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z])", page))

    assert named - flags == set()


def test_every_config_key_docs_cli_md_passes_with_p_is_a_config_key() -> None:
    import re

    from pulsar_external_schema.cli.habits import _CONSUME_PROPERTIES, _PRODUCE_PROPERTIES

    page = (REPO / "docs" / "cli.md").read_text()
    keys = set(re.findall(r"-p ([a-z][a-z.]*[a-z])=", page))
    console = set(_PRODUCE_PROPERTIES) | set(_CONSUME_PROPERTIES)

    assert keys and keys - set(KEYS) - console == set()
