"""CHANGELOG.md records every JSON contract key under the version that added it, and its top version
is the package's one version (written once, in triage/__init__.py; pyproject.toml reads it)."""
import json
import os
import re

import pytest

import triage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "triage", "schemas")


def _read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


CHANGELOG = _read("CHANGELOG.md")
HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+)\](?: - (\d{4}-\d{2}-\d{2}|Unreleased))?$", re.M)


def sections():
    """[(version, text of its section)], newest first."""
    heads = list(HEADING.finditer(CHANGELOG))
    return [(m.group(1), CHANGELOG[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(CHANGELOG)])
            for i, m in enumerate(heads)]


def first_listed(key):
    """The oldest version whose section names `key` (in backticks), or None."""
    found = [v for v, text in sections() if f"`{key}`" in text]
    return found[-1] if found else None


def schema_keys(name):
    with open(os.path.join(SCHEMAS, f"{name}.schema.json"), encoding="utf-8") as f:
        return list(json.load(f)["properties"])


def test_versions_are_listed_newest_first_and_the_top_one_is_the_package_version():
    versions = [v for v, _ in sections()]
    assert versions == ["0.4.0", "0.3.0", "0.2.0", "0.1.0"]
    assert versions[0] == triage.__version__ == "0.4.0"
    assert re.search(r"^## \[0\.4\.0\] - Unreleased$", CHANGELOG, re.M)


@pytest.mark.parametrize("key", schema_keys("analyze"))
def test_every_analyze_json_key_is_in_the_changelog(key):
    assert first_listed(key) is not None, f"analyze JSON key {key!r} is not in CHANGELOG.md"


FLEET_ADDED_LATER = {"stop": "0.4.0"}     # issue 43: the jobs to stop (no progress between attempts)


@pytest.mark.parametrize("key", schema_keys("fleet"))
def test_every_fleet_json_key_is_in_the_changelog_under_0_3_0(key):
    assert first_listed(key) is not None, f"fleet JSON key {key!r} is not in CHANGELOG.md"
    assert f"`{key}`" in dict(sections())[FLEET_ADDED_LATER.get(key, "0.3.0")]


def test_each_analyze_key_is_listed_under_the_version_that_added_it():
    added = {k: first_listed(k) for k in schema_keys("analyze")}
    assert {k for k, v in added.items() if v == "0.2.0"} == {
        "outcome", "signature", "hang_suspects", "flight_recorder", "omitted"}
    # `job` (0.4.0) was named in 0.3.0 already, as the fleet JSON's `errors` field
    assert {k for k, v in added.items() if v == "0.3.0"} == {"known", "job"}
    assert "Analyze JSON: `job` (`id`, `attempt`" in dict(sections())["0.4.0"]
    assert {k for k, v in added.items() if v == "0.1.0"} == {
        "schema", "primary", "summary", "first_failing_rank", "findings", "suspects", "unmatched", "stats",
        "launcher_root_rank", "timeline", "first_failure", "attempts", "versions", "config", "config_violations",
        "step_times", "notes", "diff"}
    v020 = dict(sections())["0.2.0"]
    for nested in ("first_failure.kind", "first_failure.lines", "rank_counts", "matched_lines"):
        assert f"`{nested}`" in v020, nested
    v030 = dict(sections())["0.3.0"]
    assert "`known` (`key`, `url`, `title`, `seen`, `since`)" in v030


def test_pyproject_reads_the_version_from_the_package_and_writes_none():
    text = _read("pyproject.toml")
    project = re.search(r"^\[project\]\n(.*?)(?=^\[)", text, re.M | re.S).group(1)
    assert re.search(r'^dynamic = \["version"\]$', project, re.M)
    assert not re.search(r"^version\s*=", project, re.M)
    assert not re.search(r"""^\s*version\s*=\s*["']""", text, re.M)       # no literal version anywhere
    assert re.search(r'^version = \{attr = "triage.__version__"\}', text, re.M)
    assert re.findall(r"__version__\s*=\s*\"([^\"]+)\"", _read("triage", "__init__.py")) == ["0.4.0"]
