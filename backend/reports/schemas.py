"""A report's shape in the API: its blocks are a discriminated union on ``type`` (one schema per block
type, each found in ``backend/reports/blocks/``), strict: an unknown field or type is a 422 naming its
path (``body.blocks.2.figure.metrics``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from backend.reports.blocks import TYPES
from backend.reports.blocks.base import BlockBase
from backend.reports.data import BlockData

if TYPE_CHECKING:
    Block = BlockBase
else:
    # every block type's class, in the registry's order: the union the OpenAPI document names
    Block = Annotated[Union[tuple(t.model for t in TYPES.values())], Field(discriminator="type")]  # noqa: UP007

MAX_BLOCKS = 200
ReportTitle = Annotated[str, Field(min_length=1, max_length=200)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _ids_once(blocks: list[BlockBase]) -> list[BlockBase]:
    ids = [b.id for b in blocks]
    if len(set(ids)) != len(ids):
        raise ValueError("two blocks have the same id")
    return blocks


class ReportCreate(Strict):
    title: ReportTitle
    blocks: list[Block] = Field(default_factory=list, max_length=MAX_BLOCKS)

    _unique = field_validator("blocks")(_ids_once)


class ReportUpdate(Strict):
    """A save of the draft: ``base_version`` is the version the edit was made on; an older one than
    the report's is refused with 409 (someone else saved since)."""

    base_version: int = Field(ge=1)
    title: ReportTitle
    blocks: list[Block] = Field(max_length=MAX_BLOCKS)

    _unique = field_validator("blocks")(_ids_once)


class PublishIn(Strict):
    base_version: int = Field(
        ge=1, description="the draft version published; 409 when it is no longer the latest"
    )


class ReportSummary(BaseModel):
    id: int
    project_id: int
    title: str
    version: int
    author: str | None
    updated_at: datetime
    revisions: int = Field(description="published revisions")


class ReportSummaryPage(BaseModel):
    items: list[ReportSummary]
    next_cursor: str | None = Field(description="the next page's ``cursor``; null on the last page")


class ReportPublic(BaseModel):
    id: int
    project_id: int
    title: str
    version: int
    blocks: list[Block]
    author: str | None
    created_at: datetime
    updated_at: datetime
    revisions: int
    can_edit: bool = Field(description="the caller may edit, publish and share it (a member)")


class RevisionSummary(BaseModel):
    report_id: int
    number: int
    title: str
    content_hash: str
    author: str | None
    created_at: datetime


class RevisionPublic(RevisionSummary):
    blocks: list[Block]
    data: dict[str, BlockData] = Field(
        description="by block id: frozen blocks as published, live ones as of now"
    )


class ReportCommentIn(Strict):
    block_id: str = Field(min_length=1, max_length=64)
    body: str = Field(min_length=1, max_length=100_000, description="markdown")


class ReportCommentPublic(BaseModel):
    id: int
    report_id: int
    block_id: str
    author: str | None
    body: str
    created_at: datetime


class ReportReviewIn(Strict):
    state: Literal["approved", "changes_requested"]
    body: str = Field("", max_length=100_000)


class ReportReviewPublic(BaseModel):
    id: int
    report_id: int
    revision: int
    reviewer: str | None
    state: str
    body: str
    created_at: datetime


class ShareCreate(Strict):
    expires_in_days: int = Field(default=14, ge=1, le=365)
    hide_authors: bool = Field(default=False, description="hide every author's name (double-blind review)")


class SharePublic(BaseModel):
    id: int
    report_id: int
    revision: int
    prefix: str = Field(description="the token's first characters, to tell links apart")
    hide_authors: bool
    expires_at: datetime
    revoked_at: datetime | None
    created_by: str | None
    created_at: datetime


class ShareCreated(SharePublic):
    token: str = Field(description="shown once: the link is /shared/reports/<token>")


class SharedRevision(BaseModel):
    """What a share link opens: one revision, its blocks and their frozen data, nothing else."""

    title: str
    number: int
    content_hash: str
    author: str | None = Field(description="null when the link hides authors")
    published_at: datetime
    expires_at: datetime
    blocks: list[Block]
    data: dict[str, BlockData]


ExportFormat = Literal["html", "md", "latex"]
