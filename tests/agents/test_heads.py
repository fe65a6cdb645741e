"""Policy-file heads (issue 23): the extra logit terms a file names in ``meta["heads"]``, their
feature functions (``dragons_egg.agents.heads``), and the files written before heads were
named (versions 1 to 4), which load and play exactly as before."""

import hashlib
import json
import random

import numpy as np
import pytest
from support import (
    SHIPPED_V4,
    random_states,
    small_policy,
    tribute_state,  # noqa: E402
)

from dragons_egg.agents import make_agent
from dragons_egg.agents.heads import (
    COUNT_FEATURES,
    HEADS,
    SIZED_TRIBUTE_FEATURES,
    TRIBUTE_FEATURES,
    count_features,
    sized_tribute_features,
    tribute_context,
    tribute_features,
    tribute_row,
)
from dragons_egg.agents.netpolicy import (
    NetPolicy,
    PolicyFileError,
    load_policy_file,
    policy_digest,
)
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, NUM_ACTIONS, PASS
from dragons_egg_env.cards import BEAST
from dragons_egg_env.config import TABLE_SIZES, RulesConfig
from dragons_egg_env.observation import OBS_PHASES, Encoder, layout


def test_count_features_one_hot_counts_of_each_number():
    obs = np.zeros(layout(8).size, np.float32)
    obs[[0, 1, 2]] = 1          # three 1s
    obs[36] = 1                 # one 10
    obs[BEAST] = 1              # a dragon card is no number
    f = count_features(obs).reshape(10, 5)
    assert f[0, 3] == 1 and f[9, 1] == 1 and f[4, 0] == 1
    assert f.sum() == 10 and count_features(np.stack([obs, obs])).shape == (2, COUNT_FEATURES)


def _observe(s, seat):
    return Encoder(s.config.num_players, 8, s.config.num_rounds).encode(s, seat)


def test_tribute_context_follows_the_asks_and_their_hits():
    """R31/R32: context 0 before the first ask, 1 after a miss, 2 after a hit; 3 in the
    give-back (R33) and in play. Features: the group counts in the context's block only."""
    hit_seen = miss_seen = False
    for seed in range(40):
        s = tribute_state(seed=seed)
        dragon, payer = s.current, s.victim
        assert tribute_context(_observe(s, dragon), 8) == 0
        asks = [c for c in range(44) if not s.hands[dragon] >> c & 1]
        held = [c for c in asks if s.hands[payer] >> c & 1]
        missed = [c for c in asks if not s.hands[payer] >> c & 1]
        if seed % 2:  # a miss
            held = []
        E.step(s, ASK_BASE + (held or missed)[0])
        if s.phase == E.Phase.ASK:
            ctx = int(tribute_context(_observe(s, dragon), 8))
            assert ctx == (2 if held else 1)
            hit_seen |= bool(held)
            miss_seen |= not held
            f = tribute_features(_observe(s, dragon), 8).reshape(4, 11, 5)
            assert f.sum() == 11 and f[ctx].sum() == 11
            dragons = sum(s.hands[dragon] >> c & 1 for c in range(40, 44))
            assert f[ctx, 10, dragons] == 1
            E.step(s, PASS)
        if held:
            assert s.phase == E.Phase.GIVE
            assert tribute_context(_observe(s, dragon), 8) == 3
    assert hit_seen and miss_seen
    play = np.zeros(layout(8).size, np.float32)
    play[layout(8).field("phase").start + OBS_PHASES.index(E.Phase.PLAY)] = 1
    assert tribute_context(play, 8) == 3


def _with_counts(tmp_path, head: str, name: str):
    """A small policy, the same with a random ``pi_counts`` for the head ``head`` saved as
    ``name``, and observations and all-legal masks to compare their logits on."""
    base = load_policy_file(small_policy(tmp_path / "p.npz"))
    rows = HEADS[head].rows
    counts = np.random.default_rng(1).normal(size=(rows, NUM_ACTIONS)).astype(np.float32)
    path = NetPolicy(base.layers, base.pi, base.v, base.meta, counts,
                     heads=[head]).save(tmp_path / name)
    obs = np.random.default_rng(2).integers(0, 2, (5, layout(8).size)).astype(np.float32)
    return base, counts, path, obs, np.ones((5, NUM_ACTIONS), bool)


