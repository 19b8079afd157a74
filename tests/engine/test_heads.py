"""engine/medusa.py and trained.py: Medusa heads on a tiny target: an untrained head is the target's own next-token guess, a head
adds hidden² + hidden parameters and shares the output layer, and saved heads load back for their target only."""

import copy
import json

import pytest
import torch

from harness.tiny_models import noisy_copy, tiny_model
from specviz.engine.medusa import MedusaHeads
from specviz.models.fingerprint import fingerprint
from specviz.engine.trained import Provenance, load_trained, read_provenance, save_trained, trained_folder


@pytest.fixture(scope="module")
def target():
    return tiny_model(seed=5, layers=2)


def provenance(target, **kw) -> Provenance:
    return Provenance(**{**dict(kind="medusa", target_name="tiny", target_hash=fingerprint(target), heads=3,
                                hidden=64, data="test text", train_tokens=100, heldout_tokens=20, steps=4, loss=2.5,
                                agreement=[0.5, 0.25, 0.125]), **kw})


def test_an_untrained_head_is_the_targets_next_token_guess(target):
    heads = MedusaHeads(target, n=3)
    ids = torch.tensor([[5, 9, 14, 3]])
    with torch.no_grad():
        hidden = target.model(input_ids=ids).last_hidden_state[0]  # (4, H): after the final norm
        got = heads(hidden)  # (4, 3, V)
        want = target(input_ids=ids).logits[0]
    assert got.shape == (4, 3, target.config.vocab_size)
    assert all(torch.allclose(got[:, i], want, atol=1e-6) for i in range(3))


def test_a_head_adds_a_block_and_shares_the_output_layer(target):
    heads = MedusaHeads(target, n=2)
    mine = {p.data_ptr() for p in target.parameters()}
    own = [p for p in heads.parameters() if p.data_ptr() not in mine]
    assert sum(p.numel() for p in own) == 2 * (64 * 64 + 64)  # hidden² + hidden a head
    assert heads.lm_head is target.lm_head and set(heads.blocks.state_dict()) == {
        "0.linear.weight", "0.linear.bias", "1.linear.weight", "1.linear.bias"}


@pytest.mark.parametrize("n", [0, 9, 2.0, True, "3"])
def test_a_bad_number_of_heads_says_what_is_allowed(target, n):
    with pytest.raises(ValueError, match="number of heads must be a whole number from 1 to 8"):
        MedusaHeads(target, n=n)


def test_saved_heads_load_back_with_their_provenance(target, tmp_path):
    heads = MedusaHeads(target, n=3)
    with torch.no_grad():
        for p in heads.blocks.parameters():
            p.normal_()
    folder = save_trained(heads, provenance(target), trained_folder(tmp_path, "tiny/target"))
    assert folder == tmp_path / "drafting-heads" / "tiny_target" / "medusa"
    assert json.loads((folder / "provenance.json").read_text())["agreement"] == [0.5, 0.25, 0.125]
    loaded = load_trained(folder, target, "tiny")
    hidden = torch.randn(64)
    assert torch.equal(loaded(hidden), heads(hidden)) and loaded.provenance.steps == 4
    assert load_trained(tmp_path / "nowhere", target, "tiny") is None  # no heads: None, the caller says how to train


def test_weights_trained_for_another_target_are_refused_with_a_sentence(target, tmp_path):
    other = noisy_copy(target, 0.1)
    save_trained(MedusaHeads(other), provenance(other, target_name="other"), tmp_path)
    with pytest.raises(ValueError, match=r"trained for other \(fingerprint [0-9a-f]{16}\), not for this target, tiny "
                                         r".*Train one for it with `python -m specviz train-drafters`"):
        load_trained(tmp_path, target, "tiny")


def test_the_fingerprint_tells_weights_apart_but_not_dtypes(target):
    assert fingerprint(target) == fingerprint(copy.deepcopy(target).to(torch.bfloat16))  # the same weights in bf16
    assert fingerprint(target) != fingerprint(noisy_copy(target, 0.01))


def test_an_unreadable_provenance_is_a_sentence(target, tmp_path):
    save_trained(MedusaHeads(target), provenance(target), tmp_path)
    (tmp_path / "provenance.json").write_text('{"kind": 3}')
    with pytest.raises(ValueError, match="provenance in .* is unreadable"):
        read_provenance(tmp_path)


def test_a_drafts_cost_is_measured_beside_a_target_pass(target):
    from specviz.engine.trained import draft_cost

    draft_s, pass_s = draft_cost(MedusaHeads(target, n=3), target, repeats=3)
    assert 0 < draft_s and 0 < pass_s


# --- the EAGLE-style layer (engine/eagle.py) ---------------------------------------------------------------------

def test_an_untrained_eagle_layer_returns_the_feature_it_was_given(target):
    """fc = [0 | I] and zero output maps: the guess at f_{t+1} is f_t, whose readout is the target's own next guess."""
    from specviz.engine.eagle import EagleDrafter

    eagle = EagleDrafter(target, 2)
    ids = torch.tensor([[5, 9, 14, 3]])
    with torch.no_grad():
        f = target.model(input_ids=ids).last_hidden_state  # (1, 4, H)
        guess = eagle.next_features(f, torch.tensor([[9, 14, 3, 7]]))
        assert torch.allclose(guess, f, atol=1e-6)
        assert torch.allclose(eagle.logits(eagle.predict(f, ids)), target(input_ids=ids).logits[0, -1], atol=1e-5)


def test_the_eagle_layer_shares_the_embedding_and_output_layer_and_sees_a_window(target):
    from specviz.engine.eagle import EagleDrafter, window_mask

    eagle = EagleDrafter(target, 3)
    mine = {p.data_ptr() for p in target.parameters()}
    own = sum(p.numel() for p in eagle.parameters() if p.data_ptr() not in mine)
    h = 64
    assert own == sum(p.numel() for p in eagle.own.parameters()) == (2 * h * h + h) + 2 * h + (3 * h * h + 3 * h) \
        + h * h + 2 * (2 * h) * h + (2 * h) * h  # fc, two norms, qkv, out, gate_up, down
    assert eagle.embed is target.get_input_embeddings() and eagle.lm_head is target.lm_head and eagle.n == 3
    assert window_mask(5, 2).sum(-1).tolist() == [1, 2, 2, 2, 2]


def test_a_saved_eagle_layer_loads_back_and_is_refused_for_another_target(target, tmp_path):
    from tests.helpers import tiny_eagle

    eagle = tiny_eagle(target, steps=3, scale=1.0)
    save_trained(eagle, provenance(target, kind="eagle", heads=3), trained_folder(tmp_path, "tiny", "eagle"))
    loaded = load_trained(trained_folder(tmp_path, "tiny", "eagle"), target, "tiny")
    f, x = torch.randn(1, 6, 64), torch.tensor([[1, 2, 3, 4, 5, 6]])
    assert type(loaded).__name__ == "EagleDrafter" and loaded.n == 3
    assert torch.equal(loaded.predict(f, x), eagle.predict(f, x))
    other = noisy_copy(target, 0.1)
    with pytest.raises(ValueError, match=r"the EAGLE-style layer in .* was trained for tiny .*not for this target"):
        load_trained(trained_folder(tmp_path, "tiny", "eagle"), other, "other")
