"""The docs agree with the code: generated tables are fresh, rules.md covers every rule id and
flag, the flag metadata of ``docs.py`` matches ``config.py``, and the observation layout tiles."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from dragons_egg.experiments.tools import docs
from dragons_egg_env.actions import ACTION_RANGES, NUM_ACTIONS
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.observation import layout

DOCS_DIR = Path(__file__).resolve().parents[3] / "docs"
RULES_MD = DOCS_DIR / "rules.md"
RULE_IDS = [f"R{i}" for i in range(1, 35)]
FIELDS = RulesConfig.field_names()


@pytest.fixture(scope="module")
def rules_text() -> str:
    return RULES_MD.read_text(encoding="utf-8")


# -- generated files are in sync --------------------------------------------------------

@pytest.mark.parametrize("name, make", [
    ("actions.md", docs.actions_md),
    ("observation.md", docs.observation_md),
    ("flags.md", docs.flags_md),
])
def test_generated_file_in_sync(name, make):
    path = DOCS_DIR / name
    assert path.exists(), f"{path} is missing: run python -m dragons_egg.experiments.tools.docs"
    assert path.read_text(encoding="utf-8") == make(), \
        f"{path} is stale: run python -m dragons_egg.experiments.tools.docs"


def test_rule_flags_module_in_sync():
    path = docs.default_src_dir() / docs.RULE_FLAGS_MODULE
    assert path.read_text(encoding="utf-8") == docs.rule_flags_source(), \
        f"{path} is stale: run python -m dragons_egg.experiments.tools.docs"


def test_rule_flags_module_matches_rules_config():
    """The generated TypedDict has every RulesConfig field, in order, with its type (a Literal
    of the choices for a string flag) and, in the comment above it, its rule and default."""
    from dragons_egg_env._rule_flags import RuleFlags

    hints = typing.get_type_hints(RuleFlags)
    assert list(hints) == list(FIELDS) and RuleFlags.__required_keys__ == frozenset()
    field_types = typing.get_type_hints(RulesConfig)
    source = docs.rule_flags_source()
    for f in dataclasses.fields(RulesConfig):
        info = RulesConfig.flag_info(f.name)
        if info["kind"] == "str":
            assert hints[f.name] == typing.Literal[info["choices"]], f.name
            assert f.default in typing.get_args(hints[f.name])
        else:
            assert hints[f.name] is field_types[f.name], f.name
        default = f'"{f.default}"' if isinstance(f.default, str) else repr(f.default)
        block = source[:source.index(f"    {f.name}: ")].rsplit("\n\n", 1)[1]
        assert block.startswith(f"    #: {info['rule']}: ") and f"Default {default}" in \
            " ".join(line.removeprefix("    #: ") for line in block.splitlines()), f.name


def test_rule_flags_module_is_regenerated(tmp_path):
    docs_dir, src = tmp_path / "docs", tmp_path / "src"
    docs.write(docs_dir, src)
    module = src / docs.RULE_FLAGS_MODULE
    assert module.read_text(encoding="utf-8") == docs.rule_flags_source()
    module.write_text("old\n", encoding="utf-8")
    assert docs.stale_files(docs_dir, src) == [module]
    assert docs.write(docs_dir, src) == [module]
    assert docs.stale_files(docs_dir, src) == []


def test_annotation_source():
    assert docs.annotation_source(int) == "int"
    assert docs.annotation_source(typing.Literal["a", "b"]) == 'Literal["a", "b"]'
    with pytest.raises(ValueError):
        docs.annotation_source(list[int])


def test_rules_flags_block_in_sync(rules_text):
    assert rules_text.count(docs.FLAGS_START) == 1 and rules_text.count(docs.FLAGS_END) == 1
    assert docs.rules_flags_block() in rules_text, \
        "the flags table of docs/rules.md is stale: run python -m dragons_egg.experiments.tools.docs"
    assert docs.splice_rules(rules_text) == rules_text


def test_no_stale_files():
    assert docs.stale_files(DOCS_DIR) == []


def test_check_cli_passes_on_repo():
    proc = subprocess.run([sys.executable, "-m", "dragons_egg.experiments.tools.docs", "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_check_names_stale_file(tmp_path, capsys):
    for path, text in docs.generated(DOCS_DIR).items():
        (tmp_path / path.name).write_text(text, encoding="utf-8")
    assert docs.main(["--check", "--docs-dir", str(tmp_path)]) == 0
    (tmp_path / "observation.md").write_text("old\n", encoding="utf-8")
    (tmp_path / "flags.md").unlink()
    assert docs.main(["--check", "--docs-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "observation.md" in err and "flags.md" in err
    assert "actions.md" not in err and "rules.md" not in err
    # Writing repairs them, and rules.md's hand-written text is kept.
    rules_before = (tmp_path / "rules.md").read_text(encoding="utf-8")
    assert docs.main(["--docs-dir", str(tmp_path)]) == 0
    assert docs.stale_files(tmp_path) == []
    assert (tmp_path / "rules.md").read_text(encoding="utf-8") == rules_before


def test_rules_flags_block_is_replaced(tmp_path):
    text = f"intro\n{docs.FLAGS_START}\nanything old\n{docs.FLAGS_END}\noutro\n"
    (tmp_path / "rules.md").write_text(text, encoding="utf-8")
    assert tmp_path / "rules.md" in docs.stale_files(tmp_path)
    docs.write(tmp_path)
    new = (tmp_path / "rules.md").read_text(encoding="utf-8")
    assert new == f"intro\n{docs.rules_flags_block()}\noutro\n"


def test_splice_needs_markers():
    with pytest.raises(ValueError):
        docs.splice_rules("no markers here\n")
    with pytest.raises(ValueError):
        docs.splice_rules(f"{docs.FLAGS_END}\n{docs.FLAGS_START}\n")


# -- rules.md covers the contract ---------------------------------------------------------

def test_every_rule_id_in_rules_md_once_in_order(rules_text):
    positions = []
    for rid in RULE_IDS:
        heads = re.findall(rf"\*\*{rid}\*\* \((stated|implied|choice|stated/implied|"
                           rf"stated/choice)\)", rules_text)
        assert len(heads) == 1, f"{rid} must be stated exactly once, tagged, in docs/rules.md"
        positions.append(rules_text.index(f"**{rid}**"))
    assert positions == sorted(positions), "rules must appear in order R1..R34"


def test_every_flag_in_rules_md(rules_text):
    for name in FIELDS:
        assert f"`{name}`" in rules_text, f"RulesConfig.{name} is missing from docs/rules.md"


def test_each_flag_is_named_in_its_rule(rules_text):
    for name in FIELDS:
        rid = RulesConfig.flag_info(name)["rule"]
        start = rules_text.index(f"**{rid}**")
        end = rules_text.find("- **R", start + 1)
        end = rules_text.find("\n## ", start) if end < 0 else end
        assert f"`{name}`" in rules_text[start:end], f"{rid} should name its flag {name}"


def test_rules_md_has_choices_section(rules_text):
    assert "## Choices this implementation makes where the contract is open" in rules_text


# -- flag metadata agrees with config.py ----------------------------------------------------

def test_flag_metadata_covers_every_field():
    for name in FIELDS:
        info = RulesConfig.flag_info(name)
        assert info["rule"] in RULE_IDS and info["meaning"], name
        assert info["kind"] in ("bool", "int", "str"), name
        if info["kind"] == "str":
            assert info["default"] in info["choices"], name
    with pytest.raises(ConfigError, match="unknown rule flag 'nope'"):
        RulesConfig.flag_info("nope")


def test_allowed_values_match_validation():
    hints = typing.get_type_hints(RulesConfig)
    for f in dataclasses.fields(RulesConfig):
        name, kind = f.name, hints[f.name]
        if kind is bool:
            for v in (True, False):
                RulesConfig(**{name: v})
            with pytest.raises(ConfigError):
                RulesConfig(**{name: 1})
        elif kind is int:
            info = RulesConfig.flag_info(name)
            lo, hi = info["low"], info["high"]
            RulesConfig(**{name: lo})
            with pytest.raises(ConfigError):
                RulesConfig(**{name: lo - 1})
            if hi is None:
                RulesConfig(**{name: 10_000})
            else:
                RulesConfig(**{name: hi})
                with pytest.raises(ConfigError):
                    RulesConfig(**{name: hi + 1})
        elif kind is str:
            for v in RulesConfig.flag_info(name)["choices"]:
                RulesConfig(**{name: v})
            with pytest.raises(ConfigError):
                RulesConfig(**{name: "no-such-value"})
        else:
            pytest.fail(f"RulesConfig.{name} has a type the docs do not describe: {kind}")
        assert f.default is not dataclasses.MISSING


def test_flags_table_lists_every_field_with_default():
    table = docs.flags_table()
    for f in dataclasses.fields(RulesConfig):
        assert f"`{f.name}`" in table
    rows = docs.flag_rows()
    assert [r[0] for r in rows] == [f"`{n}`" for n in FIELDS]


# -- tables reflect the action table and the layout ------------------------------------------

def test_action_ranges_tile_action_space():
    pos = 0
    for first, last, _, _ in ACTION_RANGES:
        assert first == pos and last >= first
        pos = last + 1
    assert pos == NUM_ACTIONS
    table = docs.action_table()
    for _first, _last, name, _ in ACTION_RANGES:
        assert f"`{name}`" in table


@pytest.mark.parametrize("state", [False, True])
@pytest.mark.parametrize("m", range(2, 9))
def test_layout_tiles_exactly(m, state):
    lay = layout(m, state)
    pos = 0
    names = set()
    seen_scaled = False
    for f in lay.fields:
        assert f.start == pos, f"{f.name} starts at {f.start}, expected {pos} (gap or overlap)"
        assert f.size > 0
        assert f.name not in names
        names.add(f.name)
        if f.binary:
            assert not seen_scaled, "binary fields must come before scaled ones"
        else:
            seen_scaled = True
        pos += f.size
    assert pos == lay.size
    assert lay.num_binary == sum(f.size for f in lay.fields if f.binary)
    covered = [0] * lay.size
    for f in lay.fields:
        for j in range(f.slice.start, f.slice.stop):
            covered[j] += 1
    assert covered == [1] * lay.size


@pytest.mark.parametrize("m", range(2, 9))
def test_size_formulas_match_layout(m):
    lay = layout(m)
    for f in lay.fields:
        a, b, c = docs._fit_size(docs._field_sizes(f.name))
        assert a * m * m + b * m + c == f.size


def test_observation_table_rows_match_layout():
    table = docs.observation_table(docs.DEFAULT_SEATS)
    for f in layout(docs.DEFAULT_SEATS).fields:
        kind = "binary" if f.binary else "scaled"
        assert re.search(rf"\| `{f.name}` \| {f.start} \| {f.size} \| [^|]+ \| {kind} \|", table)


def test_size_formula_rendering():
    assert docs.size_formula({m: 45 for m in range(2, 9)}) == "45"
    assert docs.size_formula({m: m for m in range(2, 9)}) == "m"
    assert docs.size_formula({m: m * m + 45 * m + 3 for m in range(2, 9)}) == "m² + 45·m + 3"
    with pytest.raises(ValueError):
        docs.size_formula({m: 2 ** m for m in range(2, 9)})


def test_readme_results_tables_come_from_the_committed_results():
    from dragons_egg.experiments.tools import readme_tables

    assert readme_tables.main(["--check"]) == 0, "run python -m dragons_egg.experiments.tools.readme_tables"
    for doc in readme_tables.DOCUMENTS:  # the README, results.md, shipped-agents.md
        text = (readme_tables.ROOT / doc).read_text()
        ends = text.count("<!-- results:end -->")
        assert text.count("<!-- results:") - ends == ends >= 1, doc  # every block opened and closed


def test_readme_blocks_are_rendered_from_the_files_they_name(tmp_path):
    import json

    from dragons_egg.experiments.tools import readme_tables

    d = tmp_path / "res" / "t"
    d.mkdir(parents=True)
    est = {"mean": 0.5, "low": 0.25, "high": 0.75}
    agent = {"mean_place": est, "dragon_rate": est, "egg_rate": est, "mean_score": est}
    (d / "summary.json").write_text(json.dumps({
        "labels": ["a", "b"], "agents": {"a": agent, "b": agent},
        "ratings": {"a": {"mu": 25.0, "sigma": 1.0}, "b": {"mu": 20.0, "sigma": 1.0}},
        "differences": {"a - b": {"mean": -0.1, "low": -0.2, "high": 0.05}},
        "matches": 8, "sequences": 2}))
    (d / "config.json").write_text(json.dumps({"num_players": 4, "num_rounds": 3, "seed": 1}))
    readme = tmp_path / "README.md"
    stale = ("x\n<!-- results:sizes:res/t -->\nold\n<!-- results:end -->\n"
             "<!-- results:tournament:res/t -->\n<!-- results:end -->\ny\n")
    readme.write_text(stale)
    assert readme_tables.main(["--check", "--readme", str(readme)]) == 1
    assert readme_tables.main(["--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "| 4 | 8 | `a` - `b` | -0.100 [-0.200, +0.050] | no |" in text
    assert "| `a` | 0.50 [0.25, 0.75] |" in text and "a - b -0.100 [-0.200, +0.050]" in text
    assert text.startswith("x\n") and text.endswith("y\n") and "old" not in text
    assert readme_tables.main(["--check", "--readme", str(readme)]) == 0


def test_readme_roles_block_gives_each_agents_dragon_and_egg_rates_by_size(tmp_path, capsys):
    """A row per tournament: the even share, then the first and the second agent's Dragon
    rates and Egg rates; a folder of other agents than the first's is refused by name."""
    import json

    from dragons_egg.experiments.tools import readme_tables

    def tournament(name, players, labels, rates):
        d = tmp_path / "res" / name
        d.mkdir(parents=True)
        agents = {a: {"dragon_rate": {"mean": dr, "low": dr - 0.01, "high": dr + 0.01},
                      "egg_rate": {"mean": er, "low": er - 0.01, "high": er + 0.01}}
                  for a, (dr, er) in zip(labels, rates, strict=True)}
        (d / "summary.json").write_text(json.dumps({"labels": labels, "agents": agents}))
        (d / "config.json").write_text(json.dumps({"num_players": players}))

    tournament("t4", 4, ["a", "b"], [(0.3, 0.28), (0.2, 0.22)])
    tournament("t5", 5, ["a", "b"], [(0.21, 0.23), (0.18, 0.15)])
    tournament("u", 4, ["a", "c"], [(0.3, 0.3), (0.2, 0.2)])
    lines = readme_tables.roles_block(tmp_path, ["res/t4", "res/t5"]).splitlines()
    assert lines[0] == "| players | even share | Dragon rate: `a` | `b` | Egg rate: `a` | `b` |"
    assert lines[2:] == [
        "| 4 | 0.250 | 0.300 [0.290, 0.310] | 0.200 [0.190, 0.210] | 0.280 [0.270, 0.290] | "
        "0.220 [0.210, 0.230] |",
        "| 5 | 0.200 | 0.210 [0.200, 0.220] | 0.180 [0.170, 0.190] | 0.230 [0.220, 0.240] | "
        "0.150 [0.140, 0.160] |"]
    with pytest.raises(ValueError, match="res/u plays"):
        readme_tables.roles_block(tmp_path, ["res/t4", "res/u"])
    # on the command line, one line naming the folder, and the README is left as it was
    readme = tmp_path / "README.md"
    text = "<!-- results:roles:res/t4,res/missing -->\n<!-- results:end -->\n"
    readme.write_text(text)
    assert readme_tables.main(["--readme", str(readme)]) == 2
    assert "res/missing/summary.json" in capsys.readouterr().err
    assert readme.read_text() == text


