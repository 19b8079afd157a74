"""llama.cpp beside specviz: the packaged pair's own GGUF files, run by llama.cpp's in-process server (the `xllamacpp`
wheel, requirements-peers.txt: no compiler, no ctypes) in a child process of its own (peer_process.py: loaded in
specviz's process, an idle server slowed specviz's turns), so that `bench --peers llama.cpp` and
`serve-bench --peers llama.cpp` measure it in the same run as specviz, turns interleaved, on as many threads as torch.

    peer = start_bench_peer(a, engine)        # None (and a line saying how to install it) where the wheel is absent
    configs.update(peer.configs(engine, 48))  # "llama.cpp target alone", "llama.cpp speculative n_max=4"

What it runs: `xllamacpp.Server(CommonParams)` loads the target (and, speculative, the draft: llama.cpp's
draft-simple at most N_MAX drafts a round) with `n_parallel` slots, users served at once; `handle_completions` takes
one request (OpenAI's completions form, the prompt as specviz's own token ids) and releases the GIL while it runs, so
the users of serve-bench are threads whose requests the server batches. Every request is greedy (temperature 0) and
makes exactly its tokens (ignore_eos). The bench's start, as specviz's runs do, from the chat template's opening
already in the slot's cache (engine/opening.py; an untimed request of the opening alone first, then cache_prompt on)
and prefill the rest; serve-bench's prefill their whole prompt (cache_prompt off), as specviz's batch does. The
server also listens for HTTP, which cannot be turned off: on 127.0.0.1 only, at a port the system picks (port 0),
never reachable from another machine. Its settings are otherwise llama.cpp's defaults, as its users run it. The wheel's CPU build is AVX2
only: a build for the machine's own CPU may be faster.
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from specviz.measure.peer_figures import Completion, completion_of, contrast_line, differed
from specviz.measure.peer_process import InChild

PEERS = ("llama.cpp",)  # what --peers names
WHEEL, REQUIREMENTS = "xllamacpp", "requirements-peers.txt"
N_MAX = 4  # llama.cpp's drafts a round at most, as specviz K = 4 (its own default is 3)
ALONE, SPECULATIVE = "llama.cpp target alone", f"llama.cpp speculative n_max={N_MAX}"  # the bench's rows
SERVED = "llama.cpp"  # serve-bench's rule name for the llama.cpp server (the target alone)
LOOPBACK = "127.0.0.1"
PROMPT_ROOM = 512  # tokens a slot keeps for the prompt (the benchmark's are under 200)
QUIET = -1  # llama.cpp's log verbosity: its errors only
WARM_TOKENS = 8  # a throwaway request's tokens, before the timed turns
LOADING = "llama.cpp: loading the same GGUF files (the first run joins them into the cache: about a minute)"


def parse_peers(text: str) -> tuple[str, ...]:
    """--peers' value: 'llama.cpp' -> ('llama.cpp',); an unknown name is refused, naming the peers there are."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in PEERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown peer {', '.join(map(repr, unknown)) or repr(text)}; the peers "
                                         f"are: {', '.join(PEERS)} (comma-separated)")
    return names


def add_peers_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peers", type=parse_peers, default=(), metavar="NAMES",
                   help=f"also run {', '.join(PEERS)} on the same GGUF files, greedy, its turns interleaved with "
                        f"specviz's (needs: pip install -r {REQUIREMENTS})")


def wheel_missing() -> str | None:
    """Why llama.cpp cannot run here, with how to install it; None where it can."""
    try:
        import xllamacpp  # noqa: F401
    except (ImportError, OSError) as e:  # not installed, or a library it needs (libgomp1) missing
        return (f"llama.cpp left out: its wheel {WHEEL} does not load here ({e}). Install it with: pip install -r "
                f"{REQUIREMENTS} (it needs the system's libgomp1: apt-get install libgomp1). The rest runs.")
    return None


def about() -> dict:
    """What ran as the peer, for results.json and the report's header."""
    import xllamacpp

    return {"peer": "llama.cpp", "wheel": f"{WHEEL} {xllamacpp.__version__}", "cpu_build": "AVX2 (the wheel's)",
            "n_max": N_MAX}


@dataclass(frozen=True)
class GGUFFiles:
    """The packaged pair's GGUF files, as llama.cpp reads them."""

    draft: Path
    target: Path


def tokens_held(prompt: int, max_new: int) -> int:
    """Tokens a request fills in its slot: the prompt, the new tokens, and a round's drafts and one more past them."""
    return prompt + max_new + N_MAX + 1


def slot_context(max_new: int) -> int:
    return tokens_held(PROMPT_ROOM, max_new)


