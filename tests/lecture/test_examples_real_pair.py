"""The shipped examples' tokens are the packaged tokenizer's (marked `real`: it prepares the packaged pair's cache).
Apart from tests/lecture/test_examples.py so that the suite's scheduler (tests/conftest.py) runs it on the worker
that holds the packaged pair, and that module on either.
"""

import pytest

from specviz.lecture.examples import EXAMPLES, load_example
from specviz.record.load import token_texts

PACKAGED_TARGET = "Qwen2.5-Coder-1.5B-Instruct"


@pytest.mark.real
def test_every_token_decodes_with_the_packaged_tokenizer():
    from specviz.models.packaged import prepare_packaged
    from specviz.models.pairs import load_tokenizer

    tokenizer = load_tokenizer(str(prepare_packaged(PACKAGED_TARGET)))
    for name in EXAMPLES:
        trace = load_example(name)
        texts = token_texts(trace)
        assert len(texts) > 50
        for token_id, text in texts.items():
            assert token_id < len(tokenizer)
            if text is not None:
                assert tokenizer.decode([token_id]) == text, (name, token_id)
        assert tokenizer.decode(trace.output_token_ids, skip_special_tokens=True) == trace.output_text
        assert tokenizer.decode(trace.baseline.output_token_ids, skip_special_tokens=True) == trace.baseline.output_text
        assert trace.prompt.strip() in tokenizer.decode(trace.prompt_token_ids)