def test_readme_tribute_block_shows_policies_an_analysis_left_out_as_dashes(tmp_path):
    import json

    from dragons_egg.experiments.tools import readme_tables

    d = tmp_path / "res" / "tr"
    d.mkdir(parents=True)
    est = {"mean": 0.2, "low": 0.1, "high": 0.3}
    (d / "summary.json").write_text(json.dumps({  # tribute_analysis --policies heuristic,learned
        "policies": {"heuristic": est, "learned": est},
        "vs_heuristic": {"learned": {"mean": 0.01, "low": -0.01, "high": 0.03}},
        "play": "ppo", "tribute": "ppo", "deals": 5}))
    row = readme_tables.tribute_block(tmp_path, ["res/tr"]).splitlines()[-1]
    assert row == ("| `ppo` | `ppo` | 5 | - | - | 0.200 [0.100, 0.300] | 0.200 [0.100, 0.300] | "
                   "**+0.010 [-0.010, +0.030]** | - | - |")


def test_readme_tribute_block_has_a_row_per_play_policy_of_an_analysis(tmp_path):
    """An analysis of several play policies (``summary.json`` with ``plays``) is a row each, in
    the order played."""
    import json

    from dragons_egg.experiments.tools import readme_tables

    d = tmp_path / "res" / "tr"
    d.mkdir(parents=True)
    est = {"mean": 0.2, "low": 0.1, "high": 0.3}
    plays = [{"play": p, "policies": {"heuristic": est, "learned": est},
              "vs_heuristic": {"learned": {"mean": m, "low": m - 0.01, "high": m + 0.01},
                               "learned-give": est}}
             for p, m in (("ppo", 0.02), ("heuristic", -0.03))]
    (d / "summary.json").write_text(json.dumps({"tribute": "ppo", "deals": 7, "plays": plays}))
    rows = readme_tables.tribute_block(tmp_path, ["res/tr"]).splitlines()[2:]
    assert rows == [
        "| `ppo` | `ppo` | 7 | - | - | 0.200 [0.100, 0.300] | 0.200 [0.100, 0.300] | "
        "**+0.020 [+0.010, +0.030]** | - | +0.200 [+0.100, +0.300] |",
        "| `heuristic` | `ppo` | 7 | - | - | 0.200 [0.100, 0.300] | 0.200 [0.100, 0.300] | "
        "**-0.030 [-0.040, -0.020]** | - | +0.200 [+0.100, +0.300] |"]
