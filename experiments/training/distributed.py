"""The batched self-play trainer's collection on Ray: collectors as Ray actors on every core
and machine a user has, the learner in the driver.

Each collector actor (:class:`CollectorWorker`) holds a
:class:`~dragons_egg.experiments.training.rollout.Collector` (batched engines for every table
size), a copy of the learner's network for inference on one torch thread with a generator of
its own (:class:`~dragons_egg.experiments.training.rollout.ActingPolicy`), and the league's
members. It returns each rollout as numpy arrays through Ray's object store. The driver
(:class:`RayCollection`) sends the learner's weights with every request (one ``ray.put`` per
update, passed by reference) and the league when it changes.

**Pipelining.** With ``pipeline`` on, every collector always has a rollout in flight: the
driver takes the oldest finished one, at once asks that collector for the next with the
weights it has now, and only then updates on the one it took. Collection of the next rollout
overlaps the update on the last: the rollout is one policy version old when it is learned from
(its *lag*, reported), which PPO allows since its ratio is taken against the behaviour
policy's recorded log-probabilities. With ``pipeline`` off (synchronous), the driver asks one
collector at a time, in turn, with the newest weights: no lag, and with one collector the run
is the in-process trainer's, update for update (its engines and its sampling are seeded the
same way).

**Faults.** A collector that dies (its process killed, its node lost) is restarted by Ray
(``max_restarts=-1``); the rollout it was working on is dropped, never half-used, and said on
stderr; the driver asks the restarted actor again. The learner's state is the checkpoint's: a
driver killed between checkpoints resumes from the last one with ``--resume``, and the
samples counted are the checkpoint's.
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.experiments.common.runs import sigterm_kept
from dragons_egg.experiments.training.settings import ray_available

#: Seed offset between collectors: collector ``k`` seeds its engines with ``seed + updates +
#: k * COLLECTOR_STRIDE`` (collector 0 is the in-process trainer's collector).
COLLECTOR_STRIDE = 1_000_003


def collector_seed(seed: int, updates: int, index: int) -> int:
    """The seed of collector ``index``'s engines and seat draws, for a run at ``updates``."""
    return seed + updates + index * COLLECTOR_STRIDE


def acting_seed(seed: int, updates: int, index: int) -> int:
    """The seed of collector ``index``'s action sampling, for a run at ``updates``."""
    return collector_seed(seed, updates, index) + 7_777_777


def ray_init_kwargs(address: str | None, num_cpus: int | None = None) -> dict[str, Any]:
    """``ray.init`` arguments: join ``address`` (``auto``, or ``HOST:PORT``) when given, else
    start a private local instance (``address="local"``: Ray neither reads ``RAY_ADDRESS`` nor
    the address file that a cluster running on this machine, or one killed, leaves; so
    ``num_cpus`` is allowed)."""
    if address:
        return {"address": address, "include_dashboard": False, "log_to_driver": False}
    return {"address": "local", "num_cpus": num_cpus, "include_dashboard": False,
            "log_to_driver": False}


#: The collectors of ``--collectors -1`` (auto) where Ray and a second core are there.
AUTO_COLLECTORS = 1


def resolve_collectors(collectors: int, address: str = "") -> int:
    """The collectors a run uses: ``collectors`` when given (>= 0); for ``-1`` (auto), the
    fastest placement measured on this kind of machine (``results/train-bench``: one
    pipelined collector, ahead of two and of the in-process trainer on one or two threads)
    when Ray is installed and there is a second core (or a cluster to join), else collection
    in the learner's process. One collector feeds a learner of about six cores (the measured
    parts: ``docs/training.md``)."""
    if collectors >= 0:
        return collectors
    if ray_available() and (address or (os.cpu_count() or 1) >= 2):
        return AUTO_COLLECTORS
    return 0


