"""Project datasets (backend/datasets/service.py): upload, list, delete; and for a run's own token, the
bytes of a dataset its spec names."""

from __future__ import annotations

from fastapi import APIRouter, Request, status
from fastapi.responses import Response, StreamingResponse
from sqlalchemy.exc import IntegrityError
from starlette.concurrency import run_in_threadpool

from backend.artifacts.dependencies import StoreDep
from backend.auth.dependencies import PrincipalDep
from backend.datasets import service
from backend.datasets.schemas import DatasetName, DatasetPublic
from backend.errors import Conflict, Forbidden
from backend.http.deps import Id, SessionDep, SettingsDep
from backend.http.transfers import BINARY, UPLOAD_BODY, copy_body, release_session
from backend.models import ProjectDataset
from backend.runs import service as runs

router = APIRouter(tags=["datasets"])


def _public(dataset: ProjectDataset) -> DatasetPublic:
    return DatasetPublic(
        name=dataset.name,
        size=dataset.size,
        sha256=dataset.sha256,
        uploaded_at=dataset.uploaded_at,
        uploaded_by=service.uploaded_by(dataset),
    )


@router.get(
    "/projects/{project_id}/datasets", response_model=list[DatasetPublic], operation_id="datasets-list"
)
def list_datasets(project_id: Id, principal: PrincipalDep, session: SessionDep) -> list[DatasetPublic]:
    """The project's uploaded datasets (any member of it, viewers included)."""
    return [_public(d) for d in service.list_datasets(session, principal, project_id)]


@router.put(
    "/projects/{project_id}/datasets/{name}",
    response_model=DatasetPublic,
    operation_id="datasets-upload",
    openapi_extra=UPLOAD_BODY,
)
async def upload_dataset(
    project_id: Id,
    name: DatasetName,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    store: StoreDep,
    request: Request,
) -> DatasetPublic:
    """Upload or replace a data file of the project (project members): the body's bytes
    (``application/octet-stream``), streamed to the store, at most ``REASONLAB_DATASET_MAX_BYTES``."""
    service.check_name(name)
    await run_in_threadpool(service.require_uploader_role, session, principal, project_id)
    await run_in_threadpool(release_session, session)
    limit = settings.dataset_max_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise service.too_large(limit)
    upload = await run_in_threadpool(service.Upload, store, project_id, limit)
    try:
        await copy_body(request, upload.write)
        sha256 = await run_in_threadpool(upload.commit, name)
    finally:
        await run_in_threadpool(upload.discard)

    def _record() -> tuple[DatasetPublic, str | None]:
        try:
            dataset, old = service.record(session, principal, project_id, name, upload.size, sha256)
            public = _public(dataset)
            session.commit()
        except IntegrityError:  # the same name uploaded at the same moment: that upload won
            session.rollback()
            raise Conflict(f"dataset {name!r} was uploaded by another request meanwhile: try again") from None
        return public, old

    public, old = await run_in_threadpool(_record)
    if old is not None:
        await run_in_threadpool(service.remove_object, store, project_id, name, old)
    return public


@router.delete(
    "/projects/{project_id}/datasets/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="datasets-delete",
)
def delete_dataset(
    project_id: Id, name: DatasetName, principal: PrincipalDep, session: SessionDep, store: StoreDep
) -> Response:
    """Delete a dataset (a project admin or whoever uploaded it)."""
    service.check_name(name)
    sha256 = service.delete_dataset(session, principal, project_id, name)
    session.commit()
    service.remove_object(store, project_id, name, sha256)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/runs/{run_id}/datasets/{name}",
    operation_id="runs-dataset",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": BINARY}, "description": "the file, streamed"}},
)
def run_dataset(
    run_id: Id, name: DatasetName, principal: PrincipalDep, session: SessionDep, store: StoreDep
) -> StreamingResponse:
    """A dataset of the run's project that its spec names, for the run's own token only; its sha256 in
    ``X-Checksum-Sha256``."""
    if principal.run_id != run_id:
        raise Forbidden("only the run's own token reads the datasets its spec names")
    service.check_name(name)
    run = runs.get_for_worker(session, principal, run_id)
    dataset = service.dataset_for_run(session, run, name)
    project_id, size, sha256 = run.project_id, dataset.size, dataset.sha256
    release_session(session)
    headers = {
        "Content-Length": str(size),
        "X-Checksum-Sha256": sha256,
        "Content-Encoding": "identity",
        "Cache-Control": "private, no-store",
    }
    return StreamingResponse(
        service.chunks(store, project_id, name, sha256),
        media_type="application/octet-stream",
        headers=headers,
    )
