"""What the test files share that is neither a fixture nor used by tools/: a browser test module's marks (BROWSER), a
clock set by hand, a reader of a room's event stream, the wrong tree rule the negative
controls use, a fake packaged model, a hand-made trace, and where the repository and its recorded fixture are.
What tools/ uses too (tiny models, calling the app's endpoints, the browser) lives in harness/.

Imported as `tests.helpers`: by the test files (no test file imports another) and by tests/conftest.py for its
fixtures; never by tools/. Everything here is built in the calling process; nothing is downloaded.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import threading
import time
import zlib
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from harness.browser import CHROMIUM
from specviz.algorithm import tree as tree_module
from specviz.algorithm.sampling import residual_distribution, sample
from specviz.algorithm.tree import verify_tree
from specviz.models import packaged as packaged_pair
from specviz.models.packaged import PackagedGGUF
from specviz.record.stats import summarize
from specviz.record.trace import (ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT, Baseline, DraftPosition, Round,
                                  TokenProb, Trace)

ROOT = Path(__file__).resolve().parent.parent  # the repository
FIXTURE = ROOT / "tests" / "fixtures" / "qwen_coder_fib.json"  # a run of the packaged pair, 7 rounds
# `bench --peers llama.cpp --rules --types code,story --modes greedy --repeats 5 --max-new-tokens 48`'s results.json,
# 2026-12-06 on a quiet AMD EPYC: what assets/costs/peers.json was written from (measure/peer_recording.py)
PEERS_RESULTS = ROOT / "tests" / "fixtures" / "peers-quiet-2026-12-06.json"
# A browser test module's marks, said once: `pytestmark = BROWSER` (skipped, not failed, where Chromium is missing)
BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed"),
]
# The presenter view's two projector windows, each with the least font size it allows in px: 1 rem of its root font,
# min(1.25vw, 2.222vh) (assets/present.css), so 1920x1080 is the 1280x720 picture 1.5 times larger. The rounds' view
# (tests/app/test_presenter_browser.py) and the Lab's and the Costs tab's (test_sections_browser.py) are held to it.
PROJECTOR = {"1280x720": ((1280, 720), 16), "1920x1080": ((1920, 1080), 24)}
# Every text under `roots` on screen whose font is under `least` px, as "15.0px: <its element's name>": a JS function
# both projector tests declare in their measuring script (`${TOO_SMALL}` there, then tooSmall(roots, least, seen, name)).
TOO_SMALL = """const tooSmall = (roots, least, seen, name) => {
    const small = [];
    for (const root of roots) {
      const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        const e = t.parentElement;
        if (!t.textContent.trim() || !seen(e) || !e.getClientRects().length) continue;
        const size = parseFloat(getComputedStyle(e).fontSize);
        if (size < least - 0.01) small.push(`${size.toFixed(1)}px: ${name(e)}`);
      }
    }
    return [...new Set(small)];
  };"""

# The device the device-aware tests run on: cpu unless told (tools/gpu_check.py runs them with cuda). The real-pair
# tests take it too, where unset meaning auto (cuda → mps → cpu), as the app does.
TEST_DEVICE = os.environ.get("SPECVIZ_TEST_DEVICE", "")


# --- the tree rule's negative control --------------------------------------------------------------------------

def _test_against_unchanged_p(tree, tokens, P, Q, gen, greedy=False, distinct=False):
    """A wrong rule: every child is tested against the node's original p (no residual between siblings); only
    the replacement after all rejections comes from the residual."""
    real = tree_module.residual_distribution
    tree_module.residual_distribution = lambda target, q: target
    try:
        v = verify_tree(tree, tokens, P, Q, gen, distinct=distinct)
    finally:
        tree_module.residual_distribution = real
    if v.next_kind == REPLACEMENT:
        node = v.path[-1] if v.path else 0
        v.next_token = int(sample(residual_distribution(P[node], Q[node])[None], gen)[0])
    return v


def _test_against_unchanged_q(tree, tokens, P, Q, gen, greedy=False, distinct=True):
    """A wrong rule for distinct siblings: children drawn without replacement, tested as if drawn i.i.d. (against
    the node's unchanged q, not q without the earlier siblings)."""
    return verify_tree(tree, tokens, P, Q, gen, greedy=greedy, distinct=False)


# --- a fake packaged model: two small chunk files and a fake conversion stand in for the real 3-minute one -----

def fake_packaged(folder: Path) -> PackagedGGUF:
    """Two chunk files under folder and the PackagedGGUF entry that matches them."""
    chunks = [folder / "part01.bin", folder / "part02.bin"]
    for i, path in enumerate(chunks):
        path.write_bytes(bytes([i]) * 1000)
    joined = b"".join(p.read_bytes() for p in chunks)
    return PackagedGGUF("Fake", ("fake-part1", "fake-part2"), len(joined), hashlib.sha256(joined).hexdigest())


def convert(work: Path, progress=None, fail_after: str | None = None) -> None:
    """What _convert_gguf leaves in work/out: a config, weights (a real safetensors file) and a tokenizer.
    With fail_after, it stops after writing that file, as a full disk would stop it."""
    out = work / "out"
    out.mkdir()
    (out / "config.json").write_text('{"model_type": "qwen2"}')
    if fail_after == "config.json":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    save_file({"w": torch.ones(64)}, str(out / "model.safetensors"))
    (out / "tokenizer.json").write_text("{}")


def install(packaged: PackagedGGUF, chunk_dir: Path, converter, setattr_) -> None:
    """Point specviz.models.packaged at the fake: its PACKAGED entry, its chunk files, the converter (setattr_:
    monkeypatch's, or plain setattr in a subprocess)."""
    setattr_(packaged_pair, "PACKAGED", {**packaged_pair.PACKAGED, "Fake": packaged})
    setattr_(packaged_pair, "chunk_files", lambda p: sorted(chunk_dir.glob("part*.bin")))
    setattr_(packaged_pair, "_convert_gguf", converter)


# --- a hand-made trace: two rounds with known times, and a baseline --------------------------------------------

def make_round(i: int, k: int, n_accepted: int, draft_s: float, verify_s: float) -> Round:
    fates = [ACCEPTED] * n_accepted + ([REJECTED] if n_accepted < k else []) + [DISCARDED] * (k - n_accepted - 1)
    drafts = [DraftPosition(10 + j, "x", 0.5, 0.4, f) for j, f in enumerate(fates)]
    kind = BONUS if n_accepted == k else REPLACEMENT
    return Round(i, k, drafts, n_accepted, TokenProb(1, "y", 0.5), kind, None, None,
                 [10 + j for j in range(n_accepted)] + [1], draft_s, verify_s)  # what a real round commits


def make_trace(baseline: bool = True) -> Trace:
    rounds = [make_round(0, 4, 4, 0.20, 0.10), make_round(1, 4, 1, 0.12, 0.10)]  # 5 + 2 tokens
    summary = summarize(rounds, total_time_s=0.5)  # 14 tokens/s
    return Trace(settings={"k": 4}, draft_model="<i>draft</i>", target_model="target", device="cpu",
                 dtype="float32", prompt="hi", prompt_token_ids=[1], rounds=rounds,
                 output_token_ids=[t for r in rounds for t in r.committed_ids], output_text="",
                 summary=summary, baseline=Baseline([1] * 7, "", 0.05, 1.0, 7.0) if baseline else None)


# --- tiny drafting heads: random blocks on a tiny target, so they agree with it sometimes, not always -----------

def tiny_heads(target, n: int = 3, scale: float = 0.3, seed: int = 0):
    """Medusa heads (engine/medusa.py) for `target` whose blocks are random (std `scale` / √hidden): a guess near,
    but not at, the target's own next-token distribution."""
    from specviz.engine.medusa import MedusaHeads

    heads = MedusaHeads(target, n)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in heads.blocks.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * scale / p.shape[-1] ** 0.5)
    return heads.eval()


