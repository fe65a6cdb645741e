"""Learning agents (room ``training``): the batched self-play trainer (:mod:`.selfplay`), the
SB3 path (:mod:`.train_ppo`, :mod:`.sb3_vec`), the RLlib path (:mod:`.rllib`,
:mod:`.train_rllib`), shipping a policy into the package (:mod:`.ship`), evaluating a run's
saved policies (:mod:`.evaluate_run`), the trainers' comparison (:mod:`.compare`) and the
training benchmark (:mod:`.bench`); the settings every trainer shares are
:class:`.scaffold.RunSettings`. It imports ``evaluation`` and ``common``."""
