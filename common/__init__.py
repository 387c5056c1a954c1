"""What the API and the worker share and nothing else (DESIGN.md): the run-status vocabulary
(``common.runs``), the settings base class (``common.settings``), broker options and queue names
(``common.broker``), how MLflow names keys, params and statuses for both of its writers
(``common.mlflow_names``). Imports the standard library and pydantic(-settings) only, so either side may
import it."""
