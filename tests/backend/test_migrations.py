"""The ORM and the migration head must describe the same schema, on SQLite and on Postgres."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from backend.bootstrap import migrate
from backend.db import Base, get_engine
from backend.settings import Settings

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def test_orm_matches_migration_head(database_url: str, home) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(home=home, database_url=database_url)
    migrate(settings)
    migrate(settings)  # idempotent
    with get_engine(database_url).connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], f"ORM and migrations differ; run alembic revision --autogenerate: {diff}"
