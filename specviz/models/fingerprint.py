"""A model's fingerprint: which weights a trained drafter was trained for (engine/trained.py refuses heads trained
for another target), the same whichever dtype or kernels the same weights were loaded on."""

from __future__ import annotations

import hashlib

import torch


def fingerprint(model) -> str:
    """A hash of the model's parameter names and shapes and of 64 values of each, rounded to bfloat16 (so the same
    weights loaded in float32 or bfloat16 agree); 16 hex digits. Reads a few kilobytes, not the model. A model put on
    a kernel path that repacks its weights (kernels.apply_path) keeps the fingerprint it had as loaded."""
    kept = getattr(model, "specviz_fingerprint", None)
    if kept:
        return kept
    digest = hashlib.sha256()
    for name, p in model.named_parameters():
        flat = p.detach().reshape(-1)
        sample = flat[:: max(1, flat.numel() // 64)][:64].to("cpu", torch.bfloat16).float()
        digest.update(f"{name}{tuple(p.shape)}".encode())
        digest.update(sample.numpy().tobytes())
    return digest.hexdigest()[:16]
