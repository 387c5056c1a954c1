"""A claim of the report's project and its evaluation (backend/claims): its verdict, pre-registration, arms
(n, mean, interval) and comparisons (effect, interval, p, Holm-adjusted p, verdict, needed n). Live: the
claim as evaluated now. Frozen: the evaluation taken when the block was frozen (saved frozen, or
published), kept in its cut-off and shown as it was whatever runs end later.

The frozen evaluation travels with the draft (the editor sends the cut-off back unchanged), so it is
sealed: an HMAC of the server's key over it. A cut-off whose seal does not match (an edited one) is
never shown. A claim of another project, or one that no longer exists, is not shown either."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from backend.claims import evaluate as evaluation
from backend.claims import repository as claims
from backend.claims.schemas import ClaimDefinition, Evaluation
from backend.models import Claim
from backend.reports.blocks import BlockType
from backend.reports.blocks.base import Cutoff, FreezableBlock, Title
from backend.reports.data import BlockData
from backend.reports.render.context import ExportContext, ResolveContext
from backend.reports.render.tables import html_table, latex_table, md_table
from backend.reports.render.text import esc, latex_escape, markdown_label
from backend.settings import get_settings

NOT_VISIBLE = "not visible to you: this claim belongs to another project or no longer exists"
TAMPERED = "not shown: the frozen evaluation of this block does not match its seal"


class ClaimSnapshot(BaseModel):
    """What a claim block shows: the claim's name, the definition that decided and its evaluation."""

    claim_id: int
    name: str
    definition: ClaimDefinition
    evaluation: Evaluation


class ClaimCutoff(Cutoff):
    """When the block was frozen and the claim as it was then (null: not visible then), sealed by the
    server (``seal``: hex HMAC-SHA256); the editor sends it back unchanged."""

    claim: ClaimSnapshot | None = None
    seal: str = Field(default="", max_length=64)


class ClaimBlock(FreezableBlock):
    type: Literal["claim"] = "claim"
    title: Title = ""
    claim_id: int = Field(ge=1, description="a claim of the report's project")
    cutoff: ClaimCutoff | None = None  # type: ignore[assignment]  # a claim's cut-off keeps its evaluation

    @model_validator(mode="after")
    def _cutoff_of_this_claim(self) -> ClaimBlock:
        if (
            self.cutoff is not None
            and self.cutoff.claim is not None
            and self.cutoff.claim.claim_id != self.claim_id
        ):
            raise ValueError("the cut-off was taken for another claim: drop it to freeze this one")
        return self