def tiny_eagle(target, steps: int = 3, scale: float = 0.3, seed: int = 0):
    """An EAGLE-style layer (engine/eagle.py) for `target` with random weights (std `scale` / √fan-in) on top of its
    identity start: a guess near, but not at, the target's own next-token distribution, differing by path."""
    from specviz.engine.eagle import EagleDrafter

    eagle = EagleDrafter(target, steps)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in eagle.layer.named_parameters():
            if "norm" not in name:
                p.add_(torch.randn(p.shape, generator=gen) * scale / p.shape[-1] ** 0.5)
    return eagle.eval()


# Each setting that only applies with another (settings/needs.py), as a pair the tests of every place that takes
# settings share (the CLI, RunSettings, /generate, the page): (setting, a value besides its default, the others that
# leave it doing nothing, the others with which it applies, words of its refusal). Values are RunSettings' (tree
# widths as a tuple); a stop rule besides the default is whichever the contract does not start with.
def need_cases() -> list[tuple[str, object, dict, dict, str]]:
    from specviz.engine import RunSettings
    from specviz.settings.bounds import STOP_RULES, THRESHOLD_RULE

    other_rule = next(rule for rule in STOP_RULES if rule != RunSettings().stop_rule)
    sampled, greedy = {"temperature": 0.7}, {"temperature": 0.0}
    return [
        ("k", 8, {"drafter": "tree"}, {"drafter": "model"}, "with a chain drafter"),
        ("adaptive", True, {"drafter": "lookup"}, {"drafter": "model"}, "with a chain drafter that runs a model"),
        ("stop_rule", other_rule, {"adaptive": False}, {"adaptive": True}, "with adaptive K"),
        ("confidence", 0.5, {"adaptive": True, "stop_rule": "cost"},
         {"adaptive": True, "stop_rule": THRESHOLD_RULE}, "with adaptive K stopping by the confidence threshold"),
        ("draft_layers", 1, {"drafter": "model"}, {"drafter": "layers"}, "with self-speculation"),
        ("tree_widths", (2, 1), {"drafter": "model"}, {"drafter": "tree"}, "with a tree drafter of fixed widths"),
        ("tree_widths", (2, 1), {"drafter": "shaped"}, {"drafter": "tree"}, "with a tree drafter of fixed widths"),
        ("tree_budget", 8, {"drafter": "model"}, {"drafter": "shaped"}, "with a shaped tree drafter"),
        ("tree_budget", 8, {"drafter": "tree"}, {"drafter": "shaped"}, "with a shaped tree drafter"),
        ("tree_depth", 3, {"drafter": "lookup"}, {"drafter": "shaped"}, "with a shaped tree drafter"),
        *((name, value, greedy, sampled, "when sampling") for name, value in (("top_k", 5), ("top_p", 0.5),
                                                                               ("seed", 3))),
    ]


