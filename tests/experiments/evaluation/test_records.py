"""Per-match lines checked before any work (issue 47, 4; tournament/records.py).

Before the schema, a ``--resume`` accepted a line with a string or NaN score, junk rounds or
string timings, played every remaining match, then crashed in the summary with a traceback and
no report; a list as ``sequence`` or deep nesting gave a raw ``TypeError`` or
``RecursionError``; a line with altered scores was accepted and the report showed the forged
numbers. Each case below is now refused by file and line, before a match is played."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from dragons_egg.experiments.evaluation.tournament import (
    OutputError,
    TournamentConfig,
    read_result_lines,
    run_tournament,
)
from dragons_egg.experiments.evaluation.tournament.records import (
    MAX_DEPTH,
    RecordError,
    line_digest,
    parse_line,
)

ROOT = Path(__file__).resolve().parents[3]


def small_run(out: Path) -> TournamentConfig:
    """A finished 8-match, 2-player tournament in ``out``."""
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=8,
                          num_rounds=1, seed=4, bootstrap=100, out_dir=str(out))
    run_tournament(tc, progress=False)
    return tc


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x]


def write(path: Path, rows: list) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def resigned(r: dict) -> dict:
    """``r`` with a digest of its (edited) content, what a careful editor would write (none
    where the content is not JSON, such as a NaN)."""
    try:
        return {**r, "digest": line_digest(r)}
    except ValueError:
        return r


def edits():
    """(name, edit of line 2, what the refusal says)."""
    return [
        ("string score", lambda r: {**r, "scores": ["1", -1.0]}, "scores.0: Input should be"),
        ("NaN score", lambda r: {**r, "scores": [float("nan"), 0.0]}, "scores.0: Input should"),
        ("junk rounds", lambda r: {**r, "rounds": "junk"}, "rounds: Input should be a valid"),
        ("string timing", lambda r: {**r, "seconds": "fast"}, "seconds: Input should be"),
        ("list as sequence", lambda r: {**r, "sequence": [0]}, "sequence: Input should be"),
        ("scores not summing", lambda r: {**r, "scores": [5.0, -1.0]},
         "score 5.0 is not the sum of its rounds' rewards"),
        ("an unknown field", lambda r: {**r, "cheat": 1}, "cheat: Extra inputs are not"),
    ]


@pytest.mark.parametrize("name,edit,needle", edits(), ids=[e[0] for e in edits()])
def test_a_bad_line_is_refused_by_line_before_any_match_is_played(tmp_path, name, edit,
                                                                  needle):
    out = tmp_path / "t"
    tc = small_run(out)
    rows = lines(out / "results.jsonl")[:3]
    rows[1] = resigned(edit(rows[1]))  # even with a digest that fits
    write(out / "results.jsonl", rows)
    before = (out / "results.jsonl").read_bytes()
    with pytest.raises(OutputError, match="results.jsonl line 2 is not a valid match record"
                       ) as exc:
        run_tournament(tc, progress=False, resume=True)
    assert needle in str(exc.value)
    assert (out / "results.jsonl").read_bytes() == before  # nothing played, nothing written


def test_an_edited_line_is_refused_by_its_digest(tmp_path):
    """Scores and rewards changed together (so the sums agree) without a new digest: the
    digest names the line."""
    out = tmp_path / "t"
    tc = small_run(out)
    rows = lines(out / "results.jsonl")
    r = rows[4]
    flip = [-s for s in r["scores"]]
    rows[4] = {**r, "scores": flip,
               "rounds": [{**rnd, "rewards": [-x for x in rnd["rewards"]]}
                          for rnd in r["rounds"]]}
    write(out / "results.jsonl", rows)
    with pytest.raises(OutputError, match=r"line 5 is damaged or was edited after it was "
                                          r"written: its digest does not match"):
        run_tournament(tc, progress=False, resume=True)
    with pytest.raises(OutputError, match="line 5 is damaged"):  # every reader checks
        read_result_lines(out)


def test_a_removed_digest_is_refused(tmp_path):
    out = tmp_path / "t"
    tc = small_run(out)
    rows = lines(out / "results.jsonl")
    rows[3].pop("digest")
    write(out / "results.jsonl", rows)
    with pytest.raises(OutputError, match="line 4 has no digest, while line 1 has one"):
        run_tournament(tc, progress=False, resume=True)


def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path):
    out = tmp_path / "t"
    tc = small_run(out)
    rows = lines(out / "results.jsonl")[:2]
    deep = json.dumps(rows[1])[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    write(out / "results.jsonl", [rows[0], deep])
    with pytest.raises(OutputError, match=f"line 2 nests deeper than {MAX_DEPTH} levels"):
        run_tournament(tc, progress=False, resume=True)


def test_every_committed_record_passes_the_schema():
    """The schema refuses nothing a tournament wrote: every line of every results file kept
    in results/ (121,810 lines when this was written; the oldest have no ``think``,
    ``choices``, ``sitting`` or ``digest``)."""
    files = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    n = 0
    for f in files:
        if f.endswith("results.jsonl.gz"):
            data = gzip.decompress((ROOT / f).read_bytes())
        elif f.endswith("results.jsonl"):
            data = (ROOT / f).read_bytes()
        else:
            continue
        for i, line in enumerate(data.split(b"\n"), 1):
            if line.strip():
                parse_line(line, f"{f} line {i}")
                n += 1
    assert n > 100_000


def test_parse_line_names_where():
    with pytest.raises(RecordError, match=r"^here line 7 is not a valid match record"):
        parse_line(b'{"sequence": 0}', "here line 7")
