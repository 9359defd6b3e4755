#!/usr/bin/env bash
# The console tools on Confluent's data-contract quick start, then the registry tools.
#
#     eval "$(scripts/services env)" && examples/console.sh      # (after scripts/services up)
#
# Needs PULSAR_SERVICE_URL and SCHEMA_REGISTRY_URL, and `pulsar-external-schema` on the PATH
# (`. .venv/bin/activate` in a clone set up by scripts/demo or scripts/bootstrap).
set -uo pipefail
topic="console-$(date +%s)-$RANDOM"   # a fresh topic, so the example can run again

echo "== produce: the second record breaks the rule and is rejected (exit code 1)"
pulsar-external-schema produce --topic "$topic" \
  --value-schema '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}]}' \
  --value-rule-set '{"domainRules":[{"name":"checkLen","kind":"CONDITION","type":"CEL",
      "mode":"WRITE","expr":"size(message.f1) < 10","onFailure":"ERROR"}]}' <<'RECORDS'
{"f1": "success"}
{"f1": "this will fail"}
RECORDS
echo "produce exit code: $?"

echo "== consume: only the valid record is in the topic"
pulsar-external-schema consume --topic "$topic" --from-beginning --timeout-ms 3000 --quiet

echo "== get: the schema and its rule set, as registered"
pulsar-external-schema get --topic "$topic"

echo "== check: a version 2 that changes the type of f1 (exit code 1, with the reason)"
pulsar-external-schema check --topic "$topic" \
  --schema '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"int"}]}'
echo "check exit code: $?"
