"""Optional integrations of the tracking SDK with training libraries, each in a module of its own that
imports its library: ``reasonlab_sdk.integrations.transformers`` (a Hugging Face ``TrainerCallback``) and
``reasonlab_sdk.integrations.torch`` (a step logger for a plain PyTorch loop). They are the SDK's extras
(``pip install './sdk[transformers]'``, ``'./sdk[torch]'``): the base SDK never imports them, so
``pip install ./sdk`` still needs httpx alone (an import-linter contract keeps it so)."""
