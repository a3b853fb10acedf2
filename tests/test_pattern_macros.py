"""Short patterns (issue 16): `{{macro}}` placeholders and literal prefilters derived from the regex."""
import os

import pytest

from triage.scan.engine import Engine
from triage.match.literals import derive_literals, leading_alternatives
from triage.patterns import MACROS, PatternError, builtin_dir, expand_macros, load_dir, parse_pattern
from triage.selftest import check_examples, fired, lines_of

SHIPPED = load_dir(builtin_dir())


def pat(match, ex_match=("RuntimeError: widget exploded",), ex_no=("widget is fine",)):
    return parse_pattern({"id": "my-thing", "title": "t", "severity": "error", "kind": "runtime",
                          "explanation": "e", "fix": "f", "references": [{"source": "s"}], "match": match,
                          "examples": {"match": list(ex_match), "no_match": list(ex_no)}}, "my-thing.yaml")


# --- macros ----------------------------------------------------------------------------------------

def test_not_quoted_expands_to_the_lookbehind_the_catalog_used():
    assert expand_macros("{{not_quoted}}boom", "w") == r"""(?<![\w'"])boom"""
    assert expand_macros("{{ not_quoted }}boom", "w") == expand_macros("{{not_quoted}}boom", "w")
    r = pat([{"regex": "{{not_quoted}}widget exploded"}]).match[0]
    assert r.source_text == MACROS["not_quoted"] + "widget exploded"      # reports show the real regex
    assert r.literals == ["widget exploded"]


def test_the_not_quoted_macro_keeps_source_lines_out():
    p = pat([{"regex": "{{not_quoted}}widget exploded"}],
            ex_no=['    raise RuntimeError("widget exploded")', "    msg = 'widget exploded'", "xwidget exploded"])
    assert check_examples([p], [p]) == []


def test_macros_expand_in_context_and_not_too():
    p = pat([{"regex": "{{cpp_frame}}at::cuda::CUDAGraph::capture_end\\(\\)",
              "not": ["{{not_quoted}}ignored"],
              "context": [{"regex": "{{cpp_frame}}c10::cuda::c10_cuda_check_implementation\\("}]}],
            ex_match=["#6 c10::cuda::c10_cuda_check_implementation(int) from CUDAException.cpp:0\n"
                      "#7 at::cuda::CUDAGraph::capture_end() from ??:0"],
            ex_no=["#7 at::cuda::CUDAGraph::capture_end() from ??:0"])
    r = p.match[0]
    assert r.context[0].rx.pattern.startswith(MACROS["cpp_frame"]) and r.negative[0].pattern.startswith("(?<!")
    assert r.literals == [" at::cuda::CUDAGraph::capture_end()"]
    assert r.context[0].literals == [" c10::cuda::c10_cuda_check_implementation("]
    assert check_examples([p], [p]) == []


def test_nccl_warn_macro_reads_each_nccl_prefix_form():
    p = pat([{"regex": "{{nccl_warn}}Cuda failure"}],
            ex_match=["host:1:2 [0] NCCL WARN Cuda failure 'x'",
                      "host:1:2 [0] enqueue.cc:12 NCCL WARN Cuda failure 'x'",
                      "[2026-12-03 08:33:52] vm:1:2 [0] misc/socket.cc:72 NCCL WARN Cuda failure 'x'",
                      "host:1:2 [0] transport/net.cc:1050 (ncclProxyConnect) NCCL WARN Cuda failure 'x'"],
            ex_no=["host:1:2 [0] NCCL INFO Cuda failure"])
    assert p.match[0].literals == ["NCCL WARN Cuda failure"]
    assert check_examples([p], [p]) == []


@pytest.mark.parametrize("where", ["regex", "not", "context"])
def test_an_unknown_macro_is_an_error(where):
    m = {"regex": "widget exploded", "literal": "widget"}
    if where == "regex":
        m["regex"] = "{{not_qouted}}widget exploded"
    elif where == "not":
        m["not"] = ["{{nope}}"]
    else:
        m["context"] = [{"regex": "{{nope}}x", "literal": "x"}]
    with pytest.raises(PatternError, match=r"unknown macro \{\{\w+\}\} \(known: cpp_frame, nccl_warn, not_quoted\)"):
        pat([m])


def test_shipped_patterns_use_the_macros_and_compile_to_plain_regexes():
    texts = "".join(open(p.path, encoding="utf-8").read() for p in SHIPPED)
    assert texts.count("{{not_quoted}}") > 100 and "{{cpp_frame}}" in texts and "{{nccl_warn}}" in texts
    assert "(?<![\\w''\"])" not in texts            # the boilerplate is gone from the files
    for p in SHIPPED:
        for r in p.match:
            for src in [r.source_text] + [c.rx.pattern for c in r.context] + [n.pattern for n in r.negative]:
                assert "{{" not in src, (p.id, src)


# --- derived literals ------------------------------------------------------------------------------

@pytest.mark.parametrize("rx,lits", [
    ("widget exploded", ["widget exploded"]),
    ("{{not_quoted}}CUDA graphs must be captured on a non-default stream",
     ["CUDA graphs must be captured on a non-default stream"]),
    (r"\bcudaErrorStreamCaptureImplicit\b", ["cudaErrorStreamCaptureImplicit"]),
    (r"Invalid (?:cuda|CUDA) graph implementation: ", [" graph implementation: "]),
    (r"\b[1-9]\d* graphs deleted without explicit reset", [" graphs deleted without explicit reset"]),
    (r"Warmup runs \d+ (?:don't match args \d+|but only \d+ are unique)", ["Warmup runs "]),
    (r"colou?r scheme", ["r scheme"]),
    (r"(?:abc)+defgh", ["defgh"]),
    (r"x(?:abcdefg)+y", ["abcdefg"]),
    (r"alpha beta|gamma delta", ["alpha beta", "gamma delta"]),
    ("{{not_quoted}}(?:Either none or all communicators|Streams given to a communicator)",
     ["Either none or all communicators", "Streams given to a communicator"]),
    (r"(?i)out of memory", []),                      # case-insensitive inline: not without ignore_case
    (r"(?:^|\s)- (?:Value mismatch at |Type mismatch at )", []),   # nothing common of 4+ characters
    (r"\d+:\d+", []),
    (r"\p{Lu}+ exploded badly", []),                 # `regex`-only syntax: give a literal
    (r"ab|cdefgh", []),                              # one alternative too short: no prefilter at all
])
def test_derive_literals(rx, lits):
    assert derive_literals(expand_macros(rx, "w"))[0] == lits


