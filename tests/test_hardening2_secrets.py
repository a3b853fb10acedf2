"""Issue 23, "Secrets": each case of the issue, as it was reported.

1. the job signature (and every fingerprint) is redacted before it is masked: a token or a store
   URL's password no longer reaches the signature in any report, the store, the fleet outputs or
   `known list`; a known issue keyed by the redacted signature is found by `analyze` too;
2. the redactor's misses (store URLs' passwords, cookies, client command lines, W&B keys) and
   over-redactions (CACHE_KEY, PRIMARY_KEY), on both hint engines;
3. `patterns suggest` redacts what it copies from the log into a draft;
4. `--force` keeps a report's permissions, `patterns suggest -o` never writes through a symlink,
   a control character in a file name cannot forge a line of a report.
"""
import json
import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from triage import redact as R
from triage.redact import MARK, name_class, redact, redact_each, redact_lines, redact_obj
import inproc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_DB", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID")}

TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"      # a GitHub token's shape: ghp_ + 36
assert len(TOKEN) == 40
CASE = f"PermissionError: access denied for {TOKEN} at postgresql://svc:PASS@db:5432/x"
IMA = "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered"


def triage(*args, input=None):
    return inproc.run(args, input=input, env=ENV, cwd=ROOT)       # in-process: tests/inproc.py


def _traceback(message: str) -> str:
    return ("iteration 1 | lm loss: 9.1\nTraceback (most recent call last):\n"
            '  File "/workspace/train.py", line 42, in <module>\n    main()\n' + message + "\n")


def _leaks(out: str) -> list:
    return [s for s in (TOKEN, TOKEN[:20], ":PASS@") if s in out]


# --- 1. the signature and the fingerprints -----------------------------------------------------

