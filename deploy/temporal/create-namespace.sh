#!/bin/sh
# Registers the splathost namespace once. The temporal CLI reads TEMPORAL_ADDRESS.
set -eu
: "${NAMESPACE:?NAMESPACE is required}"
: "${RETENTION:=168h}"

# The frontend can report healthy a moment before the namespace registry is ready.
i=0
until temporal operator cluster health >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -ge 30 ]; then
    echo "temporal-namespace: cluster not healthy after 60s" >&2
    exit 1
  fi
  sleep 2
done

if temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1; then
  echo "temporal-namespace: ${NAMESPACE} exists"
else
  temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION"
  echo "temporal-namespace: ${NAMESPACE} created"
fi

# The workflows set these search attributes at start; Temporal refuses a start that names an
# unregistered one, so they must exist before the worker runs. Creating one that exists fails
# harmlessly, hence the describe-first loop.
for attr in integrationId externalUserId splatId sourceSplatId; do
  if temporal operator search-attribute list --namespace "$NAMESPACE" 2>/dev/null | grep -qw "$attr"; then
    echo "temporal-namespace: search attribute ${attr} exists"
  else
    temporal operator search-attribute create --namespace "$NAMESPACE" --name "$attr" --type Keyword
    echo "temporal-namespace: search attribute ${attr} created"
  fi
done
