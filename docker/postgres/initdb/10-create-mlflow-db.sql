-- The MLflow server's backend store: a database `mlflow` beside ReasonLab's own, on the same Postgres.
--
-- The postgres image runs this file once, when it initialises an empty data volume, as
--   psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -f <this file>
-- so the new database belongs to POSTGRES_USER (`reasonlab`). It is idempotent and may be run again
-- by hand, e.g. on a volume initialised before this file existed (docs/operations.md):
--   docker compose exec postgres psql -U reasonlab -d reasonlab -f /docker-entrypoint-initdb.d/10-create-mlflow-db.sql
-- `-v mlflow_db=NAME` creates a database of another name (the tests use that).

\if :{?mlflow_db}
\else
\set mlflow_db mlflow
\endif

SELECT format('CREATE DATABASE %I', :'mlflow_db')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'mlflow_db')\gexec
