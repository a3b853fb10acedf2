"""The compiled HTML templates kept between runs (triage/report/template_cache.py): a second run reads
what the first compiled and renders the same bytes; a file that is not this user's own, or not what
jinja2 wrote, or of an edited template, is compiled again."""
import os
import re
import stat
import subprocess
import sys

import jinja2
import pytest

from triage.report import html, template_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "examples", "sample_job.log")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(d))
    monkeypatch.delenv("TRIAGE_TEMPLATE_CACHE", raising=False)
    html.template_env.cache_clear()
    yield d
    html.template_env.cache_clear()


def _render():
    """The sample log's HTML report, from a new environment (as a new process makes it)."""
    from triage.pipeline import triage
    from triage.report import render
    html.template_env.cache_clear()
    a = triage([SAMPLE])
    return render(a, "html")


def _compiles(monkeypatch):
    """The templates jinja2 compiles from their sources from now on."""
    seen = []
    real = jinja2.Environment.compile

    def compile(self, source, name=None, *a, **k):
        seen.append(name)
        return real(self, source, name, *a, **k)
    monkeypatch.setattr(jinja2.Environment, "compile", compile)
    return seen


def _files(d):
    return sorted(n for n in os.listdir(d) if n.startswith(template_cache.PREFIX)) if d.exists() else []


def test_the_second_run_reads_the_compiled_templates(cache, monkeypatch):
    seen = _compiles(monkeypatch)
    first = _render()
    assert sorted(seen) == ["macros.html.j2", "report.css.j2", "report.html.j2"]
    files = _files(cache)
    assert len(files) == 3
    assert all(stat.S_IMODE(os.stat(cache / f).st_mode) == 0o600 for f in files)
    seen.clear()
    assert _render() == first and seen == []                 # nothing compiled, the same bytes


@pytest.mark.parametrize("spoil", ["others-can-write", "garbage", "truncated", "empty", "directory", "link"])
def test_a_file_that_is_not_what_we_wrote_is_compiled_again(cache, monkeypatch, spoil):
    first = _render()
    target = cache / _files(cache)[0]
    data = target.read_bytes()
    if spoil == "others-can-write":
        os.chmod(target, 0o666)
    elif spoil == "garbage":
        target.write_bytes(b"\x00garbage" * 100)
    elif spoil == "truncated":
        target.write_bytes(data[:len(data) // 2])
    elif spoil == "empty":
        target.write_bytes(b"")
    elif spoil == "directory":
        target.unlink()
        target.mkdir()
    elif spoil == "link":
        other = cache.parent / "elsewhere.bin"
        other.write_bytes(data)
        target.unlink()
        target.symlink_to(other)
    seen = _compiles(monkeypatch)
    assert _render() == first
    assert len(seen) == 1                                    # that template only
    if spoil not in ("directory",):
        assert stat.S_IMODE(os.lstat(target).st_mode) == 0o600 and target.is_file() and not target.is_symlink()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_a_file_of_another_user_is_not_read(cache, monkeypatch):
    first = _render()
    for f in _files(cache):
        os.chown(cache / f, 65534, 65534)
    seen = _compiles(monkeypatch)
    assert _render() == first and len(seen) == 3


def test_an_edited_template_is_compiled_again(tmp_path, cache):
    """The source's checksum is in the file: another source is compiled, whatever the name."""
    src = {"t.j2": "one {{ x }}"}
    env = jinja2.Environment(loader=jinja2.DictLoader(src), bytecode_cache=template_cache.TemplateCache())
    assert env.get_template("t.j2").render(x=1) == "one 1"
    src["t.j2"] = "two {{ x }}"
    env = jinja2.Environment(loader=jinja2.DictLoader(src), bytecode_cache=template_cache.TemplateCache())
    assert env.get_template("t.j2").render(x=1) == "two 1"


def test_no_cache_when_switched_off_or_not_writable(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("TRIAGE_TEMPLATE_CACHE", "0")
    first = _render()
    assert _files(cache) == []
    monkeypatch.delenv("TRIAGE_TEMPLATE_CACHE")
    blocked = tmp_path / "a-file"
    blocked.write_text("x")
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(blocked))
    assert _render() == first                                # no cache, no error


def test_processes_share_the_cache(cache, tmp_path):
    """Two `analyze -o report.html` processes: the second compiles nothing and writes the same report."""
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    env.pop("TRIAGE_TEMPLATE_CACHE", None)
    probe = ("import sys, jinja2, runpy\n"
             "real = jinja2.Environment.compile\n"
             "def compile(self, source, name=None, *a, **k):\n"
             "    sys.stderr.write('compiled ' + str(name) + '\\n')\n"
             "    return real(self, source, name, *a, **k)\n"
             "jinja2.Environment.compile = compile\n"
             "sys.argv = ['triage'] + sys.argv[1:]\n"
             "runpy.run_module('triage', run_name='__main__')\n")
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.html"
        p = subprocess.run([sys.executable, "-c", probe, "analyze", SAMPLE, "-o", str(out)], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 1, p.stderr
        # (the minute the report was made is the one byte-run allowed to differ: two runs can straddle it)
        page = re.sub(rb'<span class="analysed">[^<]*</span>', b"", out.read_bytes())
        outs.append((page, p.stderr.count("compiled ")))
    assert outs[0][1] == 3 and outs[1][1] == 0 and outs[0][0] == outs[1][0]