@pytest.mark.parametrize("rx, ci, lits", [
    (r"(?:Error|Exception|Interrupt|Exit|Failure)(?::|[ \t\r]*$)", False,
     ["Error", "Exception", "Interrupt", "Exit", "Failure"]),            # (?: is inlined by the parser
    (r"\b(?:torch|pytorch)(?:[ \t]+version)?[ \t]*v?\d+", True, ["torch", "pytorch"]),
    (r"(Error|Fault) in \w+", False, ["Error", "Fault"]),              # a capturing group around them
    (r"(?:Fatal error|Bus fault)", False, ["Fatal error", "Bus fault"]),
    (r"(?:ab|Error)x", False, []),                                     # an alternative too short
    (r"Error|Fault", False, ["Error", "Fault"]),                       # a bare alternation (as derive_literals)
    (r"x(?:Error|Fault)", False, []),                                  # not leading
    (r"(?i:Error|Fault)", True, []),                                   # a group with flags
    (r"(?i)(?:Error|Fault)", False, []),                               # (?i) without ignore_case
    (r"(?:Error|Fault", False, []),                                    # not a regex
])
def test_leading_alternatives(rx, ci, lits):
    """One literal per alternative of a leading group (the stdlib search's prefilter of an anchor
    regex that derive_literals leaves without one): every match holds one of them."""
    import re
    assert leading_alternatives(rx, ci) == lits
    for lit in lits:                                                   # each alternative can match
        assert any(re.search(rx, lit + tail, re.I if ci else 0) for tail in (":", " in x", "", " 2", "x"))


def test_derive_literals_with_ignore_case():
    assert derive_literals(r"(?i)out of memory", ignore_case=True)[0] == ["out of memory"]


def test_derived_literals_hold_on_every_line_the_shipped_regexes_match():
    """A derived prefilter must never hide a match: on every example line (any file's) that a shipped
    regex matches, the literal derived from that regex is present."""
    texts = []
    for p in SHIPPED:
        for ex in p.examples_match + p.examples_no_match:
            texts += [ln.text for ln in lines_of(ex)]
    checked, rules = set(), set()
    for p in SHIPPED:
        for i, r in enumerate(p.match):
            rules.add((p.id, i))
            lits, _ = derive_literals(r.source_text, r.ignore_case)
            for t in texts:
                if r.rx.search(t):
                    hay = t.lower() if r.ignore_case else t
                    assert any((x.lower() if r.ignore_case else x) in hay for x in lits) or not lits, (p.id, r.source_text, t)
                    checked.add((p.id, i))
    assert checked == rules           # every shipped rule was checked on at least one line it matches


def test_derivation_covers_most_of_the_catalog_and_agrees_with_its_literals():
    underived = []
    for p in SHIPPED:
        for i, r in enumerate(p.match):
            lits, _ = derive_literals(r.source_text, r.ignore_case)
            if not lits:
                underived.append((p.id, i))
    assert underived == [("graph-runner-misuse", 8)]     # of 158 rules, the one that needs its literal written


def test_a_pattern_without_literal_fires_through_the_engine():
    p = pat([{"regex": "{{not_quoted}}widget exploded(?: at step \\d+)?"}])
    assert p.match[0].literals == ["widget exploded"]
    eng = Engine([p])
    assert fired(eng, "RuntimeError: widget exploded at step 7") == {"my-thing"}
    assert fired(eng, '    raise RuntimeError("widget exploded")') == set()


def test_no_literal_and_none_derivable_is_a_clear_error():
    with pytest.raises(PatternError, match=r"match\[0\]: no 'literal' prefilter given and none can be derived"):
        pat([{"regex": r"\d+ x"}])
    with pytest.raises(PatternError, match="non-empty 'literal'"):
        pat([{"regex": "widget exploded", "literal": ""}])      # an explicit empty literal stays an error


def test_a_context_of_an_ignore_case_rule_needs_its_literal():
    """engine._ctx_hit looks for a context literal case-sensitively: deriving one from a regex that
    matches any case could hide the context line."""
    with pytest.raises(PatternError, match="context"):
        pat([{"regex": "widget exploded", "ignore_case": True, "context": [{"regex": "graph capture"}]}])
    p = pat([{"regex": "widget exploded", "ignore_case": True, "context": [{"regex": "graph capture", "literal": "capture"}]}],
            ex_match=["graph capture\nWIDGET EXPLODED"])
    assert p.match[0].literals == ["widget exploded"]


def test_shipped_files_keep_their_explicit_literals():
    """Derivation is for patterns that give none: a file's own literal is used as written."""
    p = next(q for q in SHIPPED if q.id == "te-rng-tracker-missing")
    assert p.match[0].literals == ["RNG tracker is required for cudagraphs"]
    assert os.path.basename(p.path) == "te-rng-tracker-missing.yaml"
    assert p.match[0].rx.search("AssertionError: Transformer engine's RNG tracker is required for cudagraphs")
