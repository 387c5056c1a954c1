"""The MLflow mirror, written by the API's leader from the database (service.py: the loop; repository.py:
its queries; mlflow.py: what it writes to MLflow). Workers never talk to MLflow."""
