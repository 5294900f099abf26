"""Pick the device a model runs on (CUDA, then Apple MPS, then CPU, unless the caller names one) and the
CPU threads a server process uses."""

from __future__ import annotations

import os

import torch


def available_devices() -> list[str]:
    """Devices usable on this machine, best first (e.g. ["cuda", "cpu"])."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    found.append("cpu")
    return found


def pick_device(preferred: str | torch.device | None = None) -> torch.device:
    """`None` or "auto" -> the best available device; otherwise that device, if it exists here."""
    if preferred is None or str(preferred) == "auto":
        return torch.device(available_devices()[0])
    try:
        device = torch.device(preferred)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {preferred!r}: use auto, cpu, cuda or mps") from err
    if device.type not in available_devices():
        raise ValueError(f"device {preferred!r} is not available here; found: {', '.join(available_devices())}")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"device {preferred!r} does not exist: {torch.cuda.device_count()} CUDA device(s) found")
    return device


def describe_devices() -> str:
    """One line for the UI, e.g. 'found: cpu (no CUDA, no MPS)'."""
    found = available_devices()
    missing = [name.upper() for name in ("cuda", "mps") if name not in found]
    return f"found: {', '.join(found)}" + (f" (no {', no '.join(missing)})" if missing else "")


def server_torch_threads(requested: int | None = None, cores: int | None = None) -> int:
    """The most torch threads one request of the app uses: `requested`, else every core on machines with up to 4
    cores, else half of them. Requests running at once share them (explorer.app.serving.cores)."""
    if requested:
        return int(requested)
    cores = cores or os.cpu_count() or 1
    return cores if cores <= 4 else cores // 2


def single_thread_numpy_blas() -> None:
    """numpy's BLAS (OpenBLAS) uses one thread from now on, in this whole process.

    OpenBLAS keeps its worker threads spinning for a while after a matrix product. The figures do a few
    small ones (attention rollout, 128 x 128), and on a 2-core machine the spinning threads took the cores
    from torch: the next forward pass of all-MiniLM-L6-v2 at 128 tokens took 123 ms instead of 43 ms.
    The products numpy does here are tiny, so one thread costs nothing.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
