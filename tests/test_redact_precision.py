"""Precision: nothing that is not a secret is redacted.

* every line of every file under tests/fixtures/logs/ (real Megatron-LM / Bridge / torchrun / NCCL
  logs, their expectations, READMEs) comes out of `redact` unchanged, line by line, as one stream
  (`redact_lines`) and as one multi-line string;
* every fixture's full report (with the config read from its log) is the same redacted or not, in
  the JSON dict and in the text format;
* every Megatron argument name printed in the fixtures keeps its value in each way a name and a
  value are written (`name=value`, `name: value`, `--name value`, `"name": "value"`, the
  arguments block), and so does a table of near-misses (names and words that hold a secret word).
"""
import gzip
import os
import re
import sys

import pytest

from triage.redact import MARK, name_class, redact, redact_lines, redact_obj

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")
sys.path.insert(0, HERE)


def _files():
    out = []
    for root, dirs, files in os.walk(LOGS):
        dirs.sort()
        out.extend(os.path.join(root, f) for f in sorted(files))
    return out


FILES = _files()


def _read(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def test_every_corpus_log_is_checked():
    from corpus import cases
    want = set()
    for c in cases():
        if os.path.isdir(c):
            want.update(os.path.join(root, f) for root, _, files in os.walk(c) for f in files)
        else:
            want.add(c)
    assert not want - set(FILES)
    assert os.path.join(LOGS, "real", "gpu", "nccl_rank_early_exit.log") in want


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(p, LOGS) for p in FILES])
def test_fixture_file_is_untouched(path):
    text = _read(path)
    lines = text.split("\n")
    changed = [(i + 1, x, redact(x)) for i, x in enumerate(lines) if redact(x) != x]
    assert not changed, changed[:5]
    assert redact_lines(lines) == lines
    assert redact(text) == text


def test_fixture_reports_are_the_same_redacted_or_not():
    from corpus import cases
    from triage.patterns import load_all
    from triage.pipeline import Options, triage
    from triage.report import render, report_dict

    pats = load_all()
    differ = []
    for case in cases():
        a = triage([case], Options(pats=tuple(pats)))
        text = render(a, "text", False)
        if report_dict(a, True) != report_dict(a, False) or render(a, "text", True) != text or redact(text) != text:
            differ.append(os.path.relpath(case, LOGS))
    assert not differ


def _megatron_args():
    """(name, value) of every `  name ........ value` line of the fixtures' arguments blocks."""
    rx = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?([a-z_][a-z0-9_]*) \.{3,} (.*)$")
    out = {}
    for p in FILES:
        if p.endswith(".log"):
            for ln in _read(p).split("\n"):
                m = rx.match(ln)
                if m:
                    out.setdefault(m.group(1), m.group(2).strip())
    return sorted(out.items())


ARGS = _megatron_args()


def test_megatron_argument_names_are_not_secret_names():
    secret = [(n, v) for n, v in ARGS if name_class(n) == 2]
    assert not secret
    args = dict(ARGS)       # read from the real megatron-core logs' arguments blocks
    assert (args["tokenizer_type"], args["num_query_groups"], args["cuda_graph_impl"]) == (
        "None", "1", "transformer_engine")


@pytest.mark.parametrize("form", ["{n}={v}", "{n}: {v}", "--{d} {v}", "--{d}={v}", '"{n}": "{v}"', "'{n}': '{v}'",
                                  "  {n} ........ {v}", "export {u}={v}"])
def test_megatron_arguments_keep_their_values_in_every_form(form):
    bad = []
    for n, v in ARGS:
        line = form.format(n=n, v=v, d=n.replace("_", "-"), u=n.upper())
        if form.startswith("export") and name_class(n.upper()) == 2:
            continue                       # an upper-case FOO_TOKEN in the environment is a secret name
        if redact(line) != line:
            bad.append((line, redact(line)))
    assert not bad, bad[:10]


