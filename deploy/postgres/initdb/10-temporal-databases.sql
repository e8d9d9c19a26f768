-- Runs once, when the postgres-data volume is first initialised (docker-entrypoint-initdb.d).
-- Temporal keeps its state in databases of its own on the shared server, so its schema
-- tool and the product's migrations never touch each other's tables.
CREATE DATABASE temporal;
CREATE DATABASE temporal_visibility;
