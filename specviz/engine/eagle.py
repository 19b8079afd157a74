"""An EAGLE-style drafter (Li et al. 2024, EAGLE-1; code SafeAILab/EAGLE): one small decoder layer that works on the
target's own features, read out through the target's frozen LM head.

    eagle = EagleDrafter(target)                       # fc, one decoder layer; embeddings and LM head the target's
    f_next = eagle.predict(features, tokens)           # (B, H): the feature after the last (feature, token) pair

The target's feature f_t is the hidden state its LM head reads at position t (after the final norm), which gave the
token x_{t+1}. The layer's input at t is f_t concatenated with the embedding of x_{t+1}, reduced by a linear map
2H -> H (`fc`); one pre-norm decoder layer (causal self-attention, then a SwiGLU MLP) turns it into a guess at
f_{t+1}, and the LM head turns that into a guess at x_{t+2}. To draft, it runs on its own guesses:
(f_{t+1} guessed, the drafted x_{t+2}) gives f_{t+2} guessed, and so on.

Choices, for a CPU and for reading (EAGLE's own layer is a full LLaMA decoder layer with a KV cache):
- Attention sees a window of the WINDOW most recent positions (the target's features of the committed text, then
  the layer's own guesses), recomputed at every draft step, with no cache: at most WINDOW + K rows of one layer a step.
  Training masks attention to the same window, so the layer never learns to read further back than it will.
- Rotary positions inside the window (relative, so where the window starts does not matter); 12 heads of 128 for the
  packaged target (hidden 1536); an MLP of width 2·hidden (the target's is 8960): 28 M parameters, 4 % of a
  draft model's, trainable in minutes here.
- At first the layer is the identity on f_t (fc = [0 | I], the attention's and MLP's outputs zero), so an
  untrained layer guesses the target's own next token, as an untrained Medusa head does; training moves it.

The token embedding and the LM head are the target's own modules, shared and frozen: only `own` is trained, saved
and moved between dtypes (trained.py saves it with its Provenance, refused for another target).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specviz.drafters.trained import EAGLE
from specviz.models.kernels import activations
from specviz.engine.readout import TargetRows

WINDOW = 32  # positions a step's attention sees: the most recent target features, then the layer's own guesses
MLP_FACTOR = 2  # the MLP's width as a multiple of the hidden size
HEAD_DIM = 128  # attention head size (the packaged target's too); fewer heads for a smaller hidden size


class RMSNorm(torch.nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(hidden)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate(x: torch.Tensor) -> torch.Tensor:
    """Rotary positions on (B, heads, L, head dim), positions 0 .. L-1 (only differences matter)."""
    half = x.shape[-1] // 2
    freq = 10000.0 ** (-torch.arange(half, dtype=torch.float32) / half)
    angle = torch.arange(x.shape[-2], dtype=torch.float32)[:, None] * freq  # (L, half)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)


def window_mask(length: int, window: int) -> torch.Tensor:
    """(L, L) bool: position i sees positions i - window + 1 .. i.

    >>> window_mask(4, 2).int().tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    """
    i = torch.arange(length)
    return (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)


class EagleLayer(torch.nn.Module):
    """fc (2H -> H), then one pre-norm decoder layer: x + attention(norm(x)), then + MLP(norm(·))."""

    def __init__(self, hidden: int):
        super().__init__()
        self.heads = hidden // HEAD_DIM if hidden % HEAD_DIM == 0 else 1
        self.fc = torch.nn.Linear(2 * hidden, hidden)
        self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)
        width = MLP_FACTOR * hidden
        self.gate_up = torch.nn.Linear(hidden, 2 * width, bias=False)
        self.down = torch.nn.Linear(width, hidden, bias=False)
        with torch.no_grad():  # the identity on the feature at first (module docstring)
            self.fc.weight.zero_()
            self.fc.weight[:, hidden:].copy_(torch.eye(hidden))
            self.fc.bias.zero_()
            self.out.weight.zero_()
            self.down.weight.zero_()

    def forward(self, features: torch.Tensor, embeddings: torch.Tensor, window: int = WINDOW) -> torch.Tensor:
        """(B, L, H) guesses at the next features, from features (B, L, H) and the next tokens' embeddings (B, L, H)."""
        x = self.fc(torch.cat([embeddings, features], -1))  # (B, L, H)
        b, n, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        mask = window_mask(n, window).to(x.device)
        attended = F.scaled_dot_product_attention(_rotate(q), _rotate(k), v, attn_mask=mask)  # (B, heads, L, d)
        x = x + self.out(attended.transpose(1, 2).reshape(b, n, h))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, -1)
        return x + self.down(F.silu(gate) * up)


class EagleDrafter(TargetRows, torch.nn.Module):
    """The EAGLE layer with the target's embedding and LM head (shared, frozen). `steps`: the draft steps it was
    trained and measured for (a chain drafts at most that many; a tree is at most that deep)."""

    kind = EAGLE

    def __init__(self, target, steps: int = 4):
        super().__init__()
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 8:
            raise ValueError(f"the EAGLE drafter's steps must be a whole number from 1 to 8, got {steps!r}")
        self.steps = steps
        self.layer = EagleLayer(target.config.hidden_size)
        self.embed = target.get_input_embeddings()
        self.lm_head = self.full_head = target.lm_head  # lm_head: what drafts read (use_vocab narrows it)
        self.vocab_ids = None  # the tokens it drafts over (use_vocab); None: every token
        self.device, self.dtype = activations(target)  # what the LM head reads (its weights may be float16)
        self.layer.to(device=self.device, dtype=self.dtype)
        self.provenance = None

    @property
    def own(self) -> torch.nn.Module:
        """What is trained and saved: the layer (the embedding and the LM head are the target's)."""
        return self.layer

    @property
    def n(self) -> int:
        """The most draft steps (heads.MedusaHeads.n's counterpart: the engine bounds K and a tree's depth by it)."""
        return self.steps

    @property
    def title(self) -> str:
        """What a trace names the drafter."""
        return "an EAGLE-style layer"

    def to_target_dtype(self) -> "EagleDrafter":
        self.layer.to(self.dtype)
        return self

    def next_features(self, features: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L, H) the layer's guesses at the features after each (feature, next token) pair: features (B, L, H),
        tokens (B, L) the token each feature gave."""
        weight = getattr(self.layer.fc, "weight", None)  # float32 while training; on a packed path, the activations'
        dtype = weight.dtype if isinstance(weight, torch.nn.Parameter) else self.dtype
        return self.layer(features.to(dtype), self.embed(tokens).to(dtype))

    def predict(self, features: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """(B, H) the guess at the feature after the last pair, from the last WINDOW pairs: one draft step."""
        return self.next_features(features[:, -WINDOW:], tokens[:, -WINDOW:])[:, -1]

    def logits(self, feature: torch.Tensor) -> torch.Tensor:
        """The LM head's logits (..., V) of guessed features (..., H)."""
        return self.lm_head(feature.to(self.dtype))