NEAR_MISSES = [
    "tokenizer_type=GPT2BPETokenizer", "--tokenizer-type HuggingFaceTokenizer", "max_tokens=4096",
    "keyframe=12", "keyframes: [0, 12, 24]", "num_key_value_heads=8", "--num-key-value-heads 8",
    "--use-te-rng-tracker", "attention_softmax_in_fp32=True", "--attention-softmax-in-fp32",
    "  fim_pad_token ................................... <fim_pad>", "eos_token: </s>", "bos_token: '<s>'",
    "pad_token_id=0", "rl_skip_bos_token=False", "moe_token_dispatcher_type='alltoall'",
    "moe_token_dispatcher_type: alltoall", "  tokenizer_model ........ /data/tokenizer.model",
    "special_tokens: ['<|im_start|>', '<|im_end|>']", "hub_token=<HUB_TOKEN>", "push_to_hub_token=<PUSH_TO_HUB_TOKEN>",
    "HF_TOKEN=", "HF_TOKEN=${HF_TOKEN}", "export HF_TOKEN=$HF_TOKEN", "WANDB_API_KEY=None", "password: ''",
    "api_key: null", 'token: ""', "secret: ***", "PWD=/workspace/megatron", "OLDPWD=/root",
    "NCCL_IB_PKEY=0", "text_key: text", "--json-keys text", "sort_key=length", "cache_key: abc123",
    "KeyError: 'decoder.layers.0.self_attention.linear_qkv.weight'", "DispatchKeySet(CUDA, ADInplaceOrView)",
    "[    0.198681] Key type blacklist registered", "Build time autogenerated kernel key: f40c450a88b42d3459ff37f3c44808df97ee47ae",
    "--auth-required", "Bearer token is required", "bearer authentication failed",
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
    "tcp://10.0.0.1:29500", "git@github.com:NVIDIA/Megatron-LM.git", "ssh://git@github.com:22/NVIDIA/Megatron-LM",
    "commit 70d99e998b4955e0049d13a98d77ae1b14db1f45", "sha256:" + "ab" * 32,
    "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1234", "Asia/Shanghai", "task-0 disk-1 mask-2",
    "-----BEGIN CERTIFICATE-----", "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTES",
    "tokens_per_sec=1234.5", "total_tokens: 1048576", "key=value", "keys: [a, b]", "token 5 of 10",
    "authorization_required=False", "Authorization: Bearer", 'headers = {"Authorization": f"Bearer {token}"}',
    "secret_name: my-k8s-secret", "use_secret_manager: true", "key_padding_mask=None",
    "num_tokens_to_generate: 128", "apply_query_key_layer_scaling=False", "linear_key_head_dim ........ 128",
]


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_misses_are_untouched(line):
    assert redact(line) == line
    assert redact_obj({"lines": [line]}) == {"lines": [line]}


def test_public_blocks_are_untouched():
    """A certificate or public key block (base64 lines of a key block's width) is public."""
    sys.path.insert(0, os.path.join(HERE, "fixtures", "secrets"))
    from recall_table import B64, fake
    for kind in ("CERTIFICATE", "PUBLIC KEY", "RSA PUBLIC KEY"):
        block = [f"-----BEGIN {kind}-----", *[fake(64, B64, kind + str(i)) for i in range(4)], "Ab+/0Q==",
                 f"-----END {kind}-----"]
        assert redact("\n".join(block)) == "\n".join(block)
        assert redact_lines(block) == block
        assert redact_obj({"lines": block}) == {"lines": block}


def test_config_keys_of_the_report_are_not_secret_names():
    d = {"config": {"model.moe_token_dispatcher_type": "alltoall", "model.fim_pad_token": "<fim_pad>",
                    "model.num_key_value_heads": 8, "model.max_tokens": 4096, "tokenizer.tokenizer_type": "x",
                    "env.PWD": "/workspace", "env.NCCL_IB_PKEY": "0"},
         "diff": [{"key": "model.max_tokens", "old": 1, "new": 2}]}
    assert redact_obj(d) == d
    assert MARK not in str(redact_obj(d))
