"""The size-embedding lever of issue 49 (``ppo.size_embedding``, ``--size-embedding``): a learned
vector per table size added to the first layer's pre-activation. The trainer learns it, the
policy file carries it as the head ``size_embedding`` (``size_emb``), numpy plays exactly what
torch trained, a damaged or misnamed array is refused, a resume cannot switch it, and with it
off the network is the one of before."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny  # noqa: E402

from dragons_egg.agents.heads import SIZE_EMBEDDING, table_size  # noqa: E402
from dragons_egg.agents.netpolicy import (  # noqa: E402
    NetPolicy,
    PolicyFileError,
    load_policy_file,
    probe_batch,
)
from dragons_egg.experiments.training import selfplay  # noqa: E402
from dragons_egg.experiments.training.network import build_network  # noqa: E402
from dragons_egg_env.config import TABLE_SIZES  # noqa: E402


def test_a_run_learns_the_embedding_and_numpy_plays_what_torch_trained(tmp_path):
    import torch

    cfg = tiny(tmp_path, run_name="emb", size_embedding=True, hidden=(16, 8),
               total_samples=144 * 4, max_players=4)
    run = selfplay.Run(cfg)
    final = run.train()
    model = run.learner.model
    emb = model.size_emb.detach().numpy()
    # trained at 2 and 3 players: those rows moved from their zeros, the others did not
    assert np.abs(emb[:2]).max() > 0 and not emb[2:].any()
    pol = load_policy_file(final)
    assert SIZE_EMBEDDING in pol.heads and np.array_equal(pol.size_emb, emb)
    obs, mask = probe_batch(4)
    assert sorted(set(table_size(obs, 4))) == [2, 3, 4]
    with torch.no_grad():
        logits, value = model(torch.from_numpy(obs), torch.from_numpy(mask.astype(bool)))
    legal = mask.astype(bool)
    assert np.allclose(pol.logits(obs, mask)[legal], logits.numpy()[legal], atol=1e-4)
    assert np.allclose(pol.value(obs), value.numpy(), atol=1e-5)
    # the embedding is what differs between sizes: without it the logits of the 2-player rows
    # are not the network's
    plain = NetPolicy(pol.layers, pol.pi, pol.v, pol.meta)
    two = table_size(obs, 4) == 2
    assert not np.allclose(plain.logits(obs[two], mask[two])[legal[two]],
                           pol.logits(obs[two], mask[two])[legal[two]], atol=1e-6)


def test_off_the_network_is_the_one_of_before(tmp_path):
    import torch

    on = tiny(tmp_path, run_name="on", size_embedding=True)
    off = dataclasses.replace(on, ppo=dataclasses.replace(on.ppo, size_embedding=False))
    torch.manual_seed(3)
    a = build_network(on)
    torch.manual_seed(3)
    b = build_network(off)
    sa, sb = a.state_dict(), b.state_dict()
    assert set(sa) - set(sb) == {"size_emb"} and not sa["size_emb"].any()
    assert all(torch.equal(sa[k], sb[k]) for k in sb)


def test_a_policy_file_with_a_bad_embedding_is_refused_by_name(tmp_path):
    cfg = tiny(tmp_path, run_name="emb", size_embedding=True, total_samples=144)
    pol = load_policy_file(selfplay.Run(cfg).train())
    with pytest.raises(ValueError, match="size_emb is there exactly when the heads name"):
        NetPolicy(pol.layers, pol.pi, pol.v, pol.meta, size_emb=pol.size_emb)
    with pytest.raises(ValueError, match=r"size_emb has shape \(7, 3\)"):
        NetPolicy(pol.layers, pol.pi, pol.v, pol.meta, heads=[SIZE_EMBEDDING],
                  size_emb=np.zeros((len(TABLE_SIZES), 3), np.float32))
    # a file whose heads do not name the array it holds, or name one it lacks
    src = pol.save(tmp_path / "emb.npz")
    meta = json.loads(np.load(src)["meta"].tobytes())
    for heads, drop, needle in (([], "", "holds 'size_emb', which its heads"),
                                ([SIZE_EMBEDDING], "size_emb.npy", "is incomplete: no size_emb")):
        bad = rewritten(src, tmp_path / "bad.npz", {**meta, "heads": heads}, drop)
        with pytest.raises(PolicyFileError, match=needle):
            load_policy_file(bad)


def rewritten(src, dst, meta, drop=""):
    """``src`` with another ``meta`` (and no digest, as files before 0.3.0), without ``drop``."""
    meta = {k: v for k, v in meta.items() if k != "digest"}
    out = io.BytesIO()
    np.save(out, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as w:
        for name in z.namelist():
            if name not in ("meta.npy", drop):
                w.writestr(name, z.read(name))
        w.writestr("meta.npy", out.getvalue())
    return dst


def test_a_resume_cannot_switch_it(tmp_path, capsys):
    cfg = tiny(tmp_path, run_name="r", size_embedding=True, total_samples=144)
    run = selfplay.Run(cfg)
    run.train()
    ckpt = run.dir / "checkpoints" / "latest.pt"
    again = selfplay.Run(dataclasses.replace(cfg, total_samples=288), resume=str(ckpt))
    assert np.array_equal(again.learner.model.size_emb.detach().numpy(),
                          run.learner.model.size_emb.detach().numpy())
    capsys.readouterr()
    with pytest.raises(SystemExit):
        selfplay.parse_args(["--resume", str(ckpt), "--no-size-embedding"])
    assert "--size-embedding" in capsys.readouterr().err
