"""Real data that installs offline from the project's own files (DESIGN.md, "Models and data offline")."""
