"""The README's environment loop ("Using the environment"), as a user's file: it must pass
``mypy --strict`` and run (``tests/install/test_typed_user.py``). The lines between the two
markers are the README's code block, character for character (that test checks it), which
is why ruff's B007 (the loop's unused ``agent``) is off for this file."""
# ruff: noqa: B007

# --- README ---
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env.actions import describe

env = dragons_egg_v0.env(num_players=4, num_rounds=3, render_mode="ansi")
env.reset(seed=42)
for agent in env.agent_iter():
    obs, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    else:
        mask = obs["action_mask"]            # also info["action_mask"]
        action = int(mask.nonzero()[0][0])   # your policy here
    env.step(action)
# --- end README ---

# After the loop: the match is over; the last mask's first legal action, described.
assert not env.agents, env.agents
print(describe(int(mask.argmax())))
