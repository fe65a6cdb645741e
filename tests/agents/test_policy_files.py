"""Policy files (.npz) are safe to take from others and damage does not go unnoticed: nothing
is unpickled, every member's header is checked before any array is read (an oversized or
mismatched member is refused, not allocated), the digest a file records is checked, and weights
that are not finite are refused; every refusal is one line naming the file (issue 22)."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from support import SHIPPED_V4

from dragons_egg.agents import AgentSpecError, make_agent, parse_spec
from dragons_egg.agents import netpolicy as NP
from dragons_egg.agents.netpolicy import NetPolicy, PolicyFileError, load_policy_file
from dragons_egg.agents.ppo import SHIPPED
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.observation import layout


def _policy(hidden: int = 8, max_players: int = 4) -> NetPolicy:
    rng = np.random.default_rng(0)
    size = layout(max_players).size

    def w(*shape: int) -> np.ndarray:
        return rng.normal(size=shape).astype(np.float32)

    return NetPolicy([(w(size, hidden), w(hidden))], (w(hidden, NUM_ACTIONS), w(NUM_ACTIONS)),
                     (w(hidden, 1), w(1)), {"max_players": max_players})


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _meta(path: Path) -> dict:
    return json.loads(bytes(_arrays(path)["meta"]).decode())


def _rewrite(path: Path, arrays: dict[str, np.ndarray], meta: dict | None = None) -> Path:
    """``path`` written again with ``arrays`` (and ``meta``), as np.savez writes a file."""
    arrays = dict(arrays)
    if meta is not None:
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez_compressed(path, **arrays)
    return path


def _one_line(exc: pytest.ExceptionInfo[BaseException], path: Path) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg, msg
    return msg


@pytest.fixture(autouse=True)
def _no_cache():
    NP._CACHE.clear()
    yield
    NP._CACHE.clear()


def test_a_saved_policy_records_a_digest_that_loading_checks(tmp_path):
    path = _policy().save(tmp_path / "p.npz")
    meta = _meta(path)
    assert meta["digest"].startswith("sha256:") and len(meta["digest"]) == 7 + 64
    loaded = load_policy_file(path)
    np.testing.assert_array_equal(loaded.layers[0][0], _policy().layers[0][0])
    assert NP.policy_digest(_arrays(path), meta) == meta["digest"]
    # saved again (as ship does), the digest follows the new metadata
    loaded.meta = {**loaded.meta, "provenance": {"note": "shipped"}}
    again = load_policy_file(loaded.save(tmp_path / "q.npz"))
    assert again.meta["provenance"] == {"note": "shipped"}


@pytest.mark.parametrize("change", ["weight", "metadata"])
def test_an_altered_policy_is_refused(tmp_path, change):
    path = _policy().save(tmp_path / "p.npz")
    arrays, meta = _arrays(path), _meta(path)
    if change == "weight":
        arrays["w0"] = arrays["w0"].copy()
        arrays["w0"][3, 2] += 1.0  # a valid file (fresh zip CRCs), other weights
    else:
        meta["max_players"] = 4  # unchanged ...
        meta["hidden"] = [9]     # ... but the record is not what was saved
    _rewrite(path, {k: v for k, v in arrays.items() if k != "meta"}, meta)
    with pytest.raises(PolicyFileError) as exc:
        load_policy_file(path)
    assert "is damaged or was altered: its arrays do not match the digest it records" in \
        _one_line(exc, path)


def test_files_written_before_the_digest_load_unchecked(tmp_path):
    # the agent shipped before this one was written before digests; the shipped one has its own
    assert "digest" not in load_policy_file(SHIPPED_V4).meta
    assert "digest" in load_policy_file(SHIPPED).meta
    path = _policy().save(tmp_path / "p.npz")
    meta = {k: v for k, v in _meta(path).items() if k != "digest"}
    _rewrite(path, {k: v for k, v in _arrays(path).items() if k != "meta"}, meta)
    assert load_policy_file(path).max_players == 4


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused_when_read_and_when_written(tmp_path, bad):
    policy = _policy()
    policy.pi[1][5] = bad
    with pytest.raises(ValueError, match="its array pi_b holds values that are not finite"):
        policy.save(tmp_path / "refused.npz")
    assert not (tmp_path / "refused.npz").exists()
    # a file written without the check (an older writer, or by hand) plays nothing
    path = _policy().save(tmp_path / "p.npz")
    arrays = _arrays(path)
    meta = {k: v for k, v in _meta(path).items() if k != "digest"}
    arrays["pi_b"] = arrays["pi_b"].copy()
    arrays["pi_b"][5] = bad
    _rewrite(path, {k: v for k, v in arrays.items() if k != "meta"}, meta)
    with pytest.raises(PolicyFileError) as exc:
        load_policy_file(path)
    assert _one_line(exc, path).endswith("its array pi_b holds values that are not finite "
                                         "(NaN or infinity); a policy's weights are finite")
    for spec in (f"ppo:path={path}", f"net:path={path}"):
        with pytest.raises(AgentSpecError, match="holds values that are not finite"):
            make_agent(spec, seed=0)


def _reads(monkeypatch) -> list[tuple[int, ...]]:
    """The shapes of the arrays numpy reads from now on."""
    seen: list[tuple[int, ...]] = []
    real = np.lib.format.read_array

    def spy(fp, *args, **kwargs):
        a = real(fp, *args, **kwargs)
        seen.append(a.shape)
        return a
    monkeypatch.setattr(np.lib.format, "read_array", spy)
    return seen


def _npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _with_member(path: Path, name: str, content: bytes, claim_size: int | None = None) -> Path:
    """``path`` with its member ``name`` replaced by ``content`` (deflated); with
    ``claim_size`` the zip records that uncompressed size for it (as a small file that
    expands to a huge array does), in its local header and its central directory."""
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    members[name] = content
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in members.items():
            z.writestr(k, v)
    if claim_size is not None:
        raw = bytearray(path.read_bytes())
        with zipfile.ZipFile(path) as z:
            info = z.getinfo(name)
        struct.pack_into("<I", raw, info.header_offset + 22, claim_size)
        cd = raw.index(b"PK\x01\x02")
        while True:
            n = struct.unpack_from("<H", raw, cd + 28)[0]
            if raw[cd + 46:cd + 46 + n] == name.encode():
                struct.pack_into("<I", raw, cd + 24, claim_size)
                break
            cd = raw.index(b"PK\x01\x02", cd + 1)
        path.write_bytes(raw)
    return path


def test_a_small_file_that_declares_a_huge_array_is_refused_before_reading(tmp_path,
                                                                           monkeypatch):
    """The issue's 4 MB .npz that expands to a 4 GiB array: the header and the zip's record
    of the member's size agree on 4 GiB (less 1 MiB); it is refused from the header, nothing
    allocated."""
    size = layout(4).size
    shape = (size, (2**32 - 2**20) // (4 * size))
    header = _npy_header(shape)
    declared = len(header) + 4 * shape[0] * shape[1]
    assert 3 * 2**30 < declared < 2**32
    path = _with_member(_policy().save(tmp_path / "bomb.npz"), "w0.npy",
                        header + bytes(4096), claim_size=declared)
    assert path.stat().st_size < 2**20
    seen = _reads(monkeypatch)
    with pytest.raises(PolicyFileError) as exc:
        load_policy_file(path)
    msg = _one_line(exc, path)
    assert f"its arrays would take 4,095 MiB (the largest, w0, has shape {shape})" in msg
    assert msg.endswith("a policy file holds at most 256 MiB")
    assert shape not in seen and all(np.prod(s) < 10**6 for s in seen)


def test_a_member_larger_than_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    """An honest member (its bytes are there) that is over the limit."""
    monkeypatch.setattr(NP, "MAX_POLICY_BYTES", 2**20)
    path = _policy(hidden=1024).save(tmp_path / "big.npz")  # w0 alone is 1.2 MB
    seen = _reads(monkeypatch)
    with pytest.raises(PolicyFileError, match=r"its arrays would take \d MiB \(the largest, w0"):
        load_policy_file(path)
    assert (layout(4).size, 1024) not in seen


@pytest.mark.parametrize("member,content,needle", [
    ("w0.npy", _npy_header((435, 2**20)) + bytes(64),
     "member w0 declares an array of shape (435, 1048576) (float32, 1,824,522,240 bytes) but "
     "holds 64 bytes"),
    ("w0.npy", _npy_header((12, 8)) + bytes(4 * 96),
     "weight shapes do not fit observations of"),
    ("b0.npy", _npy_header((9,)) + bytes(4 * 9), "weight shapes do not fit observations of"),
    ("pi_b.npy", _npy_header((NUM_ACTIONS,), "|O"), "member pi_b holds Python objects"),
    ("v_b.npy", _npy_header((1,), "<U3") + bytes(12), "member v_b holds dtype <U3"),
    ("data", b"{}", "holds 'data', a Stable-Baselines3 checkpoint's 'data' entry"),
    ("notes.txt", b"hi", "holds 'notes.txt', no array of a policy file"),
    ("w1.npy", _npy_header((8, 8)) + bytes(4 * 64), "is incomplete: no b1"),
])
def test_a_mismatched_member_is_refused_before_reading(tmp_path, monkeypatch, member, content,
                                                       needle):
    path = _with_member(_policy().save(tmp_path / "p.npz"), member, content)
    seen = _reads(monkeypatch)
    with pytest.raises(PolicyFileError) as exc:
        load_policy_file(path)
    assert needle in _one_line(exc, path)
    assert all(len(s) == 1 and s[0] < 10**5 for s in seen)  # at most the meta record


def test_an_oversized_meta_record_is_refused_before_reading(tmp_path, monkeypatch):
    header = _npy_header((2**31,), "|u1")
    path = _with_member(_policy().save(tmp_path / "p.npz"), "meta.npy", header + bytes(16),
                        claim_size=len(header) + 2**31)
    seen = _reads(monkeypatch)
    with pytest.raises(PolicyFileError, match=r"no valid 'meta' record: an array of shape "
                                              r"\(2147483648,\) \(uint8\)"):
        load_policy_file(path)
    assert seen == []


class _Payload:
    """Unpickling it writes ``marker``: what a malicious file would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_a_policy_file_with_a_pickled_payload_never_runs_it(tmp_path):
    marker = tmp_path / "ran"
    path = _policy().save(tmp_path / "payload.npz")
    arrays = _arrays(path)
    arrays["pi_counts"] = np.array([_Payload(marker)], dtype=object)
    np.savez(path, **arrays)  # an object array: pickled
    with np.load(path, allow_pickle=True) as z:
        z["pi_counts"]  # the payload is live: unpickling it runs it
    assert marker.exists()
    marker.unlink()
    for spec in (f"ppo:path={path}", f"net:path={path}"):
        with pytest.raises(AgentSpecError, match="member pi_counts holds Python objects"):
            parse_spec(spec)
        with pytest.raises(AgentSpecError, match="holds Python objects"):
            make_agent(spec, seed=0)
    with pytest.raises(PolicyFileError):
        load_policy_file(path)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------
