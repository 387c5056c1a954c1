from __future__ import annotations

from fastapi import APIRouter, Response

from backend.auth.dependencies import PrincipalDep
from backend.kinds import service
from backend.kinds.schemas import KindPublic

router = APIRouter(tags=["kinds"])


@router.get("/kinds", response_model=list[KindPublic], operation_id="kinds-list")
def list_kinds(_principal: PrincipalDep) -> Response:
    # the document is written once per registry (service.public_json); response_model documents it
    return Response(service.public_json(), media_type="application/json")
