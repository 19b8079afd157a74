"""A batch's KV caches (engine/batched.py): per model one cache whose rows are the batch's sequences, every row
with the same number of slots, and per row the slots that hold tokens it kept (the mask). A slot whose token a
sequence did not keep (a rejected draft, a padding slot) stays in the cache masked, a hole: the caches are never
realigned. Each row's position ids count only its kept slots, so each row computes what its sequence alone would.
The target's slots run transformers' own forward; the draft's run the lean pass where it applies (`LeanSlots`).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from specviz.engine.lean import LeanDecoder


class Slots:
    """A model's batched KV cache and, per sequence, which of its slots hold tokens the sequence kept (the mask).
    Rows are the batch's sequences in order; every row has the same number of slots."""

    def __init__(self):
        self.cache, self.kept = DynamicCache(), torch.zeros(0, 0, dtype=torch.bool)

    def next_positions(self) -> torch.Tensor:
        """(B,) the next position of each row: how many tokens it kept."""
        return self.kept.sum(1)

    def feed(self, model, feeds: list[list[int]], keep: int) -> torch.Tensor:
        """One pass over each row's `feeds` (left-padded with masked slots to one width) -> logits (B, keep, V) of
        each row's last `keep` fed tokens, float32 on CPU. The fed tokens become kept slots (`drop` masks some)."""
        ids, positions, mask = self._inputs(feeds)
        device = next(model.parameters()).device
        out = model(input_ids=ids.to(device), attention_mask=mask.long().to(device),
                    position_ids=positions.to(device), cache=self.cache, use_cache=True, logits_to_keep=keep)
        self.kept = mask
        return out.logits.float().cpu()

    def _inputs(self, feeds: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The feeds left-padded to one width: ids and position ids (B, width), and the mask of every slot each row
        keeps, the new ones last (B, slots + width)."""
        width = max(len(f) for f in feeds)
        pad = [width - len(f) for f in feeds]
        ids = torch.tensor([[0] * n + f for n, f in zip(pad, feeds)])
        new = torch.tensor([[False] * n + [True] * len(f) for n, f in zip(pad, feeds)])
        positions = self.next_positions()[:, None] + (new.cumsum(1) - 1).clamp(min=0)
        return ids, positions, torch.cat([self.kept, new], 1)

    def drop(self, row: int, slots: int, keep: int) -> None:
        """Of the last `slots` slots of `row`, keep the first `keep` and mask the rest (tokens it did not keep)."""
        if slots > keep:
            self.kept[row, self.kept.shape[1] - slots + keep:] = False

    def select(self, rows: list[int]) -> None:
        """Keep only these rows (sequences that finished leave), and drop slots no row keeps."""
        index = torch.tensor(rows, dtype=torch.long)
        self.kept = self.kept[index]
        used = self.kept.any(0)
        for layer in self._filled():
            layer.keys, layer.values = layer.keys[index][:, :, used], layer.values[index][:, :, used]
        self.kept = self.kept[:, used]

    def join(self, alone: DynamicCache, length: int) -> None:
        """Add a row whose `length` slots were filled alone (its prompt), every slot kept: the shorter side is padded
        on the left with masked slots."""
        have = self.kept.shape[1]
        width = max(have, length)
        row = torch.cat([torch.zeros(width - length, dtype=torch.bool), torch.ones(length, dtype=torch.bool)])
        rows = self.kept.shape[0]
        kept = torch.cat([torch.zeros(rows, width - have, dtype=torch.bool), self.kept], 1)
        self.kept = torch.cat([kept, row[None]])
        if rows == 0:
            self.cache = alone
            return
        for mine, theirs in zip(self.cache.layers, alone.layers):
            mine.keys = torch.cat([_left_pad(mine.keys, width), _left_pad(theirs.keys, width)])
            mine.values = torch.cat([_left_pad(mine.values, width), _left_pad(theirs.values, width)])

    def add_empty(self) -> None:
        """Add a row that keeps no slot yet: its cache is filled when it is first needed (`fill`)."""
        rows, have = self.kept.shape
        self.kept = torch.cat([self.kept, torch.zeros(1, have, dtype=torch.bool)])
        for layer in self._filled():
            layer.keys = torch.cat([layer.keys, layer.keys.new_zeros(1, *layer.keys.shape[1:])])
            layer.values = torch.cat([layer.values, layer.values.new_zeros(1, *layer.values.shape[1:])])

    def fill(self, row: int, alone: DynamicCache, length: int) -> None:
        """Row `row`, which keeps no slot yet, takes `length` slots filled alone, every one kept: the shorter side
        is padded on the left with masked slots, as `join` pads."""
        rows, have = self.kept.shape
        width = max(have, length)
        layers = self._filled()
        if not layers:  # no row has slots yet: the cache takes alone's layers, every other row masked zeros
            self.cache, layers = alone, []
            for layer in alone.layers:
                layer.keys, layer.values = _as_row(layer.keys, row, rows), _as_row(layer.values, row, rows)
        for mine, theirs in zip(layers, alone.layers):
            for name in ("keys", "values"):
                x = _left_pad(getattr(mine, name), width)
                x[row, :, width - length:] = getattr(theirs, name)[0]
                setattr(mine, name, x)
        kept = torch.cat([torch.zeros(rows, width - have, dtype=torch.bool), self.kept], 1)
        kept[row] = False
        kept[row, width - length:] = True
        self.kept = kept

    def _filled(self) -> list:
        """The cache's layers that hold slots (none before a row was filled)."""
        return [layer for layer in self.cache.layers if getattr(layer, "keys", None) is not None
                and layer.keys.numel()]


def _as_row(x: torch.Tensor, row: int, rows: int) -> torch.Tensor:
    """(1, H, S, D) -> (rows, H, S, D): x as row `row`, zeros (masked slots) in every other."""
    out = x.new_zeros(rows, *x.shape[1:])
    out[row] = x[0]
    return out


def _left_pad(x: torch.Tensor, width: int) -> torch.Tensor:
    """(B, H, S, D) -> (B, H, width, D), zeros before: masked slots."""
    return torch.nn.functional.pad(x, (0, 0, width - x.shape[2], 0))


class LeanSlots(Slots):
    """The draft's slots, fed through the lean pass (lean.py's LeanDecoder.batch) rather than transformers' forward:
    the same masks, positions and cache, less time per draft step, as a run alone drafts. The draft's numbers need
    not match transformers' (verification uses the q each draft was drawn from); tests/engine/test_batched.py
    checks they do."""

    def __init__(self, decoder: LeanDecoder):
        super().__init__()
        self.decoder = decoder

    def feed(self, model, feeds: list[list[int]], keep: int) -> torch.Tensor:
        ids, positions, mask = self._inputs(feeds)
        logits = self.decoder.batch(ids, positions, mask, self.cache, keep)
        self.kept = mask
        return logits
