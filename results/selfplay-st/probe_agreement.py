"""Offline probe (issue 25; README, "What the agreement hides"): the guiding network (the
127.3M checkpoint) fitted to the search targets alone, without PPO, by Adam on 1,024
decisions a step. Does its held-out agreement with the search pass its own (92.2% at 2
players, 96.7% at 4)? The agreement is split as the trainer's evaluations split it: on
the decisions where the search overruled its guide, and on the others.

Arguments: target (``dist``: the visit distributions, as the trainer fits them;
``onehot``: the move the search played), learning rate, steps, [torch threads]. Run from
the repository's root, e.g. ``python results/selfplay-st/probe_agreement.py dist 1e-4 800``.
"""
import sys
import time

import torch

from dragons_egg.experiments.training.checkpoint import load_checkpoint
from dragons_egg.experiments.training.selfplay import Learner, config_from_dict

mode, lr, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(int(sys.argv[4]) if len(sys.argv) > 4 else 2)
state = load_checkpoint("results/selfplay-shipped/latest.pt")
learner = Learner(config_from_dict(state["config"]))
learner.model.load_state_dict(state["model"])
learner.load_search_targets("results/selfplay-st/targets")
opt = torch.optim.Adam(learner.model.parameters(), lr=lr, eps=1e-5)
fit = learner.search
assert fit is not None
if mode == "onehot":
    fit = dict(fit, target=torch.nn.functional.one_hot(fit["played"],
                                                       fit["target"].shape[1]).float())
elif mode != "dist":
    raise SystemExit(f"target {mode!r}: dist or onehot")
print(0, learner.search_figures(), flush=True)
gen = torch.Generator().manual_seed(1)
start = time.time()
for step in range(1, steps + 1):
    rows = torch.randint(len(fit["obs"]), (1024,), generator=gen)
    loss = learner._search_loss({k: fit[k][rows] for k in ("obs", "mask", "target")})
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % max(1, steps // 8) == 0:
        with torch.no_grad():  # on 20,000 of the fitted decisions
            logits, _ = learner.model(fit["obs"][:20000], fit["mask"][:20000])
            fitted = (logits.argmax(-1) == fit["played"][:20000]).float().mean().item()
        print(step, f"{time.time() - start:.0f}s", "fitted_agree", round(fitted, 4),
              learner.search_figures(), flush=True)
