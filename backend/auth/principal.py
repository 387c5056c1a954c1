"""Who is calling, as the routes and services see it (resolved from the request's credential by
``backend.auth.dependencies.get_principal``)."""

from __future__ import annotations

from dataclasses import dataclass

from backend.models import User


@dataclass(frozen=True)
class Principal:
    """Who is calling: a user (JWT or API token), a worker (the shared worker token: claim and release
    only) or one attempt of one run (the run token its claim handed out: that run's own routes only)."""

    user: User | None
    is_worker: bool = False
    run_id: int | None = None
    attempt: int | None = None

    @property
    def is_run(self) -> bool:
        return self.run_id is not None

    @property
    def user_id(self) -> int | None:
        return self.user.id if self.user is not None else None

    @property
    def is_admin(self) -> bool:
        return self.user is not None and self.user.is_admin

    @property
    def name(self) -> str:
        if self.user is not None:
            return self.user.username
        return f"run {self.run_id}" if self.is_run else "worker"
