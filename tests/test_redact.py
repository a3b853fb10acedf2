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


# ---------------------------------------------------------------------------------------------
# whole-word secret names

from triage import redact as R  # noqa: E402
from triage.redact import name_class, redact_lines  # noqa: E402


@pytest.mark.parametrize("name,cls", [
    ("HF_TOKEN", 2), ("hf_token", 2), ("WANDB_API_KEY", 2), ("wandb_api_key", 2), ("env.WANDB_API_KEY", 2),
    ("aws_secret_access_key", 2), ("AWS_ACCESS_KEY_ID", 2), ("SecretAccessKey", 2), ("AccessKeyId", 2),
    ("clientSecret", 2), ("apiKey", 2), ("apikey", 2), ("x-api-key", 2), ("PRIVATE-TOKEN", 2), ("PGPASSWORD", 2),
    ("MYSQL_PWD", 2), ("password", 2), ("db_passwd", 2), ("key_passphrase", 2), ("FOO_KEY", 2), ("MY_TOKEN", 2),
    ("Authorization", 2), ("private_key_id", 2), ("--hf-token", 2), ("github_token", 2),
    ("token", 1), ("fim_pad_token", 1), ("bos_token", 1), ("my_token", 1), ("auth", 1),
    ("tokenizer_type", 0), ("max_tokens", 0), ("keyframe", 0), ("num_key_value_heads", 0), ("use_te_rng_tracker", 0),
    ("attention_softmax_in_fp32", 0), ("moe_token_dispatcher_type", 0), ("text_key", 0), ("json_keys", 0),
    ("sort_key", 0), ("monkey", 0), ("PWD", 0), ("OLDPWD", 0), ("env.PWD", 0), ("NCCL_IB_PKEY", 0), ("key", 0),
    ("token_type", 0), ("HF_TOKEN_PATH", 0), ("pad_token_id", 0), ("secret_name", 0), ("auth_required", 0),
])
def test_name_class(name, cls):
    assert name_class(name) == cls


def test_weak_names_lose_only_credential_looking_values():
    assert redact("fim_pad_token: <fim_pad>") == "fim_pad_token: <fim_pad>"
    assert redact("my_token=False") == "my_token=False"
    assert redact("my_token=a1b2c3d4e5f6g7h8i9") == "my_token=" + MARK


@pytest.mark.parametrize("line", ["HF_TOKEN=", "HF_TOKEN=None", "HF_TOKEN=${HF_TOKEN}", "HF_TOKEN=$MY_TOKEN",
                                  "hub_token=<HUB_TOKEN>", "password: ''", "WANDB_API_KEY=****", "secret: null"])
def test_placeholders_are_kept(line):
    assert redact(line) == line


def test_yaml_value_runs_to_the_comment():
    assert redact("  password: correct horse battery  # rotate") == "  password: " + MARK + "  # rotate"
    assert redact("- api_key: abc def") == "- api_key: " + MARK


def test_a_config_change_of_a_secret_name_loses_both_values():
    """triage's text report and `triage diff` print `key: old -> new`."""
    out = redact("env.WANDB_API_KEY: None -> 'abc0123456789'")      # a YAML-like line: all of its value
    assert "abc0123456789" not in out and out.startswith("env.WANDB_API_KEY: ")
    assert redact("  >> 0.00  env.HF_TOKEN: 'hf_a1' -> 'x2y3'") == f"  >> 0.00  env.HF_TOKEN: '{MARK}' -> '{MARK}'"
    assert redact("model.max_tokens: 1 -> 2") == "model.max_tokens: 1 -> 2"


def test_code_is_not_a_value():
    for line in ['api_key=os.getenv("OPENAI_API_KEY")', "token = cfg['hf_token']", "password=get_password()"]:
        assert redact(line) == line


def test_value_of_a_non_secret_name_is_still_searched():
    assert redact("token_type: password=hunter2") == "token_type: password=" + MARK


# ---------------------------------------------------------------------------------------------
# private key blocks

