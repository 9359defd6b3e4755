"""Running Pulsar Functions in `LocalRunner` on the real services, for the integration, journey
and reliability tests."""

from __future__ import annotations

from typing import Any

from conftest import Services

from pulsar_external_schema.functions import LocalRunner, RunResult, ValidateFunction

SCHEMA_CLASS = "pulsar_external_schema.functions.FunctionSchema"


def properties_of(services: Services, **extra: Any) -> dict[str, Any]:
    return {"schema.registry.url": services.registry_url, **extra}


def run_function(
    client: Any,
    function: Any,
    services: Services,
    inputs: list[str],
    *,
    max_messages: int | None = None,
    timeout_millis: int = 2_000,
    **options: Any,
) -> RunResult:
    """`LocalRunner` with FunctionSchema on the inputs and the registry in schema properties and
    user config, unless `options` say otherwise."""
    options = {
        "custom_schema": SCHEMA_CLASS,
        "schema_properties": properties_of(services),
        "user_config": properties_of(services),
        **options,
    }
    with LocalRunner(client, function, inputs=inputs, **options) as runner:
        return runner.run(max_messages=max_messages, timeout_millis=timeout_millis)


def run_validate_function(
    client: Any, services: Services, source: str, valid: str, dlq: str, **options: Any
) -> RunResult:
    """`ValidateFunction` from `source` to `valid`, dead letters to `dlq`, as deployed (its
    `ValidatingSchema` on the input)."""
    return run_function(
        client,
        ValidateFunction,
        services,
        [source],
        output=valid,
        custom_schema="pulsar_external_schema.functions.ValidatingSchema",
        user_config={"dlq.topic": dlq},
        **options,
    )
