"""Where a large HuggingFace model's weights go (shared by the ``skillmix`` student and local grader and
``topk_eval``'s ``hf`` target): one device (the default, ``device_map: null``), or spread by accelerate's
``device_map`` over several GPUs, the CPU and the disk, each capped by ``max_memory``.

``max_memory`` maps a device to a size: a GPU by its index (``"0"``, ``"1"``, or ``"cuda:1"``), ``"cpu"``
or ``"disk"``; a size is a number and a unit, ``B``, ``KB``/``MB``/``GB``/``TB`` (powers
of 1000) or ``KiB``/``MiB``/``GiB``/``TiB`` (powers of 1024), case-insensitive (``"70GiB"``, ``"500mb"``:
always bytes, never bits). A bad size, an unknown device, a GPU beyond the run's ``resources.gpus`` or a
``max_memory`` without a ``device_map`` is a 422 naming the field. Pydantic only (layer rule).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator
from pydantic_core import InitErrorDetails, PydanticCustomError

from worker.specs.base import Resources

DeviceMapName = Literal["auto", "balanced", "sequential"]
MAX_GPUS = 64  # Resources.gpus' bound

_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$", re.IGNORECASE)
_GPU = re.compile(r"^(?:cuda:)?(\d{1,2})$")


def size_bytes(size: str) -> int:
    """``"70GiB"`` -> 75161927680. Raises ValueError (worded for a 422) for anything else."""
    match = _SIZE.match(size)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(
            f"{size!r} is not a size: a number and a unit, B, KB, MB, GB, TB (x1000) or KiB, MiB, GiB, TiB "
            "(x1024), e.g. '70GiB'"
        )
    value = int(float(match.group(1)) * _UNITS[unit])
    if value <= 0:
        raise ValueError(f"{size!r} is not a size above 0 bytes")
    return value


def _size(size: str) -> str:
    size_bytes(size)
    return size


def device_key(name: str) -> int | str:
    """A device name as accelerate knows it: ``"cpu"``, ``"disk"`` or a GPU index (``"cuda:N"`` and ``"N"``
    are ``N``). Raises ValueError (worded for a 422) for anything else."""
    key = name.strip().lower()
    if key in ("cpu", "disk"):
        return key
    gpu = _GPU.match(key)
    if gpu is None or int(gpu.group(1)) >= MAX_GPUS:
        raise ValueError(
            f"unknown device {name!r}: a GPU index (0, 1, ... or cuda:0, cuda:1, ...), 'cpu' or 'disk'"
        )
    return int(gpu.group(1))


def _device(name: str) -> str:
    device_key(name)
    return name  # kept as written, so an error names the key the user wrote


def _distinct_devices(value: Any) -> Any:
    """Two names of one device (``"0"`` and ``"cuda:0"``) would silently keep one size: refused."""
    if isinstance(value, dict):
        seen: dict[int | str, str] = {}
        for name in value:
            try:
                key = device_key(str(name))
            except ValueError:
                continue  # the key's own validation names it
            if key in seen:
                raise ValueError(f"{seen[key]!r} and {name!r} name the same device")
            seen[key] = str(name)
    return value


DeviceName = Annotated[str, AfterValidator(_device)]
MemorySize = Annotated[str, AfterValidator(_size)]
MaxMemory = Annotated[dict[DeviceName, MemorySize], BeforeValidator(_distinct_devices)]

DEVICE_MAP_DESCRIPTION = (
    "null: the whole model on the run's device; auto | balanced | sequential: accelerate spreads its "
    "layers over the GPUs (then the CPU, then the disk), balanced evenly or filling each device in turn "
    "(sequential); inputs go to the device of the input embeddings"
)
MAX_MEMORY_DESCRIPTION = (
    "with a device_map: the most each device may hold, e.g. {'0': '70GiB', '1': '70GiB', 'cpu': '100GiB'}; "
    "devices: a GPU index (or cuda:N), cpu, disk; sizes: a number and B, KB, MB, GB, TB, KiB, MiB, GiB, "
    "TiB; null = what each device has free"
)


def _error(loc: tuple[str | int, ...], kind: str, message: str, value: Any) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError(kind, message), loc=loc, input=value)


def placement_errors(
    loc: tuple[str, ...],
    device_map: str | None,
    max_memory: dict[str, str] | None,
    resources: Resources,
) -> list[InitErrorDetails]:
    """422s of a model's placement at ``loc`` (e.g. ``("student",)``): ``max_memory`` needs a ``device_map``,
    and a GPU it names must be one of the run's ``resources.gpus``."""
    errors: list[InitErrorDetails] = []
    if max_memory is None:
        return errors
    if device_map is None:
        message = "max_memory caps a device_map's devices: set device_map (auto, balanced or sequential)"
        errors.append(_error((*loc, "max_memory"), "max_memory_without_device_map", message, max_memory))
    for device in max_memory:
        gpu = device_key(device)
        if not isinstance(gpu, int):
            continue
        if resources.device == "cpu":
            message = f"GPU {gpu} is named but resources.device is cpu"
        elif gpu >= resources.gpus:
            message = (
                f"GPU {gpu} is not one of the run's {resources.gpus} GPU(s) (resources.gpus; GPUs are "
                "numbered from 0)"
            )
        else:
            continue
        errors.append(_error((*loc, "max_memory", device), "unknown_device", message, device))
    return errors


def accelerate_max_memory(max_memory: dict[str, str] | None) -> dict[int | str, int] | None:
    """The validated map as accelerate takes it: GPU indices as ints, sizes in bytes."""
    if max_memory is None:
        return None
    return {device_key(k): size_bytes(v) for k, v in max_memory.items()}
