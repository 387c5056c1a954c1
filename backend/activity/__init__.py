"""The project activity feed (written by the services, read by the reviews domain's feed route)."""
