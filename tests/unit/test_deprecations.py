"""Every old spelling of a public name still works for a minor release, and warns naming the new one.

The list below is this test's own: an old spelling dropped from the package fails here, and one
added to the package without a case here fails `test_every_registered_spelling_is_listed_here`.
CHANGELOG.md's "Deprecated" section names each."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pulsar_external_schema
import pulsar_external_schema.evolution
from pulsar_external_schema import _deprecated
from pulsar_external_schema.config import ExternalSchemaConfig
from pulsar_external_schema.deadletter import configured_dead_letter_topic
from pulsar_external_schema.errors import ConfigError
from pulsar_external_schema.spark.pipeline import ValidationJob

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {"service.url": "pulsar://x:6650", "admin.url": "http://x:8080", "schema.registry.url": "http://x"}
DLQ = "persistent://acme/shop/orders-dlq"


def _validation_job_with_dlq() -> Any:
    job = ValidationJob(  # type: ignore[call-arg]
        input="persistent://acme/shop/orders",
        valid="persistent://acme/shop/orders-valid",
        dlq=DLQ,
        checkpoint="/tmp/checkpoint",
        options=OPTIONS,
    )
    return job.dead_letter_topic


def _function_user_config_with_the_old_key() -> Any:
    return configured_dead_letter_topic({"dead.letter.topic": DLQ}.get)


def _config_with_the_old_cache_key() -> Any:
    return ExternalSchemaConfig.from_dict({"schema.registry.url": "http://x", "latest.cache.ttl.sec": 5})


def _imported(module: Any, name: str) -> Callable[[], Any]:
    return lambda: getattr(module, name)


#: (kind, old, new, what using the old spelling gives, what it must give)
CASES: list[tuple[str, str, str, Callable[[], Any], Any]] = [
    (
        "name",
        "MessageContext",
        "pulsar_external_schema.rules.context.MessageContext",
        _imported(pulsar_external_schema, "MessageContext"),
        pulsar_external_schema.rules.context.MessageContext,
    ),
    (
        "name",
        "TopicName",
        "pulsar_external_schema.subjects.TopicName",
        _imported(pulsar_external_schema, "TopicName"),
        pulsar_external_schema.subjects.TopicName,
    ),
    (
        "name",
        "JsonSchemaEvolution",
        "pulsar_external_schema.json_evolution.JsonSchemaEvolution",
        _imported(pulsar_external_schema.evolution, "JsonSchemaEvolution"),
        pulsar_external_schema.JsonSchemaEvolution,
    ),
    ("parameter", "dlq", "dead_letter_topic", _validation_job_with_dlq, DLQ),
    ("config key", "dead.letter.topic", "dlq.topic", _function_user_config_with_the_old_key, DLQ),
    (
        "config key",
        "latest.cache.ttl.sec",
        "cache.latest.ttl.sec",
        lambda: _config_with_the_old_cache_key().registry["cache.latest.ttl.sec"],
        5,
    ),
]


@pytest.mark.parametrize(("kind", "old", "new", "use", "expected"), CASES, ids=[case[1] for case in CASES])
def test_an_old_spelling_still_works_and_warns_with_the_new_one(
    kind: str, old: str, new: str, use: Callable[[], Any], expected: Any
) -> None:
    with pytest.warns(DeprecationWarning) as warned:
        got = use()
    assert got is expected or got == expected
    [warning] = [w for w in warned if issubclass(w.category, DeprecationWarning)]
    text = str(warning.message)
    assert old in text and new in text and "deprecated" in text
    assert warning.filename == __file__, "the warning points at the caller's line"


def test_every_registered_spelling_is_listed_here() -> None:
    registered = {(d.kind, d.old, d.new) for d in _deprecated.DEPRECATED}
    assert registered == {(kind, old, new) for kind, old, new, *_ in CASES}


def test_the_changelog_names_every_old_spelling() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    deprecated = changelog.split("### Deprecated", 1)[1].split("\n## ", 1)[0]
    for _, old, new, *_ in CASES:
        assert old in deprecated and new.rpartition(".")[2] in deprecated, old


def test_old_and_new_spelling_together_is_an_error() -> None:
    with pytest.raises(TypeError, match=r"dlq= and dead_letter_topic="):
        ValidationJob(  # type: ignore[call-arg]
            input="persistent://a/b/c",
            valid="persistent://a/b/d",
            dlq=DLQ,
            dead_letter_topic=DLQ,
            checkpoint="/tmp/c",
            options=OPTIONS,
        )


@pytest.mark.parametrize(
    "read",
    [
        lambda conf: configured_dead_letter_topic(conf.get),  # a Function's user config, key by key
        lambda conf: ExternalSchemaConfig.from_dict({"schema.registry.url": "http://x", **conf}),
    ],
    ids=["user config", "from_dict"],
)
def test_a_key_and_its_earlier_name_together_are_one_rule_everywhere(read: Callable[[Any], Any]) -> None:
    both = {"dlq.topic": DLQ, "dead.letter.topic": DLQ}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ConfigError, match=r"'dead.letter.topic' and 'dlq.topic' are the same setting"):
            read(both)


def test_the_new_spellings_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ValidationJob("persistent://a/b/c", "persistent://a/b/d", DLQ, "/tmp/c", OPTIONS)
        assert configured_dead_letter_topic({"dlq.topic": DLQ}.get) == DLQ
        assert pulsar_external_schema.JsonSchemaEvolution is not None