class LlamaServer:
    """One llama.cpp server in this process: the target (with the draft, speculative), `slots` requests at once."""

    def __init__(self, files: GGUFFiles, speculative: bool, slots: int, context: int, threads: int):
        import xllamacpp as xl

        p = xl.CommonParams()
        p.model.path = str(files.target)
        p.n_parallel, p.n_ctx, self.context = slots, slots * context, context
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = threads
        p.hostnames, p.port = [LOOPBACK], 0  # its HTTP side: loopback only, a port the system picks
        p.verbosity = QUIET
        if speculative:
            p.speculative.types = [xl.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
            d = p.speculative.draft
            d.mparams.path, d.n_max = str(files.draft), N_MAX
            d.cpuparams.n_threads = d.cpuparams_batch.n_threads = threads
        self.server = xl.Server(p)
        if not self.server.listening_address.startswith(f"http://{LOOPBACK}:"):  # never beyond this machine
            raise RuntimeError(f"llama.cpp listens on {self.server.listening_address}, not on {LOOPBACK}")

    def address(self) -> str:
        return self.server.listening_address

    def serve_users(self, chosen: list, requests: int, max_new: int, seconds: float):
        return serve_users(self, chosen, requests, max_new, seconds)

    def complete(self, ids, max_new: int, opening: int = 0) -> Completion:
        """One greedy request of exactly max_new tokens, streamed so that its first token's time is known. `opening`:
        the prompt's first tokens that the slot holds before the request is timed, as specviz's runs start from the
        chat template's opening (engine/opening.py): an untimed request of those alone first, then this one with
        cache_prompt on, so that llama.cpp keeps the prefix the two share (its prompt_n says what it prefilled)."""
        check_fits(len(ids), max_new, self.context)
        if opening:
            self.server.handle_completions({"prompt": list(ids[:opening]), "n_predict": 1, "temperature": 0.0,
                                            "ignore_eos": True, "cache_prompt": True}, lambda chunk: None)
        chunks: list[tuple[float, dict]] = []
        asked = time.perf_counter()
        self.server.handle_completions({"prompt": list(ids), "n_predict": max_new, "temperature": 0.0,
                                        "ignore_eos": True, "cache_prompt": bool(opening), "stream": True},
                                       lambda chunk: chunks.append((time.perf_counter(), chunk)))
        return completion_of(chunks, asked)


class RemoteServer:
    """A LlamaServer in a child process of its own (peer_process.InChild: in specviz's process an idle server slowed
    specviz's turns), what the bench and serve-bench run: its requests' clocks run in the child, beside llama.cpp."""

    def __init__(self, files: GGUFFiles, speculative: bool, slots: int, context: int, threads: int):
        self.context = context
        self.child = InChild(LlamaServer, files, speculative, slots, context, threads, name="llama.cpp peer")
        self.listening_address = self.child.call("address")

    def complete(self, ids, max_new: int, opening: int = 0) -> Completion:
        check_fits(len(ids), max_new, self.context)  # refused here, before the child is asked
        return self.child.call("complete", [int(i) for i in ids], max_new, opening)

    def serve_users(self, chosen: list, requests: int, max_new: int, seconds: float):
        """serve_users run in the child, against its server."""
        chosen = [(kind, prompt, [int(i) for i in ids]) for kind, prompt, ids in chosen]
        return self.child.call("serve_users", chosen, requests, max_new, seconds)

    def close(self) -> None:
        self.child.close()


def check_fits(prompt: int, max_new: int, context: int) -> None:
    """ValueError where a prompt of `prompt` tokens and `max_new` new do not fit a slot of `context` tokens."""
    if tokens_held(prompt, max_new) > context:
        raise ValueError(f"a prompt of {prompt} tokens and {max_new} new do not fit llama.cpp's slot of {context}")


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def peers_to_run(peers: tuple[str, ...], pair: tuple, greedy: bool) -> tuple[str, ...]:
    """The peers that will run: () where none was asked for, or where the wheel is absent (said, with how to install
    it: the rest runs). Checked before anything loads: ValueError for a pair llama.cpp cannot run (not packaged: it
    needs the GGUF files) or a run with no greedy decoding (llama.cpp runs greedy only). pair: (preset, draft,
    target)."""
    if not peers:
        return ()
    if not greedy:
        raise ValueError("--peers llama.cpp decodes greedily: run it with temperature 0 (serve-bench) or with greedy "
                         "among --modes (bench)")
    from specviz.models.pairs import packaged_name, pair_ids

    ids = pair_ids(*pair)
    for model_id in ids:
        if packaged_name(model_id) is None:
            raise ValueError(f"--peers llama.cpp runs the packaged pair's GGUF files, and {model_id} is not packaged: "
                             "leave --peers out, or run the default pair")
    why = wheel_missing()
    if why:
        print(why, flush=True)
        return ()
    return peers


def packaged_files(pair: tuple, progress=None) -> GGUFFiles:
    """The pair's GGUF files (pair: (preset, draft, target), checked by peers_to_run), joined once into the cache
    (models/packaged.joined_gguf)."""
    from specviz.models.packaged import joined_gguf
    from specviz.models.pairs import packaged_name, pair_ids

    draft, target = (packaged_name(i) for i in pair_ids(*pair))
    return GGUFFiles(joined_gguf(draft, progress), joined_gguf(target, progress))


class BenchPeer:
    """llama.cpp for `bench --peers`: the target alone and speculative, one slot each, after a throwaway run each."""

    def __init__(self, files: GGUFFiles, max_new: int, warm_ids):
        context = slot_context(max_new)
        self.servers = {ALONE: RemoteServer(files, False, 1, context, _threads()),
                        SPECULATIVE: RemoteServer(files, True, 1, context, _threads())}
        for server in self.servers.values():
            server.complete(warm_ids, WARM_TOKENS)  # as specviz's throwaway run: allocations, caches

    def configs(self, engine, max_new: int) -> dict:
        """{row name: (prompt, seed) -> Completion}, the prompt as specviz encodes it (greedy: the seed is unused)."""
        from specviz.engine import RunSettings

        def run(server):
            def complete(prompt, seed):
                ids = engine.encode(prompt, RunSettings(max_new_tokens=max_new))
                return server.complete(ids, max_new, engine.openings.held(ids))  # as specviz's runs start
            return complete
        return {name: run(server) for name, server in self.servers.items()}


def start_bench_peer(a, engine) -> BenchPeer:
    """llama.cpp's servers for the bench, on the GGUF files of the pair `a` names."""
    from specviz.engine import RunSettings
    from specviz.settings.prompts import BENCH_PROMPTS

    warm = engine.encode(BENCH_PROMPTS["code"][0], RunSettings(max_new_tokens=WARM_TOKENS))
    print(LOADING, flush=True)
    return BenchPeer(packaged_files((a.preset, None, None)), a.max_new_tokens, warm)


class ServePeer:
    """llama.cpp for `serve-bench --peers`: one server with a slot for each of the most users, its closed-loop users
    threads; each prompt run alone first (untimed: the warm-up, and what each user's output is compared with), on
    llama.cpp and on specviz's target alone."""

    def __init__(self, files: GGUFFiles, plan, engine):
        from specviz.engine import RunSettings
        from specviz.measure.closed_loop import prompts_for

        self.plan, most = plan, max(plan.users)
        self.chosen = prompts_for(engine, plan.kinds, most)  # (kind, prompt, ids) a user, as specviz's users get
        self.server = RemoteServer(files, False, most, slot_context(plan.max_new_tokens), _threads())
        prompts = {prompt: ids for _, prompt, ids in self.chosen}
        self.alone = {prompt: self.server.complete(ids, plan.max_new_tokens).text for prompt, ids in prompts.items()}
        self.specviz_alone = {prompt: engine.baseline(prompt, RunSettings(
            temperature=0.0, max_new_tokens=plan.max_new_tokens)).output_token_ids for prompt in prompts}
        self.server.serve_users(self.chosen, 1, WARM_TOKENS, plan.seconds)  # the most users' shapes, untimed

    def run(self, users: int, turn: int):
        """`users` users at once, each sending plan.requests requests in turn: one closed_loop.Run, rule SERVED."""
        from specviz.measure.closed_loop import Run

        plan = self.plan
        seconds, done = self.server.serve_users(self.chosen[:users], plan.requests, plan.max_new_tokens,
                                                plan.seconds)
        detail = [dict(user=u, request=i, kind=self.chosen[u][0], prompt=self.chosen[u][1], ttft_s=c.first_s,
                       tokens_per_s=c.after_first, tokens=c.tokens, output_token_ids=[], text=c.text)
                  for i, (u, c) in enumerate(done)]
        return Run(users, SERVED, turn, seconds, sum(c.tokens for _, c in done) / seconds, 0.0, 0.0, detail)

    def contrast(self, runs) -> str:
        """Each user's output against its prompt alone, at every number of users, on both sides."""
        ours, theirs = [r for r in runs if r.rule != SERVED], [r for r in runs if r.rule == SERVED]
        return "\n".join(["each user's output against its prompt run alone (greedy):",
                          contrast_line("specviz (every rule)", differed(ours, self.specviz_alone,
                                                                         "output_token_ids")),
                          contrast_line("llama.cpp", differed(theirs, self.alone, "text"))])


def start_serve_peer(a, plan, engine) -> ServePeer:
    print(LOADING, flush=True)
    return ServePeer(packaged_files((a.preset, a.draft, a.target)), plan, engine)


def serve_users(server: LlamaServer, chosen: list, requests: int, max_new: int,
                seconds: float) -> tuple[float, list[tuple[int, Completion]]]:
    """Closed loop, a thread a user: each sends its next request when its last ends (none after `seconds`) ->
    (the wall time, (user, Completion) in the order they ended); a request that failed fails the run."""
    done, failed, started = [], [], time.perf_counter()

    def user(u: int) -> None:
        try:
            for r in range(requests):
                if r and time.perf_counter() - started >= seconds:
                    return
                done.append((u, server.complete(chosen[u][2], max_new)))
        except Exception as e:  # said in the caller's thread, below
            failed.append(e)

    threads = [threading.Thread(target=user, args=(u,), daemon=True) for u in range(len(chosen))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return time.perf_counter() - started, done
