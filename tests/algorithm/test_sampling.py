"""The sampler is the product: these tests pin its exactness without any model."""

import pytest
import torch

from specviz.algorithm.sampling import (SamplingSettings, accept_probability, draw, residual_distribution, sample,
                                        verify, warp)


def test_paris_worked_example():
    # q(" Paris") = 0.9, p(" Paris") = 0.6 -> accepted with probability 0.6 / 0.9 = 0.667
    assert accept_probability(0.6, 0.9) == pytest.approx(2 / 3)
    assert accept_probability(0.95, 0.9) == 1.0
    # the residual puts all its mass where p exceeds q
    assert residual_distribution(torch.tensor([0.6, 0.4]), torch.tensor([0.9, 0.1])).tolist() == [0.0, 1.0]


def test_certain_outcomes_from_hand_built_distributions():
    p = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # target wants token 1 at position 0
    q = torch.tensor([[1.0, 0.0, 0.0]])  # draft proposed token 0, which the target never emits
    v = verify(p, q, torch.tensor([0]), torch.Generator().manual_seed(0))
    assert (v.n_accepted, v.next_token) == (0, 1)
    assert v.accept_probs == [0.0] and v.rejected
    assert v.residual.tolist() == [0.0, 1.0, 0.0]

    p = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    v = verify(p, q, torch.tensor([0]), torch.Generator().manual_seed(0))
    assert (v.n_accepted, v.next_token, v.residual) == (1, 2, None)  # clean sweep, bonus from p[K]


def test_greedy_is_argmax_and_ratio_test_on_one_hot():
    logits = torch.tensor([[0.1, 2.0, 1.9], [3.0, 0.0, 0.0]])
    probs = warp(logits, SamplingSettings(temperature=0))
    assert probs.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    # a greedy draft that disagrees with the greedy target is always rejected, and replaced by the target argmax
    q = warp(torch.tensor([[0.0, 0.0, 5.0]]), SamplingSettings(temperature=0))
    for seed in range(20):
        v = verify(probs, q, torch.tensor([2]), torch.Generator().manual_seed(seed))
        assert (v.n_accepted, v.next_token) == (0, 1)


def test_warp_matches_transformers_generate_semantics():
    logits = torch.tensor([[4.0, 3.0, 2.0, 1.0, 0.0]])
    p = warp(logits, SamplingSettings(temperature=1.0, top_k=2))
    assert (p[0, 2:] == 0).all() and p[0, :2].sum() == pytest.approx(1.0)
    p = warp(logits, SamplingSettings(temperature=1.0, top_p=0.5))
    assert p[0, 0] == pytest.approx(1.0)  # the top token alone already holds more than half the mass
    hot = warp(logits, SamplingSettings(temperature=0.5))
    assert torch.allclose(hot, torch.softmax(logits / 0.5, -1))


@pytest.mark.parametrize("bad", [dict(temperature=-1), dict(top_p=0), dict(top_p=1.5), dict(top_k=-1),
                                 dict(temperature=float("nan")), dict(top_k=1.5)])
def test_bad_settings_name_the_value(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        SamplingSettings(**bad)


def test_residual_all_zero_falls_back_to_p():
    p = torch.tensor([0.25, 0.25, 0.5, 0.0])
    r = residual_distribution(p, p.clone())
    assert torch.allclose(r, p) and r[3] == 0


def test_never_emits_a_token_the_target_forbids():
    p = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    q = torch.tensor([[0.1, 0.1, 0.4, 0.4]])
    gen = torch.Generator().manual_seed(1)
    for _ in range(300):
        x = sample(q, gen)
        v = verify(p, q, x, gen)
        out = x.tolist()[:v.n_accepted] + [v.next_token]
        assert all(p[i, t] > 0 for i, t in enumerate(out))


def test_seeded_generator_repeats_and_draws_are_independent():
    torch.manual_seed(0)
    p = torch.softmax(torch.randn(5, 7), -1)
    q = torch.softmax(torch.randn(4, 7), -1)
    x = torch.tensor([1, 2, 3, 4])
    a = [verify(p, q, x, torch.Generator().manual_seed(s)) for s in range(30)]
    b = [verify(p, q, x, torch.Generator().manual_seed(s)) for s in range(30)]
    assert [(v.n_accepted, v.next_token, v.uniforms) for v in a] == [(v.n_accepted, v.next_token, v.uniforms) for v in b]
    long = [v for v in a if len(v.uniforms) > 1]
    assert long and all(len(set(v.uniforms)) == len(v.uniforms) for v in long)  # one fresh draw per position


def test_shape_errors_are_value_errors():
    with pytest.raises(ValueError, match="verify wants"):
        verify(torch.ones(2, 3) / 3, torch.ones(2, 3) / 3, torch.tensor([0, 1]))


# --- losslessness: the committed tokens follow p, for the real sampler, and not for a wrong one ----------

def _committed_histograms(sampler, p, q, n, seed=0):
    """Run draft-then-verify n times on fixed distributions; histogram of the token committed at each
    position. With rows that do not depend on the prefix, position j must be distributed as p[j]."""
    k, vocab = q.shape
    gen = torch.Generator().manual_seed(seed)
    counts = torch.zeros(k + 1, vocab)
    drafts = torch.multinomial(q, n, replacement=True, generator=gen).T  # (n, K): each row one round's draft
    for x in drafts:
        n_acc, nxt = sampler(p, q, x, gen)
        for j, t in enumerate(x.tolist()[:n_acc] + [nxt]):
            counts[j, t] += 1
    return counts


def _real(p, q, x, gen):
    v = verify(p, q, x, gen)
    return v.n_accepted, v.next_token


def _wrong_resamples_from_p(p, q, x, gen):
    """A bug shipped elsewhere: after a rejection, sample from p instead of the residual max(0, p - q)."""
    v = verify(p, q, x, gen)
    if v.rejected:
        return v.n_accepted, int(sample(p[v.n_accepted][None], gen)[0])
    return v.n_accepted, v.next_token


def _worst_tv(counts, p):
    tvs = []
    for j in range(counts.shape[0]):
        if counts[j].sum() >= 2000:  # later positions are reached less often; judge those with enough samples
            tvs.append(0.5 * (counts[j] / counts[j].sum() - p[j]).abs().sum().item())
    return max(tvs), len(tvs)


def _distributions():
    p = torch.tensor([[0.60, 0.25, 0.10, 0.05, 0.00],
                      [0.10, 0.10, 0.20, 0.30, 0.30],
                      [0.05, 0.05, 0.80, 0.05, 0.05],
                      [0.20, 0.20, 0.20, 0.20, 0.20]])
    q = torch.tensor([[0.90, 0.02, 0.02, 0.02, 0.04],
                      [0.40, 0.05, 0.05, 0.10, 0.40],
                      [0.10, 0.10, 0.60, 0.10, 0.10]])
    return p, q


def test_verify_preserves_p_at_every_position():
    p, q = _distributions()
    tv, judged = _worst_tv(_committed_histograms(_real, p, q, 20000), p)
    assert judged >= 3
    assert tv < 0.02


@pytest.mark.control
def test_negative_control_wrong_sampler_is_caught():
    p, q = _distributions()
    tv, _ = _worst_tv(_committed_histograms(_wrong_resamples_from_p, p, q, 20000), p)
    assert tv > 0.05  # the same bound that passes the real sampler fails this one


def test_sample_follows_probs_and_skips_zero_mass():
    probs = torch.tensor([[0.5, 0.0, 0.2, 0.3, 0.0]]).repeat(40000, 1)
    counts = torch.bincount(sample(probs, torch.Generator().manual_seed(0)), minlength=5) / 40000
    assert counts[1] == 0 and counts[4] == 0
    assert torch.allclose(counts, probs[0], atol=0.01)



def test_a_greedy_draw_is_the_argmax_and_leaves_the_generator_alone():
    """A greedy draw takes each row's argmax without a uniform; a sampled one is `sample`'s draw, by the same
    generator. The negative control: the sampled draw moves the generator, so the next uniform differs."""
    one_hot = warp(torch.tensor([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]]), SamplingSettings(temperature=0))
    gen, untouched = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    assert draw(one_hot, True, gen).tolist() == [1, 0]
    assert torch.rand(1, generator=gen) == torch.rand(1, generator=untouched)
    probs = torch.tensor([[0.2, 0.3, 0.5]]).repeat(50, 1)
    drawn = draw(probs, False, torch.Generator().manual_seed(3))
    assert torch.equal(drawn, sample(probs, torch.Generator().manual_seed(3))) and len(set(drawn.tolist())) > 1
    moved = torch.Generator().manual_seed(7)
    draw(probs[:1], False, moved)
    assert torch.rand(1, generator=moved) != torch.rand(1, generator=torch.Generator().manual_seed(7))

@pytest.mark.parametrize("temperature, top_k, top_p", [(0.7, 0, 1.0), (1.0, 5, 1.0), (1.3, 0, 0.9), (0.5, 50, 0.8),
                                                       (1.0, 0, 0.05), (2.0, 1000, 0.95), (1.0, 1, 0.5)])
def test_warp_equals_transformers_own_warpers_bit_for_bit(temperature, top_k, top_p):
    # specviz writes the warpers out so its math imports only torch; they must stay what generate applies
    from transformers.generation.logits_process import (LogitsProcessorList, TemperatureLogitsWarper,
                                                        TopKLogitsWarper, TopPLogitsWarper)

    warpers = LogitsProcessorList()
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(temperature))
    if top_k > 0:
        warpers.append(TopKLogitsWarper(top_k=top_k))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=top_p))
    logits = torch.randn(3, 2000, generator=torch.Generator().manual_seed(top_k + int(100 * top_p))) * 4
    logits[0, :7] = 3.0  # ties at the k-th score
    expected = torch.softmax(warpers(None, logits.float()), dim=-1)
    assert torch.equal(warp(logits, SamplingSettings(temperature, top_k, top_p)), expected)