STORES = ("memory", "disk", "redis")  # where rooms are kept (lecture/room_store.py): a room's rules hold in each


def room_store(kind: str, request, tmp_path):
    """A fresh room store of `kind` (STORES): in memory, a SQLite file under `tmp_path`, or the run's real Redis
    (the `redis_url` fixture; skipped where redis-server is missing) under a prefix of its own."""
    from specviz.lecture.room_disk import DiskStore
    from specviz.lecture.room_redis import RedisStore
    from specviz.lecture.room_store import MemoryStore

    if kind == "disk":
        return DiskStore(tmp_path / "rooms.sqlite")
    if kind == "redis":
        return RedisStore(request.getfixturevalue("redis_url"), prefix=f"test-{os.urandom(6).hex()}")
    return MemoryStore()


class Clock:
    """A clock a test sets by hand (`clock.now += 31`): what rooms read time through, so no test waits for time."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- a room's event stream, read in a thread ---------------------------------------------------------------------

class EventReader:
    """A room's event stream read in a thread, as a browser's EventSource would (gzipped, as Chromium asks for it):
    `messages` holds (event, id, data as parsed JSON, the message's bytes as they came over the wire) in order;
    `wait` polls for a condition on them."""

    def __init__(self, url: str, headers: dict | None = None):
        import httpx

        self.messages: list[tuple[str, str, dict, bytes]] = []
        self.headers: dict = {}
        self.cut: str | None = None  # why the stream broke off, where its server stopped before closing it
        self._stop = False

        def read():
            try:
                listen()
            except (httpx.RemoteProtocolError, httpx.ReadError) as e:  # a server stopped mid-stream (a test's
                self.cut = f"{type(e).__name__}: {e}"                    # teardown): the stream ends, as a browser's

        def listen():
            with httpx.stream("GET", url, headers={"Accept-Encoding": "gzip", **(headers or {})},
                              timeout=60) as stream:
                self.headers = dict(stream.headers)
                gz = stream.headers.get("content-encoding") == "gzip"
                unzip, text, wire = zlib.decompressobj(16 + zlib.MAX_WBITS), "", b""
                for chunk in stream.iter_raw():
                    wire += chunk
                    text += unzip.decompress(chunk).decode() if gz else chunk.decode()
                    while "\n\n" in text:
                        block, text = text.split("\n\n", 1)
                        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
                        if "data" in fields:
                            self.messages.append((fields.get("event", "message").strip(), fields.get("id", "").strip(),
                                                  json.loads(fields["data"]), wire))
                            wire = b""
                            if fields.get("event", "").strip() == "closed" or self._stop:
                                return

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    def wait(self, condition, timeout: float = 30.0):
        """Wait until `condition(messages)` is truthy; -> its value (AssertionError after `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = condition(list(self.messages))
            if seen:
                return seen
            time.sleep(0.02)
        raise AssertionError(f"the stream never showed it: {[m[2].get('version') for m in self.messages]}"
                             + (f"; it broke off: {self.cut}" if self.cut else ""))

    def wait_version(self, version: int) -> dict:
        """Wait for a state of the room at `version` or later; -> that state."""
        return self.wait(lambda ms: next((m[2] for m in ms if m[0] == "message" and m[2]["version"] >= version),
                                         None))

    def wire(self, version: int) -> bytes:
        """The bytes that carried the state at `version` (after waiting for it)."""
        self.wait_version(version)
        return next(m[3] for m in self.messages if m[0] == "message" and m[2]["version"] >= version)

    def stop(self) -> None:
        self._stop = True  # ends after its next message (the room's next change, or its close)
