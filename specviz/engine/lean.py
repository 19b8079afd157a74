"""The draft's forward pass without transformers' per-call machinery: the same weights, the same operations in the
same order, so the same logits bit for bit (tests/engine/test_lean.py), in less time per draft step.

Why: around each forward pass transformers spends time of its own (module calls, mask and cache bookkeeping, output
objects), a fifth of an int4 draft step of the packaged draft on this project's CPU, and a round makes K draft
steps. The measurements, dated: docs/engine.md ("The draft's forward pass, lean").

Only drafts use it: the target, whose distribution the output follows, always runs transformers' own forward, the
reference. A draft's q may come from any computation as long as verification uses the q it sampled from, so
this pass cannot change what a run outputs, only how fast it drafts. It covers the Llama/Qwen2 decoder family with
full attention and default rotary positions, on CPU or CUDA (`LeanDecoder.supports`); other drafts run
transformers' forward.

    decoder = LeanDecoder(draft); cache = decoder.new_cache()
    logits = decoder(prompt_ids, cache, keep=1)   # (1, V) float32, as decoding.forward returns
    cache.crop(-2)                                 # the rollback, as DynamicCache.crop
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specviz.models.attention import NAME as GROUPED, grouped_attention
from specviz.models.layers import Int4Groups

ARCHITECTURES = ("Qwen2ForCausalLM", "LlamaForCausalLM")


class LeanCache:
    """Keys and values of every layer in one preallocated tensor each, (layers, 1, kv heads, capacity, head dim);
    positions 0 … length − 1 hold the tokens fed so far. A step writes its tokens in place (transformers'
    DynamicCache concatenates a new tensor per layer per step); a rollback only moves the length."""

    def __init__(self, decoder: "LeanDecoder", capacity: int = 256):
        self.decoder = decoder
        shape = (decoder.n_layers, 1, decoder.kv_heads, capacity, decoder.head_dim)
        self.keys = torch.zeros(shape, dtype=decoder.dtype, device=decoder.device)
        self.values = torch.zeros_like(self.keys)
        self.length = 0

    def get_seq_length(self) -> int:
        return self.length

    def crop(self, n: int) -> None:
        """As DynamicCache.crop: a negative n drops the last −n positions, a non-negative n keeps the first n."""
        self.length = max(0, self.length + n if n < 0 else min(n, self.length))

    def copy(self) -> "LeanCache":
        """A cache of its own holding the same positions (engine/opening.py copies the template's opening so)."""
        twin = LeanCache.__new__(LeanCache)
        twin.decoder, twin.length = self.decoder, self.length
        twin.keys, twin.values = self.keys.clone(), self.values.clone()
        return twin

    def make_room(self, needed: int) -> None:
        """Double the capacity until `needed` positions fit (amortised: a run copies its cache a few times)."""
        capacity = self.keys.shape[3]
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        for name in ("keys", "values"):
            old = getattr(self, name)
            new = old.new_zeros(*old.shape[:3], capacity, old.shape[4])
            new[:, :, :, :self.length] = old[:, :, :, :self.length]
            setattr(self, name, new)


class LeanDecoder:
    """A Llama/Qwen2-family causal LM's forward pass over its own modules' weights (nothing is copied)."""

    @staticmethod
    def supports(model) -> bool:
        """Full attention, default rotary positions, SiLU MLP: the decoder this pass writes out. Anything else
        (sliding windows, scaled rotary, another architecture) runs transformers' forward instead."""
        config = getattr(model, "config", None)
        if type(model).__name__ not in ARCHITECTURES or config is None:
            return False
        if next(model.parameters()).device.type not in ("cpu", "cuda"):  # mps: untested here, left to transformers
            return False
        rope = getattr(config, "rope_parameters", None) or {}
        layer_types = getattr(config, "layer_types", None) or ["full_attention"]
        return (rope.get("rope_type", "default") == "default" and getattr(config, "hidden_act", "") == "silu"
                and all(t == "full_attention" for t in layer_types)
                and not getattr(config, "use_sliding_window", False)
                and getattr(model.model.rotary_emb, "attention_scaling", 1.0) == 1.0)

    def __init__(self, model):
        if not self.supports(model):
            raise ValueError(f"the lean forward pass covers {', '.join(ARCHITECTURES)} with full attention and "
                             f"default rotary positions, not this {type(model).__name__}")
        config, inner = model.config, model.model
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.n_layers, self.eps = len(inner.layers), config.rms_norm_eps
        self.embed, self.norm_weight, self.lm_head = inner.embed_tokens, inner.norm.weight, model.lm_head
        self.inv_freq = inner.rotary_emb.inv_freq
        self.dtype, self.device = self.norm_weight.dtype, self.norm_weight.device
        # attention as the model's own forward computes it (the same bits): grouped matmuls where it was switched to
        # them (a CPU draft: models/attention.py), else torch's SDPA, which is slow for one query in bfloat16
        self.grouped = getattr(config, "_attn_implementation", None) == GROUPED
        # Per layer, the weights and the linear layers' own forward functions (an int8/int4 draft's packed layers
        # too), called directly: nn.Module.__call__'s hook machinery is a good part of the overhead avoided.
        self.layers, self.joined = [], 0  # joined: the groups of layers made one call (side_by_side)
        for layer in inner.layers:
            (qkv, one), (gate_up, other) = (side_by_side([layer.self_attn.q_proj, layer.self_attn.k_proj,
                                                          layer.self_attn.v_proj]),
                                            side_by_side([layer.mlp.gate_proj, layer.mlp.up_proj]))
            self.layers.append((layer.input_layernorm.weight, qkv, layer.self_attn.o_proj.forward,
                                layer.post_attention_layernorm.weight, gate_up, layer.mlp.down_proj.forward))
            self.joined += one + other

    def new_cache(self) -> LeanCache:
        return LeanCache(self)

    def __call__(self, tokens: list[int], cache: LeanCache, keep: int) -> torch.Tensor:
        """Feed tokens after the cache's positions; logits (keep, V) for the last `keep`, float32 on CPU."""
        n, start = len(tokens), cache.length
        cache.make_room(start + n)
        cos, sin = self._rotary(torch.arange(start, start + n, device=self.device))  # (n, head dim)
        # A single token sees every cached position; several see the cache and, causally, each other.
        mask = None if n == 1 else torch.ones(n, start + n, dtype=torch.bool, device=self.device).tril(start)

        def store(i: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            cache.keys[i, :, :, start:start + n], cache.values[i, :, :, start:start + n] = k, v
            return cache.keys[i, :, :, :start + n], cache.values[i, :, :, :start + n]

        x = self._layers(torch.tensor([tokens], device=self.device), cos, sin, mask, store)
        cache.length = start + n
        return self.lm_head.forward(self._norm(x[:, -keep:], self.norm_weight))[0].float().cpu()

    def batch(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache, keep: int) -> torch.Tensor:
        """A batch's step (engine/batch_slots.py's LeanSlots): ids and positions (B, n), `mask` (B, slots + n) the slots each row
        keeps, its new ones last; `cache` a DynamicCache of (B, kv heads, slots, head dim) per layer, extended here ->
        logits (B, keep, V) of each row's last `keep`, float32 on CPU. Each new token sees its row's kept slots and,
        causally, its row's new tokens before it, as transformers' forward with that attention mask."""
        n = ids.shape[1]
        seen = mask[:, None, None, :].expand(-1, 1, n, -1).clone()  # (B, 1, n, slots + n)
        seen[..., -n:] &= torch.ones(n, n, dtype=torch.bool).tril()
        cos, sin = self._rotary(positions.to(self.device))  # (B, n, head dim)
        cos, sin = cos[:, None], sin[:, None]  # broadcast over heads

        def store(i: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            layer = cache.layers[i]
            layer.keys, layer.values = torch.cat([layer.keys, k], 2), torch.cat([layer.values, v], 2)
            return layer.keys, layer.values

        x = self._layers(ids.to(self.device), cos, sin, seen.to(self.device), store)
        return self.lm_head.forward(self._norm(x[:, -keep:], self.norm_weight)).float().cpu()

    def _layers(self, ids: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None, store
                ) -> torch.Tensor:
        """The embedding and every decoder layer over ids (B, n): `store(i, k, v)` keeps layer i's new keys and
        values and returns all it has, the new ones last -> the hidden states (B, n, H)."""
        rows, n = ids.shape
        x = self.embed.forward(ids)  # (B, n, H)
        if self.grouped and mask is not None:  # additive, as transformers' eager mask makes it: 0, or the dtype's least
            mask = torch.zeros(mask.shape, dtype=self.dtype, device=mask.device).masked_fill_(
                ~mask, torch.finfo(self.dtype).min).expand(rows, 1, *mask.shape[-2:])
        for i, (norm1, qkv, o_proj, norm2, gate_up, down) in enumerate(self.layers):
            q, k, v = qkv(self._norm(x, norm1))
            q = _rotate(q.view(rows, n, self.heads, self.head_dim).transpose(1, 2), cos, sin)
            k = _rotate(k.view(rows, n, self.kv_heads, self.head_dim).transpose(1, 2), cos, sin)
            keys, values = store(i, k, v.view(rows, n, self.kv_heads, self.head_dim).transpose(1, 2))
            x = x + o_proj(self._attend(q, keys, values, mask).reshape(rows, n, -1))
            gate, up = gate_up(self._norm(x, norm2))
            x = x + down(F.silu(gate) * up)
        return x

    def _attend(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None
                ) -> torch.Tensor:
        """q (B, heads, n, head dim) over the keys and values -> (B, n, heads, head dim), as the model's attention
        implementation computes it; `mask` or None: boolean for SDPA (True: may look), additive for the grouped
        matmuls (made once a pass, in _layers)."""
        if self.grouped:
            return grouped_attention(None, q, keys, values, mask, scaling=self.head_dim ** -0.5)[0]
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=self.head_dim ** -0.5,
                                              enable_gqa=self.heads != self.kv_heads).transpose(1, 2)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """RMSNorm as transformers computes it: in float32, then back to the hidden dtype, then the weight."""
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * h.to(x.dtype)

    def _rotary(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of these positions (any shape, a head dim added), as transformers' default rotary embedding
        gives them."""
        freqs = positions.float()[..., None] * self.inv_freq.float()
        angles = torch.cat((freqs, freqs), dim=-1)
        return angles.cos().to(self.dtype), angles.sin().to(self.dtype)


def side_by_side(linears: list) -> tuple["callable", bool]:
    """(h -> each linear layer's output of h, in order; whether that is one kernel call): one where the layers join
    into one (layers.Int4Groups.joined: an int4 draft's q/k/v and gate/up, the same bits), else a call each."""
    joined = Int4Groups.joined(linears)
    if joined is None:
        calls = [linear.forward for linear in linears]
        return (lambda h: [call(h) for call in calls]), False
    sizes = [linear.out_features for linear in linears]
    for linear, rows in zip(linears, joined.packed.split(sizes)):  # the parts read theirs from it: held once
        linear.packed = rows
    return (lambda h: joined.forward(h).split(sizes, -1)), True


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions on (B, heads, n, head dim): x·cos + rotate_half(x)·sin."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin
