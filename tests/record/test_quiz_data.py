"""record/quiz_data.py: one bound for a round's answer, held by a lecture pack and a room alike. A tree round's answer is
a path's length, 0 to the tree's depth, however many nodes were drafted."""

import json

import pytest

from specviz.engine import RunSettings
from specviz.lecture.room_trace import quiz_facts
from specviz.lecture.room_state import RoomError
from specviz.lecture.rooms import Rooms
from specviz.record.lecture_pack import pack_json
from specviz.record.quiz_data import QuizState, RoundQuiz, load_lecture, most_accepted, quiz_to_dict


@pytest.fixture(scope="module")
def tree_trace(tiny_pair, tokenizer):
    from specviz.engine import Engine
    draft, target = tiny_pair
    settings = RunSettings(drafter="tree", tree_widths=(2, 2, 1), temperature=0.7, seed=3, max_new_tokens=12)
    return Engine(draft, target, tokenizer).run("def fib(n):", settings)


def _pack(trace, guesses: dict[int, int]) -> str:
    state = QuizState(True, min(guesses), {n: RoundQuiz(g, 0) for n, g in guesses.items()})
    return pack_json(trace, quiz_to_dict(state))


def test_a_tree_rounds_answer_is_bounded_by_its_depth_in_a_pack_and_in_a_room(tree_trace):
    n, rnd = next((n, r) for n, r in enumerate(tree_trace.rounds, 1) if r.tree)  # the first round has no tree yet
    depth, nodes = len(rnd.tree.widths), rnd.k
    assert most_accepted(rnd) == depth == 3 and nodes > depth + 1  # 2 + 4 + 4 = 10 nodes, 3 deep
    load_lecture(_pack(tree_trace, {n: depth}))  # the deepest path: allowed in a pack
    with pytest.raises(ValueError, match=rf"round {n}: the answer 4 is out of range: round {n} drafted a tree 3 deep, "
                                         r"so the target accepts 0 to 3 of them"):
        load_lecture(_pack(tree_trace, {n: depth + 1}))  # a pack took up to the node count before
    store = Rooms()
    opened = store.open(tree_trace.to_json(), quiz_facts(tree_trace))
    room, follower = store.join(opened.code)
    store.drive(opened.room, opened.key, round_=n, step=0, quiz=True, trace=opened.trace)
    store.answer(room, follower, round_=n, guess=depth)
    with pytest.raises(RoomError):
        store.answer(room, follower, round_=n, guess=depth + 1)


def test_a_chain_rounds_answer_is_bounded_by_its_k(trace):
    rnd = trace.rounds[0]
    assert most_accepted(rnd) == rnd.k
    load_lecture(_pack(trace, {1: rnd.k}))
    data = json.loads(_pack(trace, {1: rnd.k + 1}))
    with pytest.raises(ValueError, match=f"drafted {rnd.k} tokens, so the target accepts 0 to {rnd.k}"):
        load_lecture(json.dumps(data))