def test_the_tribute_head_round_trips(tmp_path):
    base, counts, p3, obs, mask = _with_counts(tmp_path, "tribute", "v3.npz")
    again = load_policy_file(p3)
    assert again.meta["version"] == 5 and again.meta["heads"] == ["tribute"]
    assert again.heads == ("tribute",)
    np.testing.assert_allclose(again.logits(obs, mask),
                               base.logits(obs, mask) + tribute_features(obs, 8) @ counts,
                               rtol=1e-5, atol=1e-5)
    # a counts-sized term in a file whose head is tribute is refused
    with np.load(p3) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["pi_counts"] = arrays["pi_counts"][:COUNT_FEATURES]
    np.savez(tmp_path / "mixed.npz", **arrays)
    with pytest.raises(PolicyFileError, match="shapes"):
        load_policy_file(tmp_path / "mixed.npz")
    # a term of another size than its head's is refused when it is made, by name; so is
    # a term no head names
    with pytest.raises(ValueError, match="pi_counts has shape .* the head 'tribute' needs"):
        NetPolicy(base.layers, base.pi, base.v, base.meta, counts[:30], heads=["tribute"])
    with pytest.raises(ValueError, match="pi_counts needs an additive head"):
        NetPolicy(base.layers, base.pi, base.v, base.meta, counts)


def test_the_tribute_by_size_head_treats_each_table_size_apart(tmp_path):
    base = load_policy_file(small_policy(tmp_path / "p.npz"))
    rng = np.random.default_rng(3)
    counts = rng.normal(size=(SIZED_TRIBUTE_FEATURES, NUM_ACTIONS)).astype(np.float32)
    gate = (rng.random((len(TABLE_SIZES), NUM_ACTIONS)) < 0.5).astype(np.float32)
    obs = rng.integers(0, 2, (14, layout(8).size)).astype(np.float32)
    seats = layout(8).field("seat_present")
    obs[:, seats.start:seats.start + seats.size] = 0.0
    sizes = np.tile(np.array(TABLE_SIZES), 2)
    for i, n in enumerate(sizes):
        obs[i, seats.start:seats.start + n] = 1.0
    feats = sized_tribute_features(obs, 8).reshape(14, len(TABLE_SIZES), TRIBUTE_FEATURES)
    for i, n in enumerate(sizes):  # the tribute features sit in the block of the table size
        k = TABLE_SIZES.index(n)
        np.testing.assert_array_equal(feats[i, k], tribute_features(obs[i], 8))
        assert not np.delete(feats[i], k, axis=0).any()
    path = NetPolicy(base.layers, base.pi, base.v, base.meta, counts, gate,
                     heads=["tribute_by_size", "gate"]).save(tmp_path / "v4")
    again = load_policy_file(path)
    assert again.meta["heads"] == ["tribute_by_size", "gate"]
    mask = np.ones((14, NUM_ACTIONS), bool)
    own = base.logits(obs, mask) * gate[sizes - TABLE_SIZES[0]]
    np.testing.assert_allclose(again.logits(obs, mask),
                               own + sized_tribute_features(obs, 8) @ counts,
                               rtol=1e-5, atol=1e-4)
    # an observation with no table size is refused by name, not read as another size
    empty = obs[:1].copy()
    empty[:, seats.start:seats.start + seats.size] = 0.0
    with pytest.raises(ValueError, match="seat_present"):
        again.logits(empty, mask[:1])
    # a gate without the tribute_by_size head, or of the wrong shape, is refused when made
    # and on load
    with pytest.raises(ValueError, match="the head 'gate' needs the head 'tribute_by_size'"):
        NetPolicy(base.layers, base.pi, base.v, base.meta, counts[:TRIBUTE_FEATURES],
                  gate, heads=["tribute", "gate"])
    with pytest.raises(ValueError, match="pi_gate needs the head 'gate'"):
        NetPolicy(base.layers, base.pi, base.v, base.meta, counts, gate,
                  heads=["tribute_by_size"])
    with pytest.raises(ValueError, match="pi_gate has shape"):
        NetPolicy(base.layers, base.pi, base.v, base.meta, counts,
                  gate[:3], heads=["tribute_by_size", "gate"])
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    for key, value, message in (("pi_gate", gate[:, :10], "shapes"),
                                ("pi_counts", counts[:TRIBUTE_FEATURES], "shapes")):
        np.savez(tmp_path / "bad.npz", **{**arrays, key: value})
        with pytest.raises(PolicyFileError, match=message):
            load_policy_file(tmp_path / "bad.npz")
    old = {k: v for k, v in again.meta.items() if k not in ("heads", "digest")}
    meta3 = json.dumps({**old, "version": 3}).encode()
    np.savez(tmp_path / "bad.npz", **{**arrays, "pi_counts": counts[:TRIBUTE_FEATURES],
                                      "meta": np.frombuffer(meta3, np.uint8)})
    with pytest.raises(PolicyFileError, match="only version 4"):
        load_policy_file(tmp_path / "bad.npz")


