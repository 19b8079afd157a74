"""A drafter's output layer over part of the vocabulary (FR-Spec, Zhao et al. 2025): the target's own output rows
for the tokens it uses most, so a draft from the target's state reads a fifth of the 151,936 rows it would read
otherwise, the part of a head's draft that costs most on a CPU.

    readout = SubsetReadout(target.lm_head, ids, device, dtype, path)   # its rows for `ids`, on the pair's kernels
    logits = readout(hidden)                     # (..., V): the subset's logits, −inf for every other token

Why the output stays exact: a draft is sampled from q = softmax of these logits, which is 0 outside the subset, and
verification tests each draft against the q it was drawn from (p's residual max(0, p − q) then covers every token
the subset leaves out). Greedy drafting takes the subset's top token; the target's own argmax still decides.
"""

from __future__ import annotations

import torch
from torch import nn

from specviz.models.kernels import put_linears_on
from specviz.models.layers import Fp16Linear

SUBSET_SIZES = (1024, 4096, 16384, 32768)  # the subsets a training reports held-out agreement for and the Costs
#                                            tab times a draft over (train/fit.py's draft_vocab is one of them)


class TargetRows:
    """What a drafter on the target's state (Medusa's heads, the EAGLE layer) does with the target's output layer:
    it reads `full_head` (every row) or, after use_vocab, a SubsetReadout of it. The drafter sets lm_head, full_head,
    vocab_ids, device and dtype in its __init__ (it is a torch module: the heads' own layers are its own)."""

    def use_vocab(self, ids: torch.Tensor, path: str = "") -> None:
        """Draft over the target's rows for `ids` only (SubsetReadout: q is 0 for every other token, and
        verification tests each draft against that q, so the output stays exact)."""
        self.lm_head = SubsetReadout(self.full_head, ids, self.device, self.dtype, path)
        self.vocab_ids = self.lm_head.ids

    def use_all_rows(self) -> None:
        """Draft over every output row again (use_vocab undone)."""
        self.lm_head, self.vocab_ids = self.full_head, None


def output_rows(head: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """An output layer's rows for `ids`, float32 (one packed for its kernels is unpacked for it, for a moment)."""
    weight = getattr(head, "weight", None)
    if isinstance(head, Fp16Linear) and weight is None:
        weight = torch.ops.quantized.linear_unpack_fp16(head.packed)[0]  # float32, the float16 values
    return weight.detach()[ids].float()


class SubsetReadout(nn.Module):
    """The LM head over `ids` only, scattered back into the full vocabulary with −inf elsewhere."""

    def __init__(self, head: nn.Module, ids: torch.Tensor, device, dtype, path: str = ""):
        super().__init__()
        ids = ids.long().sort().values
        self.register_buffer("ids", ids.to(device))
        self.out_features, self.in_features = head.out_features, head.in_features
        linear = nn.Linear(self.in_features, len(ids), bias=False, device=device, dtype=dtype)
        with torch.no_grad():
            linear.weight.copy_(output_rows(head, ids).to(device, dtype))
        self.rows = put_linears_on(nn.Sequential(linear), path)  # on the pair's kernels, as the rest of the draft

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        part = self.rows(hidden)
        out = part.new_full((*part.shape[:-1], self.out_features), float("-inf"))
        out[..., self.ids] = part
        return out