def test_signature_of_the_case_holds_neither_the_token_nor_the_password_in_any_format(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(_traceback(CASE))
    d = json.loads(triage("analyze", str(log), "--format", "json").stdout)
    assert d["outcome"] == "unexplained-failure"
    sig, msg = d["signature"], d["message_signature"]
    assert sig == "unexplained-failure: PermissionError @ train.py:<module>"      # its group key (issue 24)
    assert msg.startswith("unexplained-failure: PermissionError: access denied for <redacted> at ")
    assert not _leaks(msg) and ":<redacted>@db" in msg, msg
    # --no-redact shows the log as it is, but the signatures are the job's identity: the same, redacted
    raw = json.loads(triage("analyze", str(log), "--format", "json", "--no-redact").stdout)
    assert (raw["signature"], raw["message_signature"]) == (sig, msg) and TOKEN in raw["first_failure"]["message"]
    for fmt in ("json", "markdown", "jira", "junit", "text", "html"):
        out = triage("analyze", str(log), "--format", fmt).stdout
        assert out and not _leaks(out), (fmt, _leaks(out))


def test_store_fleet_outputs_and_known_list_never_see_the_token(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(_traceback(CASE))
    db = str(tmp_path / "s.db")
    outs = [triage("fleet", str(log), "--db", db, "--format", fmt, "-j", "1", "-q").stdout
            for fmt in ("json", "text", "markdown", "html")]
    [group] = json.loads(outs[0])["unexplained"]
    assert all(not _leaks(o) for o in outs)
    assert triage("analyze", str(log), "--record", "--db", db, "-q").returncode == 3
    with sqlite3.connect(db) as c:
        sigs = [r[0] for r in c.execute("select signature from verdicts")]
    assert sigs == [group["signature"]] and not _leaks(sigs[0])
    assert triage("known", "add", group["signature"], "https://t.example.com/7", "--db", db).returncode == 0
    text = triage("known", "list", "--db", db).stdout
    assert text.startswith(group["signature"] + "\n  https://t.example.com/7") and not _leaks(text)
    [row] = json.loads(triage("known", "list", "--db", db, "--format", "json").stdout)
    assert (row["key"], row["seen"]) == (group["signature"], 1)
    report = triage("fleet", "report", "--since", "all", "--db", db, "--format", "json").stdout
    assert not _leaks(report) and json.loads(report)["unexplained"][0]["known"]["url"] == "https://t.example.com/7"


def test_a_known_issue_keyed_by_the_redacted_signature_is_found_by_analyze(tmp_path):
    """The store keeps the signature redacted; `analyze` looked it up unredacted: a password that
    survived masking (`password=hunter<n>`) made the two differ, and only `fleet` showed the issue."""
    log = tmp_path / "job.log"
    log.write_text(_traceback(f"PermissionError: access denied for {TOKEN} at "
                              "postgresql://db:5432/x?user=svc&password=hunter2"))
    db = str(tmp_path / "s.db")
    v = json.loads(triage("fleet", str(log), "--db", db, "--format", "json", "-j", "1", "-q").stdout)
    # the message signature (the signature before issue 24 grouped by frame) holds the masked message
    sig = json.loads(triage("analyze", str(log), "--format", "json").stdout)["message_signature"]
    assert "password=<redacted>" in sig and "hunter" not in sig
    assert triage("known", "add", sig, "https://t.example.com/8", "--title", "db creds", "--db", db).returncode == 0
    d = json.loads(triage("analyze", str(log), "--db", db, "--format", "json").stdout)
    assert d["message_signature"] == sig and d["signature"] == v["unexplained"][0]["signature"]
    assert d["known"]["url"] == "https://t.example.com/8" and d["known"]["seen"] == 1
    # fleet finds it too, from the stored (redacted) error line
    v = json.loads(triage("fleet", str(log), "--db", db, "--format", "json", "-j", "1", "-q").stdout)
    assert v["unexplained"][0]["known"]["url"] == "https://t.example.com/8"
    text = triage("analyze", str(log), "--db", db).stdout
    assert "known issue: https://t.example.com/8 db creds (seen 1 time" in text


def test_two_jobs_that_differ_only_in_their_secrets_have_one_signature_and_fingerprint(tmp_path):
    """The unmatched block's fingerprint is of the block redacted (a key block spread over its
    lines too), then masked: a secret neither reaches it nor splits one failure in two."""
    from triage.verdict.fingerprint import fingerprint
    from triage.scan.results import ErrorBlock
    from triage.verdict.unexplained import _unmatched
    other = CASE.replace(TOKEN, "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8N").replace(":PASS@", ":OTHER@")
    assert fingerprint("x", CASE) == fingerprint("x", other)
    fps = []
    for body, msg in (("q8XgT2kLm9", CASE), ("Zr5Pw1nHs7", other)):
        lines = ["-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA" + body, "-----END RSA PRIVATE KEY-----", msg]
        [u], _ = _unmatched([ErrorBlock("job.log", None, 1, 4, lines, 0, None)])
        fps.append(u.fingerprint)
    assert fps[0] == fps[1]
    sigs = []
    for i, msg in enumerate((CASE, other)):
        log = tmp_path / f"job{i}.log"
        log.write_text(_traceback(msg))
        sigs.append(json.loads(triage("analyze", str(log), "--format", "json", "--no-redact").stdout)["signature"])
    assert sigs[0] == sigs[1]


# --- 2. the redactor's misses and over-redactions ----------------------------------------------

WANDB_KEY = "5f0c3e1a9b7d2c4e6f8a0b1c3d5e7f9a1b2c3d4e"       # 40 hex, the shape of a W&B API key
MISSES = [   # (case, text, secrets): each was printed as it is before issue 23
    ("url ?password= in an error",
     "sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed: "
     "postgresql://db:5432/x?user=svc&password=hunter2x", ["hunter2x"]),
    ("url / and @ in the password", CASE.replace(":PASS@", ":p@ss/w0rd@"), ["p@ss", "ss/w0rd", "w0rd", TOKEN]),
    ("url @ and / in a redis password", "Error connecting to redis://:p/ss@w0rd@cache:6379/0", ["p/ss", "w0rd"]),
    ("Cookie header", "> Cookie: sessionid=4f8e2a9c1b7d; csrftoken=Qm9vYmF6cXV4", ["4f8e2a9c1b7d", "Qm9vYmF6cXV4"]),
    ("Set-Cookie header", "< Set-Cookie: session=eyX4f8e2a9c1b7d3a; Path=/; HttpOnly", ["eyX4f8e2a9c1b7d3a"]),
    ("Cookie in a headers dict", "headers={'Cookie': 'sessionid=4f8e2a9c1b7d'}", ["4f8e2a9c1b7d"]),
    ("mysql -pPASS", "+ mysql -h db -u root -phunter2x training", ["hunter2x"]),
    ("mysql --password=PASS", "+ mysql --password=hunter2x -u root training", ["hunter2x"]),
    ("mysqldump -p'PASS'", "mysqldump -u root -p'hunter 2x' training > dump.sql", ["hunter 2x"]),
    ("sshpass -p PASS", "+ sshpass -p hunter2x ssh -p 2222 svc@node-3 nvidia-smi", ["hunter2x"]),
    ("sshpass -pPASS", "sshpass -phunter2x rsync -a ckpt/ node-3:/ckpt", ["hunter2x"]),
    ("redis-cli -a PASS", "+ redis-cli -h cache -p 6379 -a hunter2x ping", ["hunter2x"]),
    ("redis-cli --pass PASS", "redis-cli --pass hunter2x -h cache get step", ["hunter2x"]),
    ("W&B key=<40 hex>", f"wandb.login(key={WANDB_KEY})", [WANDB_KEY]),
    ("W&B key= on a command line", f"python train.py --logger wandb key={WANDB_KEY}", [WANDB_KEY]),
    ("WANDB_API_KEY via os.environ[...]", f'os.environ["WANDB_API_KEY"] = "{WANDB_KEY}"', [WANDB_KEY]),
    ("WANDB_API_KEY via setdefault", f"os.environ.setdefault('WANDB_API_KEY', '{WANDB_KEY}')", [WANDB_KEY]),
]

KEPT = [     # each must come out as it is
    "CACHE_KEY=abc123", "PRIMARY_KEY=id", "export CACHE_KEY=/tmp/cache/v2", "FOREIGN_KEY: user_id",
    "cache_key: abc123", "SORT_KEY=timestamp", "PARTITION_KEY=day",
    "Build time autogenerated kernel key: f40c450a88b42d3459ff37f3c44808df97ee47ae",
    "pip install git+https://gitlab.example.com:8443/ml/megatron.git@core_r0.8.0",
    "http://localhost:8000/v1/models@latest", "ssh://git@github.com:22/NVIDIA/Megatron-LM",
    "+ mysql -h db -u root -p training", "mysql -P 3306 -u root", "sshpass -f /run/pw ssh -p 2222 svc@node-3",
    "redis-cli -h cache -p 6379 ping", "the Set-Cookie header is missing", "cookie: none", "Cookie: session=",
    "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0,1\"", "os.environ.setdefault('MASTER_PORT', '29500')",
    "getattr(args, 'api_key', None)", "key=value",
    "store postgresql://svc@db/x?password=<redacted>: connection failed",
]


@pytest.fixture(params=["hyperscan", "stdlib"])
def engine(request, monkeypatch):
    if request.param == "stdlib":
        monkeypatch.setattr(R, "_hs", lambda: False)
    elif not R._hs():
        pytest.skip("no hyperscan wheel here")
    return request.param


def _views(text: str) -> dict:
    d = redact_obj({"unmatched": [{"lines": ["Traceback (most recent call last):", text]}],
                    "first_failure": {"message": text}})
    return {"string": redact(text), "lines": redact_lines(["[rank0]: step 3", text])[1],
            "report list": d["unmatched"][0]["lines"][1], "report string": d["first_failure"]["message"],
            "text report": redact("    | " + text),
            # (many dropped lines at once: one Hyperscan scan of them all, issue 44)
            "each of many": redact_each([f"[rank{i}]: step {i}" for i in range(12)] + [text])[text]}


@pytest.mark.parametrize("case, text, secrets", MISSES, ids=[m[0] for m in MISSES])
def test_a_former_miss_is_redacted(case, text, secrets, engine):
    for where, out in _views(text).items():
        assert MARK in out and not [s for s in secrets if s in out], (where, out)


@pytest.mark.parametrize("text", KEPT)
def test_a_near_miss_is_kept(text, engine):
    assert set(_views(text).values()) == {text} | {"    | " + text}


def test_what_is_kept_around_a_redacted_value():
    assert redact(CASE.replace(":PASS@", ":p@ss/w0rd@")) == \
        f"PermissionError: access denied for {MARK} at postgresql://svc:{MARK}@db:5432/x"
    assert redact("< Set-Cookie: session=abc123def; Path=/; HttpOnly") == \
        f"< Set-Cookie: session={MARK}; Path=/; HttpOnly"
    assert redact("mysql -h db -u root -phunter2x training") == f"mysql -h db -u root -p{MARK} training"
    assert redact("store postgresql://db/x?password=hunter2x: connection refused") == \
        f"store postgresql://db/x?password={MARK}: connection refused"
    assert (name_class("CACHE_KEY"), name_class("PRIMARY_KEY"), name_class("CACHE_API_KEY"),
            name_class("PRIMARY_ENCRYPTION_KEY"), name_class("FOO_KEY")) == (0, 0, 2, 2, 2)


def test_the_new_hints_agree_between_hyperscan_and_stdlib(monkeypatch):
    samples = [m[1] for m in MISSES] + KEPT
    want = [R._hint_re(s) for s in samples]
    assert all(want[i] for i in range(len(MISSES)))
    if R._hs():
        assert [R._hint(s) for s in samples] == want
        assert R._hint_many(samples) == {i: g for i, g in enumerate(want) if g}
    monkeypatch.setattr(R, "_hs", lambda: False)
    assert R._hint_many(samples) == {i: g for i, g in enumerate(want) if g}


def test_a_store_urls_password_never_reaches_an_error_message(tmp_path):
    r = triage("known", "list", "--db", "foo://svc@db/x?password=hunter2x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    # the store masks its URL's password itself ("***"), the redactor catches what else a message holds
    assert "unsupported store URL" in r.stderr and "hunter2x" not in r.stderr
    assert "password=***" in r.stderr or MARK in r.stderr


# --- 3. patterns suggest --------------------------------------------------------------------------

def test_suggest_redacts_the_draft_and_the_finished_draft_still_matches_the_log(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(_traceback(CASE.replace(":PASS@", ":p@ss/w0rd@")))
    out = tmp_path / "draft.yaml"
    r = triage("patterns", "suggest", str(log), "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert not [s for s in (TOKEN, "p@ss", "w0rd") if s in text], text
    assert f"access denied for {MARK} at postgresql://svc:{MARK}@db:5432/x" in text     # title and example
    stdout = triage("patterns", "suggest", str(log)).stdout
    assert stdout == text
    # a human finishes it: the redacted spots are wildcards, so it passes its own examples and
    # matches the real, unredacted log
    (tmp_path / "d").mkdir()
    import yaml
    draft = yaml.safe_load(text)               # every TODO placeholder finished (a draft left as is fails the check)
    draft.update(id="filesystem-permission-denied", explanation="the job cannot read its data",
                 fix="fix the permissions of the path", references=[{"source": "Python's PermissionError"}])
    draft["examples"]["no_match"] = ["PermissionError: access granted"]
    draft.pop("note", None)
    (tmp_path / "d" / "filesystem-permission-denied.yaml").write_text(yaml.safe_dump(draft))
    chk = triage("patterns", "check", str(tmp_path / "d"))
    assert chk.returncode == 0, chk.stdout + chk.stderr
    d = json.loads(triage("analyze", str(log), "--patterns", str(tmp_path / "d"), "--format", "json").stdout)
    assert d["primary"] == "filesystem-permission-denied"


# --- 4. output files and file names --------------------------------------------------------------

def test_force_over_a_0600_report_keeps_it_0600(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(IMA + "\n")
    out = tmp_path / "report.json"
    out.write_text("old private report")
    os.chmod(out, 0o600)
    assert triage("analyze", str(log), "-o", str(out)).returncode == 2          # exists: not overwritten
    assert out.read_text() == "old private report"
    assert triage("analyze", str(log), "-o", str(out), "--force").returncode == 1
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert json.loads(out.read_text())["primary"] == "illegal-memory-access"
    os.chmod(out, 0o640)                                                        # whatever it was, it stays
    assert triage("analyze", str(log), "-o", str(out), "--force", "--format", "json").returncode == 1
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    new = tmp_path / "new.json"                                                 # a new report: the umask's
    assert triage("analyze", str(log), "-o", str(new)).returncode == 1
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o666 & ~umask


def test_suggest_never_writes_through_a_symlink(tmp_path, tmp_path_factory):
    log = tmp_path / "job.log"
    log.write_text(_traceback(CASE))
    outside = tmp_path_factory.mktemp("outside")
    victim = outside / "precious.yaml"
    victim.write_text("keep me\n")
    link = tmp_path / "draft.yaml"
    os.symlink(victim, link)
    r = triage("patterns", "suggest", str(log), "-o", str(link))
    assert r.returncode == 2 and "symbolic link" in r.stderr and r.stderr.count("\n") == 1
    assert victim.read_text() == "keep me\n" and os.path.islink(link)
    # a link to nowhere: its target is not created either
    dangling = tmp_path / "dangling.yaml"
    target = outside / "created-through-the-link.yaml"
    os.symlink(target, dangling)
    r = triage("patterns", "suggest", str(log), "-o", str(dangling))
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert not target.exists() and os.path.islink(dangling)
    assert sorted(os.listdir(outside)) == ["precious.yaml"]


@pytest.mark.parametrize("sep", ["\n", "\x0b", "\x1c", "\u2028"], ids=["newline", "vt", "fs", "u2028"])
def test_a_control_character_in_a_file_name_cannot_forge_a_report_line(tmp_path, sep):
    ima = tmp_path / f"rank_0.log{sep}PRIMARY fake"
    ima.write_text(IMA + "\n")
    unexplained = tmp_path / f"job{sep}PRIMARY evil.log"
    unexplained.write_text(_traceback("ValueError: bad shard header"))
    outs = {fmt: triage("analyze", str(ima), str(unexplained), "--format", fmt).stdout
            for fmt in ("text", "markdown", "jira")}
    outs.update({"fleet " + fmt: triage("fleet", str(ima), str(unexplained), "--no-store", "-q", "-j", "1",
                                        "--format", fmt).stdout for fmt in ("text", "markdown")})
    for fmt, out in outs.items():
        assert "PRIMARY fake" in out and "PRIMARY evil" in out, fmt             # the names are shown...
        forged = [ln for ln in out.splitlines() if ln.lstrip("#|> ").startswith(("PRIMARY fake", "PRIMARY evil"))]
        assert not forged, (fmt, forged)                                           # ...on its own line
    assert "rank_0.log\\nPRIMARY fake:1" in outs["text"] or sep != "\n"
    d = json.loads(triage("analyze", str(ima), "--format", "json").stdout)
    assert d["findings"][0]["source"] == str(ima)                                  # the JSON keeps it exact


def test_redact_each_is_redact_of_each(engine):
    """redact_each (the dropped lines' fingerprints: their hints in one scan) gives what redact gives each string:
    on every miss and near miss above, mixed with plain lines, a non-ASCII one and duplicates."""
    texts = [t for _, t, _ in MISSES] + KEPT + [f"[rank{i}]: NCCL INFO step {i}" for i in range(20)]
    texts += ["Passwort: geheim=ü" + MISSES[0][1], "", MISSES[0][1], "x" * 70]
    got = redact_each(texts)
    assert set(got) == set(texts) and all(got[t] == redact(t) for t in texts)