# Crafted meta records and weights (issue 47, 4): before, a meta nested 200,000 levels deep
# gave a RecursionError, "max_players": 1e999 an OverflowError, float64 weights of 1e300
# passed the finiteness check and became inf in float32, and finite weights whose logits
# overflow loaded fine (the agent then forfeited every match).

def _undigested(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    meta = {k: v for k, v in _meta(path).items() if k != "digest"}
    return {k: v for k, v in _arrays(path).items() if k != "meta"}, meta


def test_a_deeply_nested_meta_is_one_line(tmp_path):
    path = _policy().save(tmp_path / "p.npz")
    arrays, meta = _undigested(path)
    text = json.dumps(meta)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    arrays["meta"] = np.frombuffer(text.encode(), dtype=np.uint8)
    np.savez_compressed(path, **arrays)
    with pytest.raises(PolicyFileError, match="has no valid 'meta' record: .*recursion limit"
                       ) as exc:
        load_policy_file(path)
    _one_line(exc, path)


@pytest.mark.parametrize("value,needle", [
    (1e999, "max_players: Input should be a valid integer"),
    (9, "max_players: Input should be less than or equal to 8"),
    ("4", "max_players: Input should be a valid integer"),
])
def test_a_bad_max_players_is_named(tmp_path, value, needle):
    path = _policy().save(tmp_path / "p.npz")
    arrays, meta = _undigested(path)
    text = json.dumps({**meta, "max_players": 0}).replace('"max_players": 0',
                                                          f'"max_players": {json.dumps(value)}'
                                                          if value != 1e999 else
                                                          '"max_players": 1e999')
    arrays["meta"] = np.frombuffer(text.encode(), dtype=np.uint8)
    np.savez_compressed(path, **arrays)
    with pytest.raises(PolicyFileError, match=f"has a bad 'meta' record: {needle}") as exc:
        load_policy_file(path)
    _one_line(exc, path)


def test_float64_weights_past_float32_are_refused(tmp_path):
    path = _policy().save(tmp_path / "p.npz")
    arrays, meta = _undigested(path)
    arrays["pi_w"] = arrays["pi_w"].astype(np.float64)
    arrays["pi_w"][0, 0] = 1e300
    _rewrite(path, arrays, meta)
    with pytest.raises(PolicyFileError, match="its array pi_w holds values past float32's "
                                              "range") as exc:
        load_policy_file(path)
    _one_line(exc, path)


def test_weights_whose_logits_overflow_are_refused(tmp_path):
    """Finite weights (3e38 fits float32) whose products overflow on real observations: a
    constant hidden layer (tanh(1) in each of 8 units) times 3e38 is past float32's range."""
    path = _policy().save(tmp_path / "p.npz")
    arrays, meta = _undigested(path)
    arrays["w0"] = np.zeros_like(arrays["w0"])
    arrays["b0"] = np.ones_like(arrays["b0"])
    arrays["pi_w"] = np.full_like(arrays["pi_w"], 3e38)
    _rewrite(path, arrays, meta)
    with pytest.raises(PolicyFileError, match="its logits or values overflow on a probe "
                                              "batch") as exc:
        load_policy_file(path)
    _one_line(exc, path)
    with pytest.raises(AgentSpecError, match="overflow on a probe batch"):
        make_agent(f"ppo:path={path}", seed=0)


def test_the_probe_batch_is_real_decisions():
    obs, mask = NP.probe_batch(4)
    assert obs.shape == (18, layout(4).size) and mask.shape == (18, NUM_ACTIONS)
    assert (mask.sum(axis=1) >= 1).all()
    # the shipped policy plays them
    assert np.isfinite(load_policy_file(SHIPPED).logits(*NP.probe_batch(8))[
        NP.probe_batch(8)[1].astype(bool)]).all()
