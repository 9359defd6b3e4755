"""The rule engine's executors and actions, as `codec/` compiles and runs them.

    settings.py        the engine's part of the config (layer 1: `config` reads it)
    rule_registry.py   the executors and actions one factory's schemas run, registered once
    cel.py             CEL and CEL_FIELD on a compiled engine, cel-python the fallback and reference
    cel_subset.py      the everyday CEL condition, evaluated in Python where it can only say "passes"
    jsonata.py         JSONATA migrations, with the Java client's runaway limits
    encryption.py      ENCRYPT field rules; deks.py: the DEKs of a forwarded version
    actions.py         ERROR (an error that says what failed) and DLQ (a copy to a Pulsar topic)
    context.py         what an action knows of the Pulsar message
    referenced.py      the rules of referenced schemas, on the parts of a message of their type
    checks.py          a rule set checked before it is registered; field_names.py: the field names it uses

`rules/` imports nothing of `codec/`: the codec compiles rules into its plans, and the reference
serdes that run them for every message the plans do not take are the codec's (`codec/serdes.py`).
Its modules are imported by name; this package exports nothing itself.
"""

__all__: list[str] = []