def model_weights(model: Any) -> dict[str, np.ndarray]:
    """The network's parameters as numpy arrays (what a collector loads)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


class CollectorWorker:
    """One collector, run as a Ray actor by :class:`RayCollection` (a plain class, so that it
    can be tested without Ray). ``config`` is the run's settings as a dict."""

    def __init__(self, config: dict[str, Any], index: int, updates: int,
                 in_ray: bool = False) -> None:
        from dragons_egg.experiments.training.network import build_network
        from dragons_egg.experiments.training.rollout import ActingPolicy, Collector
        from dragons_egg.experiments.training.settings import SelfPlayConfig, league_fns

        cfg = SelfPlayConfig.from_dict(config)
        import torch

        torch.set_num_threads(1)
        self.cfg = cfg
        self.index = index
        #: Run as a Ray actor (its node is then said with each rollout).
        self.in_ray = in_ray
        self.collector = Collector(cfg, collector_seed(cfg.seed, updates, index))
        self.policy = ActingPolicy(build_network(cfg), acting_seed(cfg.seed, updates, index))
        self.agent_fns = league_fns(cfg)
        self.snap_fns: list[Any] = []
        self.league_version = -1
        self.started = False

    def set_league(self, version: int, snapshots: list[tuple[str, bytes]]) -> None:
        """The league's snapshots (file name and the bytes of a policy file), as the driver has
        them at ``version``."""
        from dragons_egg.agents.netpolicy import load_policy_file
        from dragons_egg.experiments.training.rollout import snapshot_fns

        policies = []
        # read through a folder that is gone when they are read: an actor ends by ray.kill,
        # which runs no finalizer, so a folder kept for its life would stay behind in /tmp
        with tempfile.TemporaryDirectory(prefix="dragons-egg-league-") as folder:
            for name, data in snapshots:
                path = Path(folder) / Path(name).name
                path.write_bytes(data)
                policies.append(load_policy_file(path))
        self.snap_fns = snapshot_fns(policies)
        self.collector.league_size = len(policies) + len(self.agent_fns)
        self.league_version = version

    def collect(self, weights: dict[str, np.ndarray], league: tuple[int, list[Any]]
                ) -> tuple[Any, dict[str, Any]]:
        """One rollout with these weights and this league: the rollout and its figures (the
        collector's busy seconds, its index, node and process)."""
        t0 = time.perf_counter()
        if league[0] != self.league_version:
            self.set_league(*league)
        if not self.started:  # the first matches have a league too, as in the driver
            self.collector.start()
            self.started = True
        self.policy.load(weights)
        ro, figures = self.collector.collect(self.policy.act, self.snap_fns + self.agent_fns,
                                             self.policy.value, self.policy)
        info: dict[str, Any] = figures  # the collector's figures, then where it ran
        info.update(collect_s=time.perf_counter() - t0, collector=self.index, pid=os.getpid(),
                    node=_node_id() if self.in_ray else "")
        return ro, info


