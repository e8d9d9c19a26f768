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
