"""The API service (FastAPI): routes, services and repositories per domain, the request edge, the
dispatcher, reaper and MLflow mirror. Of the worker it imports only ``worker.specs``."""
