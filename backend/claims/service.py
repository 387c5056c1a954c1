"""Claims of a project: list, create, get, edit (a new version), delete, lock (pre-registration), versions,
comments and reviews. Any project role reads them; members and admins create, edit, lock, comment on and
review them (claims are the team's, as experiments are); deleting one is its author's or a project
admin's. A claim is reached by its id alone (``/claims/{id}``): a claim of a project the caller is not in
answers 404 as a missing one does. Every change writes a row of the project's activity feed.

A definition is checked as the runs list would take it: each arm's query and the metric reading, a 422
naming the field (``body.definition.arms.1.query``) otherwise.

What a read costs is bounded: a project holds at most ``MAX_CLAIMS`` claims (one more is a 409), and the
list answers a page of at most ``LIST_MAX`` of them by id (a keyset ``cursor``). Evaluating a claim
measures every claim of its family in the project (Holm's correction runs over them all), so the cap is
what bounds one claim's read too: at most ``MAX_CLAIMS`` claims measured, whichever route asks.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from backend import db, query
from backend.activity import feed
from backend.claims import evaluate as evaluation
from backend.claims import repository
from backend.claims.schemas import (
    ClaimCommentIn,
    ClaimCommentPublic,
    ClaimCreate,
    ClaimDefinition,
    ClaimPage,
    ClaimPatch,
    ClaimPublic,
    ClaimReviewIn,
    ClaimReviewPublic,
    ClaimVersionPublic,
)
from backend.db import utcnow
from backend.errors import Conflict, Forbidden, Invalid, NotFound
from backend.models import Claim, ClaimReview, ClaimVersion, Comment
from backend.projects import service as projects
from backend.projects.service import MAX_COMMENTS, MAX_REVIEWS, MAX_VERSIONS
from backend.query import listing

if TYPE_CHECKING:
    from backend.auth.principal import Principal

# Claims a project may hold: this bounds a family, so what any claim read measures. Measuring a claim costs
# about 6 statements, mostly building their SQL in Python: on 2 busy cores a claim read in a family of 200
# took 9-10 s (SQLite and Postgres alike), in a family of 100 about 3 s.
MAX_CLAIMS = 100
_NEW_CLAIM = "state a new claim to go on"
LIST_DEFAULT = 50  # claims a list page holds unless ``limit`` says otherwise
LIST_MAX = 100  # the largest ``limit``: a project's every claim in one page


def digest(definition: ClaimDefinition) -> str:
    """SHA-256 of the definition's canonical JSON (keys sorted, no spaces, every default written out)."""
    text = json.dumps(definition.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check(session: Session, definition: ClaimDefinition) -> None:
    dialect = session.get_bind().dialect.name
    problems: list[tuple[list[str | int], str]] = []
    for i, arm in enumerate(definition.arms):
        try:
            query.where(query.RUNS, arm.query, dialect)
        except query.QueryError as exc:
            problems.append((["body", "definition", "arms", i, "query"], str(exc)))
    try:
        query.metric_column(query.RUNS, evaluation.metric_text(definition), dialect)
    except query.QueryError as exc:
        where = "read" if definition.read.mode == "best" else "metric"
        problems.append((["body", "definition", where], str(exc)))
    if problems:
        loc, first = problems[0]
        raise Invalid(
            f"{'.'.join(str(p) for p in loc[1:])}: {first}",
            [{"loc": loc, "msg": msg, "type": "query_syntax"} for loc, msg in problems],
        )


def _duplicate(name: str) -> Conflict:
    return Conflict(
        f"a claim named {name!r} already exists in this project",
        [{"loc": ["body", "name"], "msg": "a claim of this project has this name", "type": "duplicate"}],
    )


def _flush(session: Session, name: str) -> None:
    try:
        session.flush()
    except IntegrityError:  # the same name saved by another request at the same moment
        session.rollback()
        raise _duplicate(name) from None


def _definitions(session: Session, claims: list[Claim]) -> list[tuple[Claim, ClaimDefinition, str]]:
    current = repository.current_versions(session, claims)
    return [
        (c, ClaimDefinition.model_validate(current[c.id].definition), current[c.id].hash)
        for c in claims
        if c.id in current
    ]


def _publics(session: Session, principal: Principal, role: str, wanted: list[Claim]) -> list[ClaimPublic]:
    if not wanted:
        return []
    project_claims = _definitions(session, repository.of_project(session, wanted[0].project_id))
    evaluated = evaluation.evaluate(session, wanted, project_claims)
    reviews = repository.latest_reviews(session, [c.id for c in wanted])
    defs = {c.id: (d, h) for c, d, h in project_claims}
    out: list[ClaimPublic] = []
    for c in wanted:
        definition, hash_ = defs[c.id]
        out.append(
            ClaimPublic(
                id=c.id,
                project_id=c.project_id,
                name=c.name,
                version=c.version,
                hash=hash_,
                definition=definition,
                author=c.author.username if c.author else None,
                created_at=c.created_at,
                updated_at=c.updated_at,
                review=reviews.get(c.id),  # type: ignore[arg-type]  # stored from the Literal
                can_edit=role in ("member", "admin"),
                evaluation=evaluated[c.id],
            )
        )
    return out


def list_claims(
    session: Session, principal: Principal, project_id: int, limit: int, cursor: str | None
) -> ClaimPage:
    """A page of the project's claims by id, each evaluated now; ``cursor`` the previous page's
    ``next_cursor`` (Invalid, a 422 at ``["query", "cursor"]``, for anything else)."""
    role = projects.require_role(session, principal, project_id, "viewer", f"project {project_id}")
    rows = repository.page(session, project_id, listing.after_id(cursor), limit + 1)
    return ClaimPage(
        items=_publics(session, principal, role, rows[:limit]), next_cursor=listing.next_after_id(rows, limit)
    )


def _get(session: Session, principal: Principal, claim_id: int, minimum: str) -> tuple[Claim, str]:
    claim = session.get(Claim, claim_id)
    if claim is None:
        raise NotFound(f"claim {claim_id} not found")
    role = projects.require_role(session, principal, claim.project_id, minimum, f"claim {claim_id}")
    return claim, role


def get_claim(session: Session, principal: Principal, claim_id: int) -> ClaimPublic:
    claim, role = _get(session, principal, claim_id, "viewer")
    return _publics(session, principal, role, [claim])[0]


def _actor(principal: Principal) -> tuple[int | None, str]:
    return principal.user_id, principal.name


def create_claim(session: Session, principal: Principal, project_id: int, body: ClaimCreate) -> ClaimPublic:
    role = projects.require_role(session, principal, project_id, "member", f"project {project_id}")
    if repository.by_name(session, project_id, body.name) is not None:
        raise _duplicate(body.name)
    _check(session, body.definition)
    projects.lock_for_cap(session, project_id)
    now = utcnow()
    actor_id, actor = _actor(principal)
    claim = Claim(
        project_id=project_id, name=body.name, version=1, author_id=actor_id, created_at=now, updated_at=now
    )
    session.add(claim)
    _flush(session, body.name)
    projects.check_cap(
        project_id, repository.count(session, project_id), MAX_CLAIMS, "claims", "state another"
    )
    session.add(
        ClaimVersion(
            claim_id=claim.id,
            version=1,
            definition=body.definition.model_dump(mode="json"),
            hash=digest(body.definition),
            author_id=actor_id,
            created_at=now,
        )
    )
    feed.record(
        session,
        project_id,
        "claimed",
        f"{actor} stated claim {body.name!r}",
        actor_id=actor_id,
        claim_id=claim.id,
    )
    session.flush()
    return _publics(session, principal, role, [claim])[0]


def update_claim(session: Session, principal: Principal, claim_id: int, body: ClaimPatch) -> ClaimPublic:
    """A new name, or a new definition: a new version unless it is the current one unchanged."""
    claim, role = _get(session, principal, claim_id, "member")
    actor_id, actor = _actor(principal)
    changes: list[str] = []
    if body.name is not None and body.name != claim.name:
        if repository.by_name(session, claim.project_id, body.name) is not None:
            raise _duplicate(body.name)
        changes.append(f"renamed {claim.name!r} to {body.name!r}")
        claim.name = body.name
    if body.definition is not None:
        _check(session, body.definition)
        new_hash = digest(body.definition)
        current = repository.version(session, claim.id, claim.version)
        if current is None or current.hash != new_hash:
            claim.version += 1
            projects.check_held(
                claim.version,
                MAX_VERSIONS,
                f"claim {claim.id}",
                "versions",
                ["body", "definition"],
                _NEW_CLAIM,
            )
            session.add(
                ClaimVersion(
                    claim_id=claim.id,
                    version=claim.version,
                    definition=body.definition.model_dump(mode="json"),
                    hash=new_hash,
                    author_id=actor_id,
                    created_at=utcnow(),
                )
            )
            changes.append(f"made version {claim.version}")
    if changes:
        claim.updated_at = utcnow()
        feed.record(
            session,
            claim.project_id,
            "edited",
            f"{actor} edited claim {claim.name!r}: {', '.join(changes)}",
            actor_id=actor_id,
            claim_id=claim.id,
        )
    _flush(session, claim.name)
    return _publics(session, principal, role, [claim])[0]


def delete_claim(session: Session, principal: Principal, claim_id: int) -> None:
    claim, role = _get(session, principal, claim_id, "member")
    if role != "admin" and (principal.user_id is None or claim.author_id != principal.user_id):
        raise Forbidden("only the claim's author or a project admin may delete it")
    session.delete(claim)
    session.flush()


def lock_claim(session: Session, principal: Principal, claim_id: int) -> ClaimPublic:
    """Pre-register the current version: its hash and the time. 409 when that version is locked already
    (a lock is never moved later by locking again)."""
    claim, role = _get(session, principal, claim_id, "member")
    if claim.locked_version == claim.version:
        raise Conflict(f"version {claim.version} of claim {claim.name!r} is locked already")
    current = repository.version(session, claim.id, claim.version)
    assert current is not None
    actor_id, actor = _actor(principal)
    claim.locked_version = claim.version
    claim.locked_hash = current.hash
    claim.locked_at = utcnow()
    claim.locked_by_id = actor_id
    feed.record(
        session,
        claim.project_id,
        "locked",
        f"{actor} locked version {claim.version} of claim {claim.name!r} (sha256 {current.hash[:12]})",
        actor_id=actor_id,
        claim_id=claim.id,
    )
    session.flush()
    session.refresh(claim)
    return _publics(session, principal, role, [claim])[0]


def versions(session: Session, principal: Principal, claim_id: int) -> list[ClaimVersionPublic]:
    claim, _ = _get(session, principal, claim_id, "viewer")
    return [
        ClaimVersionPublic(
            version=v.version,
            hash=v.hash,
            definition=ClaimDefinition.model_validate(v.definition),
            author=v.author.username if v.author else None,
            created_at=v.created_at,
        )
        for v in repository.versions(session, claim.id)
    ]


def _comment_public(c: Comment) -> ClaimCommentPublic:
    assert c.claim_id is not None
    return ClaimCommentPublic(
        id=c.id,
        claim_id=c.claim_id,
        author=c.author.username if c.author else None,
        body=c.body,
        created_at=c.created_at,
    )


def comments(session: Session, principal: Principal, claim_id: int) -> list[ClaimCommentPublic]:
    claim, _ = _get(session, principal, claim_id, "viewer")
    return [_comment_public(c) for c in repository.comments(session, claim.id)]


def comment(
    session: Session, principal: Principal, claim_id: int, body: ClaimCommentIn
) -> ClaimCommentPublic:
    claim, _ = _get(session, principal, claim_id, "member")
    actor_id, actor = _actor(principal)
    db.lock_row(session, Claim.id, claim.id)
    row = Comment(project_id=claim.project_id, claim_id=claim.id, author_id=actor_id, body=body.body)
    session.add(row)
    session.flush()
    held = db.count_rows(session, Comment, Comment.claim_id == claim.id)
    projects.check_held(held, MAX_COMMENTS, f"claim {claim.id}", "comments", ["path", "claim_id"], _NEW_CLAIM)
    feed.record(
        session,
        claim.project_id,
        "commented",
        f"{actor} commented on claim {claim.name!r}",
        actor_id=actor_id,
        claim_id=claim.id,
    )
    session.flush()
    return _comment_public(row)


def _review_public(r: ClaimReview) -> ClaimReviewPublic:
    return ClaimReviewPublic(
        id=r.id,
        claim_id=r.claim_id,
        version=r.version,
        reviewer=r.reviewer.username if r.reviewer else None,
        state=r.state,
        body=r.body,
        created_at=r.created_at,
    )


def review(session: Session, principal: Principal, claim_id: int, body: ClaimReviewIn) -> ClaimReviewPublic:
    """Every review is kept, with the version it reviewed; the latest is the claim's review state."""
    claim, _ = _get(session, principal, claim_id, "member")
    actor_id, actor = _actor(principal)
    db.lock_row(session, Claim.id, claim.id)
    row = ClaimReview(
        claim_id=claim.id, version=claim.version, reviewer_id=actor_id, state=body.state, body=body.body
    )
    session.add(row)
    session.flush()
    held = db.count_rows(session, ClaimReview, ClaimReview.claim_id == claim.id)
    projects.check_held(held, MAX_REVIEWS, f"claim {claim.id}", "reviews", ["path", "claim_id"], _NEW_CLAIM)
    label = "approved" if body.state == "approved" else "requested changes on"
    feed.record(
        session,
        claim.project_id,
        "reviewed",
        f"{actor} {label} claim {claim.name!r} (version {claim.version})",
        actor_id=actor_id,
        claim_id=claim.id,
    )
    session.flush()
    return _review_public(row)


def reviews(session: Session, principal: Principal, claim_id: int) -> list[ClaimReviewPublic]:
    claim, _ = _get(session, principal, claim_id, "viewer")
    return [_review_public(r) for r in repository.reviews(session, claim.id)]
