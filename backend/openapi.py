"""Print the API's OpenAPI document (the dashboard's client is generated from it)."""

from __future__ import annotations

import json
import sys

from backend.main import create_app
from backend.settings import Settings


def main() -> None:
    app = create_app(Settings(home="/tmp/reasonlab-openapi", database_url="sqlite://"), background=False)
    json.dump(app.openapi(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
