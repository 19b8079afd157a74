"""Medusa heads (Cai et al. 2024): n small blocks on the target's last hidden state, head i guessing the token i + 1
places past the next one, each read out through the target's own output layer (frozen, shared, not copied).

    heads = MedusaHeads(target, n=3)          # W = 0: every head starts as the target's own next-token guess
    logits = heads(hidden)                    # (n, V) from the hidden state (H,) of one position

A head is a residual block, x + SiLU(W x + b), then the target's final LM head: hidden² + hidden parameters a head
(7.1 M floats a head for the packaged 1.5B target), not a copy of its 151936 × 1536 vocabulary matrix. W and b start
at zero, so an untrained head is exactly the next-token guess, and training moves it from there (Medusa zeroes W).
The hidden state is what the target's decoder stack outputs after its final norm, the row its LM head reads.
Heads are trained by specviz/train/ and kept beside the model cache by engine/trained.py.
"""

from __future__ import annotations

import torch

from specviz.drafters.trained import MEDUSA
from specviz.models.kernels import activations
from specviz.engine.readout import TargetRows


class ResBlock(torch.nn.Module):
    """x + SiLU(W x + b), with W and b zero at first: the identity until trained."""

    def __init__(self, hidden: int):
        super().__init__()
        self.linear = torch.nn.Linear(hidden, hidden)
        torch.nn.init.zeros_(self.linear.weight)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.nn.functional.silu(self.linear(x))


class MedusaHeads(TargetRows, torch.nn.Module):
    """n residual blocks sharing the target's LM head. `lm_head` is the target's own module (its parameters count as
    shared, models/memory.py); only `blocks` are trained, saved and moved between dtypes."""

    kind = MEDUSA

    def __init__(self, target, n: int = 3):
        super().__init__()
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 8:
            raise ValueError(f"the number of heads must be a whole number from 1 to 8, got {n!r}")
        hidden = target.config.hidden_size
        self.blocks = torch.nn.ModuleList(ResBlock(hidden) for _ in range(n))
        self.lm_head = self.full_head = target.lm_head  # lm_head: what drafts read (use_vocab narrows it)
        self.vocab_ids = None  # the tokens it drafts over (use_vocab); None: every token
        self.device, self.dtype = activations(target)  # what the LM head reads (its weights may be float16)
        self.blocks.to(device=self.device, dtype=self.dtype)
        self.provenance = None  # trained.Provenance, once trained or loaded

    @property
    def n(self) -> int:
        return len(self.blocks)

    @property
    def own(self) -> torch.nn.Module:
        """What is trained and saved: the blocks (the LM head is the target's)."""
        return self.blocks

    def to_target_dtype(self) -> "MedusaHeads":
        """The blocks in the target's activations' dtype, as they run once loaded (training keeps them in float32)."""
        self.blocks.to(self.dtype)
        return self

    @property
    def title(self) -> str:
        """What a trace names the drafter: '3 Medusa heads'."""
        return f"{self.n} Medusa head{'s' * (self.n != 1)}"

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits (..., n, V) from hidden states (..., H): head i's guess at the token i + 1 places past the next."""
        x = hidden.to(_dtype_of(self.blocks[0], self.dtype))
        return self.lm_head(torch.stack([block(x) for block in self.blocks], dim=-2).to(self.dtype))

    def head(self, i: int, hidden: torch.Tensor) -> torch.Tensor:
        """Head i's logits (..., V) alone (training reads one head at a time; its blocks may be float32 there)."""
        block = self.blocks[i]
        return self.lm_head(block(hidden.to(_dtype_of(block, self.dtype))).to(self.dtype))


def _dtype_of(block: ResBlock, default: torch.dtype) -> torch.dtype:
    """The dtype a block computes in: its own weights' (float32 while training), or the activations' once its layer
    runs on a packed path (layers.Fp16Linear keeps float32 activations)."""
    weight = getattr(block.linear, "weight", None)
    return weight.dtype if isinstance(weight, torch.nn.Parameter) else default