def _seal(claim_id: int, cutoff: ClaimCutoff) -> str:
    body = {
        "claim_id": claim_id,
        "at": cutoff.at.isoformat(),
        "claim": cutoff.claim.model_dump(mode="json") if cutoff.claim is not None else None,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    key = ("report claim block:" + get_settings().secret_key).encode()
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def _snapshot(ctx: ResolveContext, claim_id: int) -> ClaimSnapshot | None:
    """The claim evaluated now, or None when it is not the report's project's (or does not exist)."""
    claim = ctx.session.get(Claim, claim_id)
    if claim is None or claim.project_id != ctx.project_id:
        return None
    project = claims.of_project(ctx.session, ctx.project_id)
    current = claims.current_versions(ctx.session, project)
    defined = [
        (c, ClaimDefinition.model_validate(current[c.id].definition), current[c.id].hash)
        for c in project
        if c.id in current
    ]
    mine = next((d for c, d, _ in defined if c.id == claim.id), None)
    if mine is None:
        return None
    found = evaluation.evaluate(ctx.session, [claim], defined)[claim.id]
    return ClaimSnapshot(
        claim_id=claim.id,
        name=claim.name,
        definition=mine,
        evaluation=found,
    )


def freeze(ctx: ResolveContext, block: ClaimBlock) -> ClaimCutoff:
    cutoff = ClaimCutoff(at=ctx.now, claim=_snapshot(ctx, block.claim_id))
    return cutoff.model_copy(update={"seal": _seal(block.claim_id, cutoff)})


def _resolve(ctx: ResolveContext, block: ClaimBlock) -> BlockData:
    frozen = block.mode == "frozen" and block.cutoff is not None
    data = BlockData(
        block_id=block.id,
        type=block.type,
        live=block.mode == "live",
        as_of=block.cutoff.at if frozen and block.cutoff is not None else ctx.now,
    )
    if frozen and block.cutoff is not None:
        if not hmac.compare_digest(block.cutoff.seal, _seal(block.claim_id, block.cutoff)):
            data.visible = False
            data.detail = {"problem": TAMPERED}
            return data
        # as frozen; a claim that has since moved to another project (or gone) is hidden as a live one is
        snapshot = block.cutoff.claim if _visible(ctx, block.claim_id) else None
    else:
        snapshot = _snapshot(ctx, block.claim_id)
    data.visible = snapshot is not None
    data.detail = snapshot.model_dump(mode="json") if snapshot is not None else None
    return data


def _visible(ctx: ResolveContext, claim_id: int) -> bool:
    claim = ctx.session.get(Claim, claim_id)
    return claim is not None and claim.project_id == ctx.project_id


# ------------------------------------------------------------------------------------------ exports


def _shown(data: BlockData | None) -> ClaimSnapshot | None:
    if data is None or not data.visible or data.detail is None:
        return None
    return ClaimSnapshot.model_validate(data.detail)


def _problem(data: BlockData | None) -> str:
    if data is not None and data.detail is not None and "problem" in data.detail:
        return str(data.detail["problem"])
    return NOT_VISIBLE


def _title(block: ClaimBlock, snap: ClaimSnapshot | None) -> str:
    if block.title:
        return block.title
    return f"Claim: {snap.name}" if snap is not None else f"Claim {block.claim_id}"


def _summary(snap: ClaimSnapshot, data: BlockData) -> list[tuple[str, str]]:
    ev = snap.evaluation
    when = data.as_of.strftime("%Y-%m-%d %H:%M UTC")
    return [
        ("section", snap.definition.section),
        ("verdict", ev.verdict),
        ("decided by", f"version {ev.version} (sha256 {ev.hash[:12]})"),
        ("pre-registration", ev.preregistration.status),
        (
            "metric",
            f"{snap.definition.metric} ({snap.definition.direction} than {snap.definition.arms[0].name})",
        ),
        ("family", f"{ev.family} ({ev.family_size} hypotheses, Holm)"),
        ("as of", f"live, as of {when}" if data.live else f"frozen at {when}"),
    ]


ARM_COLUMNS = ["arm", "n", "mean", "CI low", "CI high"]
COMPARISON_COLUMNS = [
    "comparison",
    "n",
    "effect",
    "CI low",
    "CI high",
    "p",
    "adjusted p",
    "verdict",
    "needed n",
]


def _arms(snap: ClaimSnapshot) -> list[list[Any]]:
    return [[a.name, a.n, a.mean, a.ci_low, a.ci_high] for a in snap.evaluation.arms]


def _comparisons(snap: ClaimSnapshot) -> list[list[Any]]:
    return [
        [
            f"{c.arm} vs {c.reference}",
            c.n,
            c.effect,
            c.ci_low,
            c.ci_high,
            c.p_value,
            c.p_adjusted,
            c.verdict,
            c.needed_n,
        ]
        for c in snap.evaluation.comparisons
    ]


def _md(block: ClaimBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    snap = _shown(data)
    title = f"**{markdown_label(_title(block, snap))}**"
    if snap is None or data is None:
        return f"{title}\n\n*{markdown_label(_problem(data))}*"
    summary = md_table(["", ""], _summary(snap, data))
    return (
        f"{title}\n\n{summary}\n\n{md_table(ARM_COLUMNS, _arms(snap))}\n\n"
        f"{md_table(COMPARISON_COLUMNS, _comparisons(snap))}"
    )


def _html(block: ClaimBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    snap = _shown(data)
    title = f"<h4>{esc(_title(block, snap))}</h4>"
    if snap is None or data is None:
        return f'<div class="not-visible">{title}<p>{esc(_problem(data))}</p></div>'
    return (
        f'<div class="table claim">{title}{html_table(["", ""], _summary(snap, data))}'
        f"{html_table(ARM_COLUMNS, _arms(snap))}{html_table(COMPARISON_COLUMNS, _comparisons(snap))}</div>"
    )


def _latex(block: ClaimBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    snap = _shown(data)
    title = f"\\paragraph{{{latex_escape(_title(block, snap))}}}\n"
    if snap is None or data is None:
        return f"{title}\\emph{{{latex_escape(_problem(data))}}}"
    return (
        f"{title}{latex_table(['', ''], _summary(snap, data))}\n\n"
        f"{latex_table(ARM_COLUMNS, _arms(snap))}\n\n{latex_table(COMPARISON_COLUMNS, _comparisons(snap))}"
    )


BLOCK = BlockType(
    name="claim",
    model=ClaimBlock,
    order=7,
    markdown=_md,
    html=_html,
    latex=_latex,
    resolve=_resolve,
    freeze=freeze,
)
