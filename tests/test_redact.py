import pytest

from triage.redact import MARK, redact, redact_obj


@pytest.mark.parametrize("line,secret", [
    ("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ("export HF_TOKEN='hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123'", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"),
    ("downloading with hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 now", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"),
    ("AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("key id AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", "eyJhbGciOiJIUzI1NiJ9"),
    ("git clone https://alice:s3cr3tP4ss@gitlab.example.com/x.git", "s3cr3tP4ss"),
    ("wandb login 0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
])
def test_secrets_are_redacted(line, secret):
    out = redact(line)
    assert secret not in out and MARK in out


@pytest.mark.parametrize("line", [
    "AssertionError: cuda_graph_scope must not contain both moe and moe_router.",
    "NCCL_GRAPH_REGISTER=0",
    "iteration 5/10 | elapsed time per iteration (ms): 4800.2 |",
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
])
def test_ordinary_lines_untouched(line):
    assert redact(line) == line


def test_redact_obj_walks_structures():
    d = {"config": {"env.WANDB_API_KEY": "WANDB_API_KEY=abcdef0123456789"}, "lines": ["HF_TOKEN=hf_x1234567890123456789012"]}
    out = redact_obj(d)
    assert "abcdef0123456789" not in str(out) and "hf_x1234567890123456789012" not in str(out)


def test_secret_named_config_keys_lose_their_values():
    out = redact_obj({"env.WANDB_API_KEY": "abcdef0123456789", "env.NCCL_GRAPH_REGISTER": "0"})
    assert out == {"env.WANDB_API_KEY": MARK, "env.NCCL_GRAPH_REGISTER": "0"}


@pytest.mark.parametrize("line", [
    '{"wandb_api_key": "0123456789abcdef0123456789abcdef01234567"}',
    "environ({'WANDB_API_KEY': '0123456789abcdef0123456789abcdef01234567', 'PATH': '/usr/bin'})",
])
def test_quoted_secret_keys(line):
    out = redact(line)
    assert "0123456789abcdef0123456789abcdef01234567" not in out and MARK in out