BODY = ["MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcSEXAMPLE0A1",
        "bQp7Gh2mK9Lw3Xs4ZyT1uVv5RcN8dE6fJ0aH2iI3jK4lL5mM6nN7oO8pP9qQ0rR1", "Zw3xAb=="]
BLOCK = ["-----BEGIN RSA PRIVATE KEY-----", *BODY, "-----END RSA PRIVATE KEY-----"]


def _no_body(out):
    text = out if isinstance(out, str) else "\n".join(out)
    return all(b not in text for b in BODY)


def test_key_block_every_line_between_begin_and_end():
    out = redact_lines(BLOCK + ["iteration 5 | loss 2.3"])
    assert out[0] == BLOCK[0] and out[-2] == BLOCK[-1] and out[-1] == "iteration 5 | loss 2.3"
    assert out[1:-2] == [MARK] * len(BODY)


def test_key_block_in_one_string_and_with_prefixes():
    assert _no_body(redact("\n".join(BLOCK)))
    pre = ["[rank3]: " + x for x in BLOCK]
    out = redact_lines(pre)
    assert _no_body(out) and all(x.startswith("[rank3]: ") for x in out)
    assert _no_body(redact("\n".join("    | " + x for x in BLOCK)))       # the text report


def test_key_block_escaped_in_json_one_line():
    line = '{"private_key": "' + "\\n".join(BLOCK) + '\\n", "client_email": "a@b.iam.gserviceaccount.com"}'
    out = redact(line)
    assert _no_body(out) and "a@b.iam.gserviceaccount.com" in out


def test_key_block_begin_or_end_out_of_sight():
    assert _no_body(redact_lines(["x = 1"] + BLOCK[2:]))                 # BEGIN cut off by the context
    assert redact_lines(["x = 1"] + BLOCK[2:])[0] == "x = 1"
    assert _no_body(redact_lines(BLOCK[:3]))                            # END cut off (clipped list)
    out = redact_lines(BLOCK[:2] + ["Traceback (most recent call last):", "ValueError: bad key"])
    assert out[2:] == ["Traceback (most recent call last):", "ValueError: bad key"]


def test_key_block_body_line_alone_is_redacted():
    assert redact(BODY[0]) == MARK and redact("[rank0]: " + BODY[1]) == "[rank0]: " + MARK


def test_key_block_across_an_evidence_lines_text_and_after():
    d = {"text": "ValueError: could not load " + BLOCK[0], "before": ["loading key"], "after": BLOCK[1:] + ["next"]}
    out = redact_obj(d)
    assert _no_body(out["after"]) and out["after"][-1] == "next" and out["before"] == ["loading key"]
    assert BLOCK[0] in out["text"]


def test_a_block_cut_short_ends_at_the_next_begin():
    lines = BLOCK[:2] + ["[rank1]: note"] + BLOCK
    out = redact_lines(lines)
    assert _no_body(out) and out[3] == BLOCK[0] and out[-1] == BLOCK[-1]


def test_putty_private_lines():
    lines = ["PuTTY-User-Key-File-3: ssh-rsa", "Private-Lines: 2", BODY[0], BODY[2], "Private-MAC: 00ff", "after"]
    out = redact_lines(lines)
    assert out == lines[:2] + [MARK, MARK] + lines[4:]


def test_other_secrets_after_a_block_are_still_redacted():
    out = redact_lines(BLOCK + ["HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"])
    assert out[-1] == "HF_TOKEN=" + MARK


# ---------------------------------------------------------------------------------------------
# structures, engines, speed

def test_diff_rows_of_a_secret_key_lose_old_and_new():
    d = {"suspects": [{"key": "env.HF_TOKEN", "old": "hf_old0123456789abcdefghij", "new": "x2", "score": 0.0}],
         "diff": [{"key": "model.max_tokens", "old": 1, "new": 2}]}
    out = redact_obj(d)
    assert out["suspects"][0]["old"] == MARK and out["suspects"][0]["new"] == MARK
    assert out["suspects"][0]["score"] == 0.0 and out["diff"] == d["diff"]


