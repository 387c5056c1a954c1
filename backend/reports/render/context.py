"""What resolving a block's data and exporting a block need from their caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session


@dataclass
class ResolveContext:
    """The report's project (a block shows that project's runs only) and the moment of resolving."""

    session: Session
    project_id: int
    now: datetime

    @property
    def dialect(self) -> str:
        return self.session.get_bind().dialect.name


@dataclass
class ExportContext:
    """An export in progress: ``files`` it writes beside the document (figures), by relative path."""

    files: dict[str, bytes] = field(default_factory=dict)
    figures: int = 0

    def figure_name(self, ext: str) -> str:
        self.figures += 1
        return f"figures/figure-{self.figures}.{ext}"
