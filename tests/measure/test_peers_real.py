"""llama.cpp on the packaged pair's own GGUF files, 8 tokens (measure/peers.py): the target alone, speculative with the
packaged draft, and two users at once, each with its figures; its HTTP side on loopback only. Skipped, saying how to
install it, where the xllamacpp wheel is absent; the first run joins the GGUF files into the cache (about a minute)."""

import pytest
import torch

from specviz.measure import peers
from specviz.settings.prompts import BENCH_PROMPTS

why = peers.wheel_missing()
pytestmark = [pytest.mark.real, pytest.mark.skipif(why is not None, reason=why or "")]
TOKENS = 8


@pytest.fixture(scope="module")
def files():
    return peers.packaged_files((None, None, None))


@pytest.fixture(scope="module")
def prompts(files):
    """The code and story prompts as specviz encodes them (the chat template), with the tokenizer the GGUF holds."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(files.target.parent, gguf_file=files.target.name)
    return [(kind, BENCH_PROMPTS[kind][0], list(tok.apply_chat_template(
        [{"role": "user", "content": BENCH_PROMPTS[kind][0]}], add_generation_prompt=True, tokenize=True,
        return_dict=False))) for kind in ("code", "story")]


def test_the_target_alone_and_two_users_at_once(files, prompts):
    server = peers.LlamaServer(files, False, 2, peers.slot_context(TOKENS), torch.get_num_threads())
    assert server.server.listening_address.startswith("http://127.0.0.1:")  # never beyond this machine
    alone = server.complete(prompts[0][2], TOKENS)
    assert alone.tokens == TOKENS and alone.prompt_tokens == len(prompts[0][2]) and alone.text.strip()
    assert 0 < alone.first_s < alone.wall_s and alone.tokens_per_s > 0 and alone.acceptance is None
    assert alone.prefill_tokens_per_s > 0 and alone.decode_tokens_per_s > 0 and alone.after_first > 0
    seconds, done = peers.serve_users(server, prompts, 1, TOKENS, 600.0)
    assert sorted(u for u, _ in done) == [0, 1] and seconds > 0
    assert all(c.tokens == TOKENS and c.text.strip() for _, c in done)


def test_a_request_from_the_opening_prefills_only_the_rest_and_says_the_same(files, prompts):
    """As the bench runs llama.cpp beside specviz: the chat template's opening already in the slot (engine/opening.py),
    the rest of the prompt prefilled, the same greedy text."""
    from transformers import AutoTokenizer

    from specviz.engine.opening import opening_of

    tok = AutoTokenizer.from_pretrained(files.target.parent, gguf_file=files.target.name)
    opening = opening_of(tok)
    ids = prompts[1][2]
    assert opening and ids[:len(opening)] == opening
    server = peers.LlamaServer(files, False, 1, peers.slot_context(TOKENS), torch.get_num_threads())
    whole, started = server.complete(ids, TOKENS), server.complete(ids, TOKENS, len(opening))
    assert whole.prompt_tokens == len(ids) and started.prompt_tokens == len(ids) - len(opening)
    assert started.text == whole.text and started.tokens == TOKENS


def test_speculative_with_the_packaged_draft(files, prompts):
    server = peers.LlamaServer(files, True, 1, peers.slot_context(TOKENS), torch.get_num_threads())
    c = server.complete(prompts[0][2], TOKENS)
    assert c.tokens == TOKENS and c.draft_n > 0 and 0 <= c.acceptance <= 1 and c.tokens_per_s > 0


def test_a_server_in_a_process_of_its_own_gives_what_it_gives_here(files, prompts):
    """The bench's llama.cpp runs in a child process (measure/peer_process.py: in specviz's process an idle server
    slowed specviz's turns): the same greedy text as the server here, users served there, its errors raised here."""
    here = peers.LlamaServer(files, False, 2, peers.slot_context(TOKENS), torch.get_num_threads())
    there = peers.RemoteServer(files, False, 2, peers.slot_context(TOKENS), torch.get_num_threads())
    try:
        assert there.listening_address.startswith("http://127.0.0.1:")
        ours, theirs = here.complete(prompts[1][2], TOKENS), there.complete(prompts[1][2], TOKENS)
        assert theirs.tokens == TOKENS and theirs.text == ours.text and theirs.wall_s > 0
        seconds, done = there.serve_users(prompts, 1, TOKENS, 600.0)
        assert sorted(u for u, _ in done) == [0, 1] and all(c.tokens == TOKENS for _, c in done) and seconds > 0
        with pytest.raises(ValueError, match="invalid tokens"):  # llama.cpp's refusal in the child, raised here
            there.complete([10**9], TOKENS)
        assert there.complete(prompts[0][2], TOKENS).tokens == TOKENS  # and the child still serves
    finally:
        there.close()
    assert not there.child.alive