def test_secret_named_keys_with_numbers_and_nested_values():
    out = redact_obj({"password": 12345678, "max_tokens": 4096, "token": True, "secret": {"password": "x1"}})
    assert out == {"password": MARK, "max_tokens": 4096, "token": True, "secret": {"password": MARK}}


def test_unchanged_parts_are_returned_as_they_are():
    big = {"a": [{"x": "plain"}] * 3, "b": ["HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"]}
    out = redact_obj(big)
    assert out["a"] is big["a"] and out["b"] == ["HF_TOKEN=" + MARK]
    assert redact_obj({"x": ["nothing here"]}) == {"x": ["nothing here"]}


def test_stdlib_hint_agrees_with_hyperscan(monkeypatch):
    samples = ["plain line", "HF_TOKEN=x", "x" * 70, "Authorization: Basic abc", "-----END EC PRIVATE KEY-----",
               "Caf\u00e9 password=hunter2", "\U0001f600 token=abc"]
    want = [R._hint_re(s) for s in samples]
    if R._hs():
        assert [R._hint(s) for s in samples] == want
        assert R._hint_many(samples * 3) == {i: g for i, g in enumerate(want * 3) if g}
    monkeypatch.setattr(R, "_hs", lambda: False)
    assert R._hint_many(samples * 3) == {i: g for i, g in enumerate(want * 3) if g}


@pytest.mark.parametrize("s, want", [
    ("sort_key=" * 20000, None), ("a_key: " * 20000, None), ("--" + "key-" * 40000 + " x", None),
    ("'key'" * 30000, None), ("password=" * 20000, "password=" + MARK),
    ("-----BEGIN RSA PRIVATE KEY-----\n" * 3000, None), ("https://" + "a:" * 40000 + "@", "https://a:" + MARK + "@"),
    ("Bearer " * 30000, None), ("x" * 200000 + "token", None), ("key" * 60000, None), ("token_" * 30000 + "=x", None),
    (("A" * 64 + " ") * 3000, None)],
    ids=lambda s: f"{s[:12]!r}x{len(s)}" if isinstance(s, str) else "")
def test_hostile_strings_are_read_as_what_they_are(s, want):
    """Strings built to make a backtracking matcher explode: each is read once, to the exact result
    (None: nothing secret in it; a repeated 'password=' is one secret value, a URL's repeated
    user:password pairs one password)."""
    want = s if want is None else want
    assert redact(s) == want
    assert redact_lines(s.split("\n")) == want.split("\n")


def test_non_secret_strings_cost_one_search(monkeypatch):
    """200k strings of a big report that hold no secret-like word: one hint search over all of them
    (the 20,000 lines and the 6,001 keys), no rule run, and the report itself returned untouched."""
    lines = [f"[rank{i % 8}]: iteration {i} | lm loss: 2.{i % 97} | elapsed time per iteration (ms): 812.3"
             for i in range(20000)]
    d = {"findings": [{"evidence_detail": [{"before": lines[i:i + 5], "after": lines[i + 5:i + 10]}]}
                      for i in range(0, 20000, 10)]}
    searches, real = [], R._hint_many
    monkeypatch.setattr(R, "_hint_many", lambda strings: searches.append(len(strings)) or real(strings))
    monkeypatch.setattr(R, "_hint", lambda text: pytest.fail(f"a per-string search for {text!r}"))
    assert redact_obj(d) is d
    assert searches == [26001]


def test_a_url_querys_token_is_redacted_like_access_token():
    """Issue 22: `?token=` / `&token=` in a URL query is a credential whatever it looks like; a
    tokenizer's `token=` outside a query is not."""
    from triage.redact import redact
    assert redact("GET https://hub.example.com/api/x?token=s3cr3tvalue1234&page=2") == \
        "GET https://hub.example.com/api/x?token=<redacted>&page=2"
    assert redact("see http://a.b/c?x=1&token=abc123") == "see http://a.b/c?x=1&token=<redacted>"
    assert redact("http://a.b/c?access_token=abc123&page=2") == "http://a.b/c?access_token=<redacted>&page=2"
    assert redact("pad token=abc123") == "pad token=abc123"
