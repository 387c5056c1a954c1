"""MLflow's own client logging into ReasonLab, unchanged: the part of MLflow's REST tracking API that
``mlflow`` (3.x) calls to log, served under ``/api/v1/mlflow/<project>`` (docs/tracking.md, "MLflow's own
client", has the table of what is served).

``MLFLOW_TRACKING_URI=http://<host>/api/v1/mlflow/<project>`` and ``MLFLOW_TRACKING_TOKEN=<an API token>``
make ``mlflow.log_metric``, Transformers' ``Trainer(report_to="mlflow")`` and Lightning's ``MLFlowLogger`` log
into the project. The mapping, the reverse of the MLflow mirror's (``common.mlflow_names``):

- an MLflow experiment is one of the project's experiments; its id is the platform's decimal id (``0``, the
  id MLflow's client uses when none is set, is the project's external experiment ``Default``); its name is
  an external experiment's, as the SDK's ``experiment=`` names them;
- an MLflow run is a run of kind ``external`` (queue ``mlflow``), its id the platform's decimal id; its status
  is ``RUNNING``, ``SCHEDULED`` (queued), ``FINISHED`` (succeeded), ``FAILED`` or ``KILLED`` (cancelled);
- metrics go through the metric route's ingest (one point per run, key and step; MLflow's timestamp kept;
  NaN and infinities stored and answered as such); params are the run's logged params;
- tags: ``mlflow.runName`` is the run's name; MLflow's other own tags (``mlflow.user``, ``mlflow.source.*``)
  are kept in the run's provenance; any other tag is the run's label ``key=value``;
- artifacts: the run's ``artifact_uri`` is ``mlflow-artifacts:/<experiment>/<run>/artifacts``, which the
  client resolves to this prefix's artifact proxy; the files are the run's ``outputs/`` in the store.

A run MLflow's client drives sends no heartbeats: each call that writes to it is one, and the reaper
crashes it only after ``REASONLAB_MLFLOW_RUN_TIMEOUT`` without one; ``set_terminated`` ends it. Errors are
MLflow's (``backend.mlflowcompat.errors``).
"""
