"""MLflow's REST messages as the compatible routes read and answer them: the JSON of MLflow's protobuf
messages (``mlflow/protos/service.proto``: snake_case fields, int64 as numbers or numeric strings, enums by
name), with the field names MLflow's client sends, so a bad field's 400 names it as the client knows it.
Fields MLflow has and these routes do not use (``model_id``, ``dataset_name``, ...) are ignored.

Answers leave out unset fields (``exclude_none``), as MLflow's server does; a metric value that is NaN or an
infinity (or a gap, which MLflow has not: NaN) is answered as ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``,
protobuf's JSON for them.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from backend.errors import Invalid
from common import nonfinite
from common.mlflow_names import MAX_KEY

# MLflow's own bounds (mlflow.utils.validation): a log-batch's items, a param's and a tag's value
MAX_BATCH_METRICS = 1000
MAX_BATCH_PARAMS = 100
MAX_BATCH_TAGS = 100
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
MAX_STEP = 2**62  # the platform's largest step (backend/metrics/schemas.py)
MAX_TIMESTAMP_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the last time a datetime holds
MAX_RESULTS = 50_000  # what MLflow's server accepts as a search's max_results
MAX_EXPERIMENT_IDS = 100  # experiments one run search names


_KEY = re.compile(r"[\w/.\- :]+")


def check_key(key: str, what: str) -> str:
    """A metric's, param's or tag's key MLflow's own server accepts (``mlflow.utils.validation`` on Linux):
    1 to 250 word characters, ``/``, ``.``, ``-``, spaces and colons, naming no other path (``a/../b``,
    ``./a``, ``/a``, ``a/``). The MLflow mirror renames what MLflow's other stores refuse
    (``common.mlflow_names.mlflow_key``)."""
    norm = posixpath.normpath(key)
    if (
        not _KEY.fullmatch(key)
        or len(key) > MAX_KEY
        or norm != key
        or norm == "."
        or norm.startswith(("..", "/"))
    ):
        raise ValueError(
            f"{what} key {key[:100]!r}: MLflow's keys are 1 to {MAX_KEY} letters, digits, '_', '-', '.', ' ', "
            "':' or '/', and name no other path ('a/../b', '/a', 'a/')"
        )
    return key


class MlflowIn(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TagIn(MlflowIn):
    key: str = Field(max_length=MAX_KEY)
    value: str = Field("", max_length=MAX_TAG_VALUE)

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        return check_key(key, "a tag's")


class ParamIn(MlflowIn):
    key: str = Field(max_length=MAX_KEY)
    value: str = Field("", max_length=MAX_PARAM_VALUE)

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        return check_key(key, "a param's")


class MetricIn(MlflowIn):
    key: str = Field(
        max_length=MAX_KEY, pattern=r"^[^_]", description="not starting with '_' (the platform's own)"
    )
    value: float = Field(description='NaN and infinities ("NaN", "Infinity", "-Infinity") are stored as such')
    timestamp: int = Field(ge=0, le=MAX_TIMESTAMP_MS, description="milliseconds since the epoch (kept)")
    step: int = Field(0, ge=0, le=MAX_STEP)

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        return check_key(key, "a metric's")


class RunRef(MlflowIn):
    """A request about one run: ``run_id`` (``run_uuid``, its older name, is read when it is missing)."""

    run_id: str | None = Field(None, max_length=64)
    run_uuid: str | None = Field(None, max_length=64)

    def run(self) -> str:
        found = self.run_id or self.run_uuid
        if not found:
            raise Invalid(
                "run_id: missing", [{"loc": ["body", "run_id"], "msg": "missing", "type": "missing"}]
            )
        return found


class CreateExperimentIn(MlflowIn):
    name: str = Field(min_length=1, max_length=300)
    artifact_location: str | None = Field(
        None, max_length=2000, description="ignored: a run's artifacts are kept in the platform's store"
    )
    tags: list[TagIn] = Field(default_factory=list, max_length=MAX_BATCH_TAGS)


class SearchExperimentsIn(MlflowIn):
    max_results: int | None = Field(None, ge=1, le=MAX_RESULTS)
    page_token: str | None = Field(None, max_length=500)
    filter: str | None = None
    order_by: list[str] = Field(default_factory=list, max_length=5)
    view_type: str | None = Field(None, max_length=20)


class SetExperimentTagIn(TagIn):
    experiment_id: str = Field(max_length=20)


class CreateRunIn(MlflowIn):
    experiment_id: str | None = Field(
        None, max_length=20, description="none: the project's Default experiment"
    )
    user_id: str | None = Field(None, max_length=300)
    run_name: str | None = Field(None, max_length=MAX_TAG_VALUE)
    start_time: int | None = Field(None, ge=0, le=MAX_TIMESTAMP_MS)
    tags: list[TagIn] = Field(default_factory=list, max_length=MAX_BATCH_TAGS)


class UpdateRunIn(RunRef):
    status: str | None = Field(None, max_length=20, description="RUNNING, FINISHED, FAILED or KILLED")
    end_time: int | None = Field(None, ge=0, le=MAX_TIMESTAMP_MS)
    run_name: str | None = Field(None, max_length=MAX_TAG_VALUE)


class LogMetricIn(RunRef, MetricIn):
    pass


class LogParamIn(RunRef, ParamIn):
    pass


class SetTagIn(RunRef, TagIn):
    pass


class DeleteTagIn(RunRef):
    key: str = Field(max_length=MAX_KEY)


class LogBatchIn(RunRef):
    metrics: list[MetricIn] = Field(default_factory=list, max_length=MAX_BATCH_METRICS)
    params: list[ParamIn] = Field(default_factory=list, max_length=MAX_BATCH_PARAMS)
    tags: list[TagIn] = Field(default_factory=list, max_length=MAX_BATCH_TAGS)


class SearchRunsIn(MlflowIn):
    experiment_ids: list[str] = Field(default_factory=list, max_length=MAX_EXPERIMENT_IDS)
    filter: str | None = None
    run_view_type: str | None = Field(None, max_length=20)
    max_results: int = Field(1000, ge=1, le=MAX_RESULTS)
    order_by: list[str] = Field(default_factory=list, max_length=5)
    page_token: str | None = Field(None, max_length=500)

    @field_validator("experiment_ids")
    @classmethod
    def _ids(cls, ids: list[str]) -> list[str]:
        if any(len(i) > 20 for i in ids):
            raise ValueError("an experiment id is at most 20 characters")
        return ids


class SearchLoggedModelsIn(MlflowIn):
    experiment_ids: list[str] = Field(default_factory=list, max_length=MAX_EXPERIMENT_IDS)


# -- answers -------------------------------------------------------------------------------------------------


class MlflowOut(BaseModel):
    pass


class TagOut(MlflowOut):
    key: str
    value: str


class MetricOut(MlflowOut):
    key: str
    value: float = Field(
        description='NaN and infinities are "NaN", "Infinity", "-Infinity", protobuf\'s JSON for them; a gap NaN'
    )
    timestamp: int
    step: int

    @field_serializer("value")
    def _value(self, value: float) -> float | str:
        return nonfinite.label(nonfinite.kind(value)) or value


class ExperimentOut(MlflowOut):
    experiment_id: str
    name: str
    artifact_location: str
    lifecycle_stage: str = "active"
    creation_time: int
    last_update_time: int
    tags: list[TagOut]


class RunInfoOut(MlflowOut):
    run_id: str
    run_uuid: str
    run_name: str
    experiment_id: str
    user_id: str
    status: str
    start_time: int | None = None
    end_time: int | None = None
    artifact_uri: str
    lifecycle_stage: str = "active"


class RunDataOut(MlflowOut):
    metrics: list[MetricOut]
    params: list[TagOut]
    tags: list[TagOut]


class RunOut(MlflowOut):
    info: RunInfoOut
    data: RunDataOut
    inputs: dict[str, Any] = Field(default_factory=dict)


class CreateExperimentOut(MlflowOut):
    experiment_id: str


class ExperimentAnswer(MlflowOut):
    experiment: ExperimentOut


class SearchExperimentsOut(MlflowOut):
    experiments: list[ExperimentOut]
    next_page_token: str | None = None


class RunAnswer(MlflowOut):
    run: RunOut


class UpdateRunOut(MlflowOut):
    run_info: RunInfoOut


class SearchRunsOut(MlflowOut):
    runs: list[RunOut]
    next_page_token: str | None = None


class MetricHistoryOut(MlflowOut):
    metrics: list[MetricOut]
    next_page_token: str | None = None


class Empty(MlflowOut):
    """What MLflow answers a write: ``{}``."""


class FileOut(MlflowOut):
    path: str
    is_dir: bool
    file_size: int | None = None


class ArtifactListOut(MlflowOut):
    files: list[FileOut]


class SearchLoggedModelsOut(MlflowOut):
    """No logged models: the platform keeps a run's model among its artifacts (MLflow's client asks for them
    when it lists or downloads a run's artifacts)."""

    models: list[dict[str, Any]] = Field(default_factory=list)
