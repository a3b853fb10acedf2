"""The JSON report's indented text (report/jsontext.py) is json.dumps(indent=2, ensure_ascii=False, default=str)'s,
byte for byte: on random documents of every type json takes (and subclasses, odd keys, non-finite floats,
surrogates), on every JSON fixture the tests keep, and on a real report; errors as json raises them."""
import enum
import glob
import json
import os
import random

import pytest

from triage.report.jsontext import indented

HERE = os.path.dirname(os.path.abspath(__file__))


def _ref(o, default=str):
    return json.dumps(o, indent=2, ensure_ascii=False, default=default)


class _IntE(enum.IntEnum):
    A = 3


class _F(float):
    pass


class _S(str):
    pass


class _L(list):
    pass


class _D(dict):
    pass


class _Obj:
    def __str__(self):
        return "obj \u00e9 \"q\""


def _scalar(rng):
    text = "".join(chr(rng.choice([rng.randrange(0, 0x80), rng.randrange(0x80, 0x3000), 0x2028,
                                   0xD800 + rng.randrange(0x400), 0x1F600])) for _ in range(rng.randrange(6)))
    return rng.choice([None, True, False, rng.randrange(-10 ** 20, 10 ** 20), rng.random() * 10 ** rng.randrange(-30, 30),
                       float("nan"), float("inf"), -float("inf"), -0.0, text, _IntE.A, _F(1.5), _S('s"\\x'), _Obj()])


def _key(rng):
    return rng.choice(["k", "", "\u00e9\n", 1, -5, 2.5, True, False, None, float("nan"), _IntE.A, _S("z")])


def _doc(rng, depth=0):
    c = rng.randrange(6) if depth < 5 else 0
    if c == 0:
        return _scalar(rng)
    if c in (1, 2):
        return [_doc(rng, depth + 1) for _ in range(rng.randrange(5))]
    if c == 3:
        return tuple(_doc(rng, depth + 1) for _ in range(rng.randrange(4)))
    if c == 4:
        return {_key(rng): _doc(rng, depth + 1) for _ in range(rng.randrange(5))}
    return rng.choice([_L([_doc(rng, depth + 1)]), _D({"a": _doc(rng, depth + 1)}), [], {}, ()])


def test_random_documents_are_jsons_text():
    rng = random.Random(44)
    for _ in range(5000):
        doc = _doc(rng)
        assert indented(doc, default=str) == _ref(doc), doc


def test_every_json_fixture_is_jsons_text():
    files = glob.glob(os.path.join(HERE, "**", "*.json"), recursive=True)
    assert len(files) > 100
    for f in files:
        with open(f, encoding="utf-8") as fh:
            doc = json.load(fh)
        assert indented(doc, default=str) == _ref(doc), f


def test_a_real_reports_text(tmp_path):
    from triage.report.contract import json_text, report_dict
    from triage.pipeline import triage
    d = report_dict(triage([os.path.join(HERE, "..", "examples", "sample_job.log")]))
    assert json_text(d) == _ref(d) + "\n"


@pytest.mark.parametrize("bad", [{(1, 2): 3}, {"x": object()}, [object()]])
def test_errors_are_jsons(bad):
    with pytest.raises(TypeError) as ours:
        indented(bad, default=None)
    with pytest.raises(TypeError) as theirs:
        _ref(bad, default=None)
    assert str(ours.value) == str(theirs.value)


def test_a_container_within_itself_is_jsons_error():
    a: list = [1]
    a.append({"again": a})
    with pytest.raises(ValueError, match="Circular reference detected"):
        indented(a, default=str)
