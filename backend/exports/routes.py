"""A posted table written as Parquet (``POST /exports/parquet``): the dashboard's "Download data" of a
chart builds its CSV in the browser and asks here for the Parquet file of the same table."""

from __future__ import annotations

from fastapi import APIRouter, Response

from backend.auth.dependencies import CurrentUser
from backend.exports import tables
from backend.exports.schemas import MEDIA_TYPES, ExportFormat, TableIn

router = APIRouter(tags=["exports"])

PARQUET = {"schema": {"type": "string", "format": "binary"}}


@router.post(
    "/exports/parquet",
    operation_id="exports-parquet",
    response_class=Response,
    responses={
        200: {"content": {MEDIA_TYPES[ExportFormat.parquet]: PARQUET}, "description": "the Parquet file"}
    },
)
def table_as_parquet(body: TableIn, user: CurrentUser) -> Response:
    """The posted table (columns of equal length, at most 1,000 columns and 1,000,000 cells) as a Parquet
    file: a column whose values share a type keeps it (boolean, int64, double, string), a mixed one is
    written as text. Any logged-in user; nothing is stored."""
    data = tables.parquet_bytes([(c.name, c.values) for c in body.columns])
    return Response(
        data,
        media_type=MEDIA_TYPES[ExportFormat.parquet],
        headers={"Content-Disposition": tables.content_disposition("data.parquet")},
    )
