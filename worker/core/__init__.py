"""The PyTorch research library: models, layers, data and training loops (no celery, http, mlflow or
database; no other worker module)."""
