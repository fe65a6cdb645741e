"""An OpenSpiel ``rl_environment`` learner trains on python_dragons_egg and improves against
random play (issue 50): ``dragons_egg.agents.openspiel_agents.train_rl_agent``."""

import numpy as np
import pytest

pytest.importorskip("pyspiel")
torch = pytest.importorskip("torch")

from dragons_egg.agents.openspiel_agents import estimate, train_rl_agent  # noqa: E402


def test_dqn_improves_against_random_play():
    # The default budget (3000 episodes, about 30 s on one core), seed 0: the seed whose
    # untrained network already plays well (+0.44), so the improvement must be learnt.
    run = train_rl_agent(seed=0)
    assert run.episodes == 3000 and run.eval_episodes == 1000
    assert run.improvement.low > 0, run
    assert run.after.low > run.random.high, run
    assert abs(run.improvement.mean - (run.after.mean - run.before.mean)) < 1e-9
    # random play against random play is even: its interval holds 0
    assert run.random.low < 0 < run.random.high


def weights(run):
    return [p.detach().clone() for p in run.learner._q_network.parameters()]


def test_same_seed_same_run_and_the_global_generators_are_left_alone():
    np.random.seed(123)
    want = np.random.random()
    np.random.seed(123)
    threads = torch.get_num_threads()
    lines = []
    a = train_rl_agent(episodes=150, eval_episodes=20, seed=4, log=lines.append)
    assert np.random.random() == want
    assert torch.get_num_threads() == threads
    b = train_rl_agent(episodes=150, eval_episodes=20, seed=4)
    c = train_rl_agent(episodes=150, eval_episodes=20, seed=5)
    assert (a.random, a.before, a.after) == (b.random, b.before, b.after)
    assert all(torch.equal(x, y) for x, y in zip(weights(a), weights(b), strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(weights(a), weights(c), strict=True))
    assert len(lines) == 5 and lines[-1].startswith("episode 150/150: mean return")


@pytest.mark.parametrize("kwargs,needle", [
    ({"episodes": 0}, "episodes must be an integer >= 1, got 0"),
    ({"eval_episodes": 1}, "eval_episodes must be an integer >= 2, got 1"),
    ({"players": 9}, "players must be an integer in 2..8, got 9"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
])
def test_bad_arguments_are_one_line_errors(kwargs, needle):
    with pytest.raises(ValueError, match=needle) as info:
        train_rl_agent(**kwargs)
    assert str(info.value).startswith("train_rl_agent: ") and "\n" not in str(info.value)


def test_without_torch_it_names_the_train_extra_in_one_line(tmp_path):
    import subprocess
    import sys

    from extras_blocker import blocking_env
    code = ("from dragons_egg.agents.openspiel_agents import train_rl_agent\n"
            "try:\n"
            "    train_rl_agent(episodes=5)\n"
            "except ImportError as e:\n"
            "    print('ERR', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env=blocking_env(tmp_path / "site", ["torch"]),
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERR train_rl_agent"), proc.stdout
    assert "'train' extra" in lines[0] and "torch" in lines[0] and "pip install" in lines[0]


def test_estimate_is_the_mean_and_its_95_percent_interval():
    e = estimate([1.0, -1.0] * 50)
    assert e.mean == 0.0
    assert e.half_width == pytest.approx(1.96 * np.std([1.0, -1.0] * 50, ddof=1) / 10)
    assert (e.low, e.high) == (-e.half_width, e.half_width)
