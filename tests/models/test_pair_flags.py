"""The pair's flags declared once (models/pair_flags.py): every command that loads a pair takes each of them with the
one default and choices, whatever words its help uses."""

import argparse

import pytest

from specviz.models.pair_flags import PAIR_FLAGS, add_pair_flags


def _commands():
    from specviz.cli.costs import add_costs_args
    from specviz.cli.run import add_run_args
    from specviz.cli.serve_bench import add_serve_args
    from specviz.measure.bench_flags import add_bench_args
    from specviz.train.command import add_train_args

    return {"run": add_run_args, "bench": add_bench_args, "costs": add_costs_args, "serve-bench": add_serve_args,
            "train-drafters": add_train_args}


def _actions(add_args) -> dict[str, argparse.Action]:
    """A parser's options by their flag."""
    p = argparse.ArgumentParser()
    add_args(p)
    return {a.option_strings[-1]: a for a in p._actions}


@pytest.mark.parametrize("command", ["run", "bench", "costs", "serve-bench", "train-drafters"])
def test_every_command_takes_the_pair_flags_as_declared(command):
    actions = _actions(_commands()[command])
    assert {"--preset", "--dtype", "--kernels"} <= set(actions)
    for flag, options in PAIR_FLAGS.items():
        if flag not in actions:
            continue
        action = actions[flag]
        assert action.option_strings == [flag]
        assert action.choices == options.get("choices") and action.metavar == options.get("metavar")
        if (command, flag) != ("run", "--draft-weights"):  # run's: None when left out, so a typed one is refused
            assert action.default == options["default"], (command, flag)


def test_the_models_a_command_names_and_a_draft_it_never_loads():
    actions = _actions(lambda p: add_pair_flags(p, ("--target",), draft_weights=False))
    assert set(actions) == {"--help", "--preset", "--target", "--dtype", "--kernels"}
    actions = _actions(add_pair_flags)
    assert set(actions) == {"--help", "--preset", "--dtype", "--kernels", "--draft-weights"}


def test_a_commands_own_help_replaces_the_declared_one_and_nothing_else():
    actions = _actions(lambda p: add_pair_flags(p, helps={"--preset": "whose target", "--dtype": None}))
    assert actions["--preset"].help == "whose target" and actions["--dtype"].help is None
    assert actions["--kernels"].help == PAIR_FLAGS["--kernels"]["help"] and actions["--dtype"].choices


def test_a_help_for_a_flag_not_added_or_an_unknown_model_is_refused():
    with pytest.raises(AssertionError, match="draft"):
        add_pair_flags(argparse.ArgumentParser(), helps={"--draft": "a draft model"})
    with pytest.raises(AssertionError):
        add_pair_flags(argparse.ArgumentParser(), ("--drafter",))


def test_a_value_outside_the_choices_is_refused_by_the_parser():
    p = argparse.ArgumentParser()
    add_pair_flags(p)
    assert vars(p.parse_args([])) == {"preset": None, "dtype": "auto", "kernels": "auto", "draft_weights": "auto"}
    with pytest.raises(SystemExit):
        p.parse_args(["--dtype", "float64"])