def test_the_counts_head_round_trips_and_is_checked(tmp_path):
    base, counts, p2, obs, mask = _with_counts(tmp_path, "counts", "v2.npz")
    again = load_policy_file(p2)
    assert again.meta["heads"] == ["counts"] and load_policy_file(tmp_path / "p.npz").heads == ()
    np.testing.assert_allclose(again.logits(obs, mask),
                               base.logits(obs, mask) + count_features(obs) @ counts, rtol=1e-5)
    # a wrong shape, the term in a file whose heads do not name it, or in an old file that
    # claims version 1, is refused
    with np.load(p2) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays["meta"]).decode())
    meta.pop("digest")
    np.savez(tmp_path / "bad.npz", **{**arrays, "pi_counts": counts[:, :10]})
    with pytest.raises(PolicyFileError, match="shapes"):
        load_policy_file(tmp_path / "bad.npz")
    for heads, needle in (([], r"holds 'pi_counts', which its heads \[\] do not use"),
                          (["tribute"], "shapes"), (["gate"], "needs the head"),
                          (["wings"], "unknown head 'wings'")):
        named = np.frombuffer(json.dumps({**meta, "heads": heads}).encode(), np.uint8)
        np.savez(tmp_path / "bad.npz", **{**arrays, "meta": named})
        with pytest.raises(PolicyFileError, match=needle):
            load_policy_file(tmp_path / "bad.npz")
    meta.pop("heads")
    arrays["meta"] = np.frombuffer(json.dumps({**meta, "version": 1}).encode(), np.uint8)
    np.savez(tmp_path / "v1.npz", **arrays)
    with pytest.raises(PolicyFileError, match="version 1 has no"):
        load_policy_file(tmp_path / "v1.npz")


def test_tribute_row_is_where_the_features_put_a_count():
    obs = np.zeros(layout(8).size, np.float32)
    obs[[0, 1]] = 1  # two 1s
    seats = layout(8).field("seat_present")
    obs[seats.start:seats.start + 5] = 1
    f = tribute_features(obs, 8)
    assert f[tribute_row("give", 0, 2)] == 1 and f[tribute_row(3, 0, 2)] == 1
    g = sized_tribute_features(obs, 8)
    assert g[tribute_row("give", 0, 2, players=5)] == 1 and g.sum() == f.sum() == 11


def _legacy(path, arrays, version):
    """``arrays`` written as the writer before heads wrote a version-``version`` file: its
    ``meta`` has ``version`` and a digest, no ``heads``."""
    meta = {"max_players": 8, "activation": "tanh", "format": "dragons-egg-policy",
            "version": version}
    meta["digest"] = policy_digest(arrays, meta)
    np.savez_compressed(path, **arrays,
                        meta=np.frombuffer(json.dumps(meta).encode(), np.uint8))
    return path


