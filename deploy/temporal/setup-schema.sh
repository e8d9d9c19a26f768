#!/bin/sh
# Installs or upgrades Temporal's schema. Both steps are idempotent: setup-schema -v 0.0 only
# creates the version tables when absent and update-schema applies just the newer versions,
# so this runs safely on every `docker compose up`.
# Connection settings come from SQL_PLUGIN, SQL_HOST, SQL_PORT, SQL_USER and SQL_PASSWORD.
set -eu

schema=/etc/temporal/schema/postgresql/v12

for pair in temporal:temporal temporal_visibility:visibility; do
  db=${pair%%:*}
  dir=${pair##*:}
  echo "temporal-schema: ${db}"
  temporal-sql-tool --db "${db}" setup-schema -v 0.0
  temporal-sql-tool --db "${db}" update-schema -d "${schema}/${dir}/versioned"
done
echo "temporal-schema: done"