def _node_id() -> str:
    """The Ray node this actor runs on."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


class RayCollection:
    """The driver's side: ``n`` collector actors on a private local Ray instance, or on the
    cluster at ``address``; :meth:`next_rollout` hands out rollouts, pipelined or in turn."""

    def __init__(self, config: dict[str, Any], n: int, updates: int, *, address: str = "",
                 pipeline: bool = True) -> None:
        if not address and "ray" not in sys.modules:
            # a private instance serves this machine only: Ray then takes 127.0.0.1 as the
            # node's address, not the machine's network one (read when ray is imported)
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray

        self.ray = ray
        self.owns_ray = not ray.is_initialized()
        if self.owns_ray:
            # a private instance has room for every collector (one CPU each), even past the
            # machine's cores, so that none waits for a slot that never frees
            cpus = max(os.cpu_count() or 1, n)
            with sigterm_kept():  # ray.init's own handler would exit without a checkpoint
                ray.init(**ray_init_kwargs(address or None, None if address else cpus))
        worker = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0)(CollectorWorker)
        # Any: Ray types an actor's methods as the plain functions, without their .remote
        self.actors: list[Any] = [
            worker.options(scheduling_strategy="SPREAD").remote(config, k, updates, True)
            for k in range(n)]
        self.pipeline = pipeline
        self.inflight: collections.deque[tuple[int, Any, int]] = collections.deque()
        self.turn = 0
        self.version = 0          # the learner's weights version (its updates this session)
        self._weights: Any = None
        self._league: Any = None
        self._league_version = -1
        #: Rollouts dropped because their collector died.
        self.dropped = 0
        #: Collectors that died and have not sent a rollout since (Ray is restarting them).
        self.restarting: set[int] = set()
        #: The nodes and processes the rollouts came from.
        self.nodes: set[str] = set()
        self.pids: set[int] = set()
        #: Each collector's node, once it has sent a rollout; the driver's node.
        self.node_of: dict[int, str] = {}
        self.here = str(ray.get_runtime_context().get_node_id())

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """The learner's new weights (after an update): one ``ray.put``, sent by reference."""
        self.version += 1
        self._weights = self.ray.put(weights)

    def set_league(self, snapshots: list[str]) -> None:
        """The league's snapshot files as they are now (after a change): read once, sent by
        reference under a new version, which a collector loads once."""
        self._league_version += 1
        payload = (self._league_version, [(p, Path(p).read_bytes()) for p in snapshots])
        self._league = self.ray.put(payload)

    def _submit(self, k: int) -> None:
        ref = self.actors[k].collect.remote(self._weights, self._league)
        self.inflight.append((k, ref, self.version))

    def next_rollout(self) -> tuple[Any, dict[str, Any]]:
        """The next rollout and its figures, ``lag`` (the learner's updates since the weights
        it was collected with) and ``wait_s`` (how long the learner waited for it) among
        them. A collector that died is asked again once Ray has restarted it; its rollout is
        dropped and said."""
        from ray.exceptions import RayActorError

        t0 = time.perf_counter()
        while True:
            if self.pipeline:
                busy = {k for k, _, _ in self.inflight}
                for k in range(len(self.actors)):
                    if k not in busy:
                        self._submit(k)
            else:
                self._submit(self.turn)
                self.turn = (self.turn + 1) % len(self.actors)
            k, ref, version = self.inflight.popleft()
            try:
                ro, info = self.ray.get(ref)
            except RayActorError as exc:
                if k in self.restarting:  # asked again while Ray brings it back: wait
                    time.sleep(0.5)
                    continue
                self.restarting.add(k)
                self.dropped += 1
                sys.stderr.write(f"collector {k} died ({type(exc).__name__}); the rollout it "
                                 "was collecting is dropped and Ray restarts it\n")
                sys.stderr.flush()
                continue
            self.restarting.discard(k)
            if self.pipeline:
                self._submit(k)  # the next one, with the weights as they are before the update
            self.node_of[k] = info["node"]
            self.nodes.add(info["node"])
            self.pids.add(info["pid"])
            info.update(lag=self.version - version, wait_s=time.perf_counter() - t0)
            return ro, info

    def busy_here(self) -> int:
        """How many collectors on the driver's machine (or not yet known to be elsewhere) are
        working on a rollout now: the cores they hold."""
        refs = [ref for k, ref, _ in self.inflight if self.node_of.get(k, self.here) == self.here]
        if not refs:
            return 0
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        return len(refs) - len(ready)

    def close(self) -> None:
        """Stop the actors, and the private Ray instance if this started it."""
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - an actor already gone
                pass
        self.actors = []
        self.inflight.clear()
        if self.owns_ray:
            self.ray.shutdown()


__all__ = ["CollectorWorker", "RayCollection", "acting_seed", "collector_seed",
           "model_weights", "ray_available", "ray_init_kwargs", "resolve_collectors"]