def _legacy_files(tmp_path):
    """Small files of versions 1 to 4 (the weights the before-and-after record used)."""
    rng = np.random.default_rng(7)
    size, h = layout(8).size, 16

    def w(*s):
        return rng.normal(0, 0.3, s).astype(np.float32)

    base = {"w0": w(size, h), "b0": w(h), "pi_w": w(h, NUM_ACTIONS), "pi_b": w(NUM_ACTIONS),
            "v_w": w(h, 1), "v_b": w(1)}
    files = {1: _legacy(tmp_path / "v1.npz", base, 1)}
    files[2] = _legacy(tmp_path / "v2.npz", {**base, "pi_counts": w(COUNT_FEATURES,
                                                                     NUM_ACTIONS)}, 2)
    files[3] = _legacy(tmp_path / "v3.npz", {**base, "pi_counts": w(TRIBUTE_FEATURES,
                                                                     NUM_ACTIONS)}, 3)
    gate = (rng.random((len(TABLE_SIZES), NUM_ACTIONS)) > 0.3).astype(np.float32)
    files[4] = _legacy(tmp_path / "v4.npz", {**base, "pi_counts": w(SIZED_TRIBUTE_FEATURES,
                                                                     NUM_ACTIONS),
                                             "pi_gate": gate}, 4)
    return files


def _states():
    """Observations (padded to 8 seats) of two random matches at every table size, by size."""
    out = {}
    for n in TABLE_SIZES:
        obs = []
        for seed in range(2):
            env = dragons_egg_v0.raw_env(num_players=n, max_players=8, num_rounds=2)
            env.reset(seed=seed)
            obs += [(o["observation"], o["action_mask"])
                    for _, o in random_states(env, random.Random(seed))]
        out[n] = obs
    return out


def _actions(spec, states):
    acts = []
    for n, obs in states.items():
        agent = make_agent(spec, seed=n)
        agent.start_match(0, RulesConfig(num_players=n), 8)
        acts += [agent.act(o, m) for o, m in obs]
    a = np.array(acts, np.int64)
    return len(a), hashlib.sha256(a.tobytes()).hexdigest()


#: The actions on :func:`_states` (2166 decisions), recorded with the code before heads were
#: named (the agents ppo and net as they were, on the same files): sha256 of the int64 array.
BEFORE = {
    ("ppo", "shipped", True): "898a1de190308f62d72e8df1716bbf336db41aace2a76b01c8682d604add0220",
    ("ppo", "shipped", False): "5c15d494ef94b8b1201790a2f0e034b2fa378db8caa4fee651d53459f9c706a6",
    ("net", 1, True): "b83e4348ef78479a91dfd6c5d7f59363f2dd372e6eed183c02aa914532c241b4",
    ("net", 3, True): "f79fd0378920d07a95e961e9527eb9d8abe5d546b512dee5098fbfc34aaba43b",
    ("ppo", 3, True): "f79fd0378920d07a95e961e9527eb9d8abe5d546b512dee5098fbfc34aaba43b",
}


def test_old_files_and_the_shipped_agent_play_exactly_as_before(tmp_path):
    files = _legacy_files(tmp_path)
    states = _states()
    for (kind, which, det), digest in BEFORE.items():
        path = SHIPPED_V4 if which == "shipped" else files[which]
        spec = f"{kind}:path={path},deterministic={str(det).lower()}"
        assert _actions(spec, states) == (2166, digest), spec
    assert load_policy_file(SHIPPED_V4).heads == ("tribute_by_size", "gate")
    assert [load_policy_file(files[v]).heads for v in (1, 2, 3, 4)] == [
        (), ("counts",), ("tribute",), ("tribute_by_size", "gate")]


def test_an_old_file_saved_again_names_its_heads_and_keeps_its_logits(tmp_path):
    obs = np.stack([o for n, s in _states().items() for o, _ in s[:40]])
    mask = np.ones((len(obs), NUM_ACTIONS), bool)
    for v, path in _legacy_files(tmp_path).items():
        old = load_policy_file(path)
        again = load_policy_file(old.save(tmp_path / f"again{v}.npz"))
        assert again.meta["version"] == 5 and tuple(again.meta["heads"]) == old.heads
        np.testing.assert_array_equal(again.logits(obs, mask), old.logits(obs, mask))
