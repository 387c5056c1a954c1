"""The liveness probe and the deployment's configuration for the dashboard."""
