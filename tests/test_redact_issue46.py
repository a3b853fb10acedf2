"""Issue 46's redaction gaps and issue 45's "never rewrite triage's own messages": each secret is the
message of an exception that ends a rank's log (each on its own rank), and nothing of the value may be
left in any format `triage analyze` prints; the value is redacted to its end as its format delimits it
(a password in prose to the end of the line or the next `name=`, a URL query's value to `&`).

The signed URLs are the documented examples of each cloud (facts, not code): AWS S3 SigV4 query
authentication (docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html), Azure Storage
SAS (learn.microsoft.com .../create-service-sas), Google Cloud Storage V4 signing
(cloud.google.com/storage/docs/access-control/signing-urls-manually), CloudFront canned policy."""
import os

import pytest

from triage.redact import MARK, redact

from inproc import run

ENV = {**os.environ, "TRIAGE_DB": ""}

AWS = ("https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
       "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
       "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
       "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
AZURE = ("https://myaccount.blob.core.windows.net/sascontainer/sasblob.txt?sv=2019-02-02&st=2019-04-29T22%3A18%3A26Z"
         "&se=2019-04-30T02%3A23%3A26Z&sr=b&sp=rw&spr=https&sig=koLniLcK0tMLuMfYeuSQwB%2bBLnWibhPqnrINxaIRbvU%3d")
GCS = ("https://storage.googleapis.com/example-bucket/cat.jpeg?X-Goog-Algorithm=GOOG4-RSA-SHA256"
       "&X-Goog-Credential=example%40example-project.iam.gserviceaccount.com%2F20181026%2Fus-central1%2Fstorage"
       "%2Fgoog4_request&X-Goog-Date=20181026T181309Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host"
       "&X-Goog-Signature=247a2aa45f169edf4d187d54e7cc46e4731b1e6273242c4f4c39a1d2507a0e58706e25e3a85a7dbb891d62afa849")
CLOUDFRONT = ("https://d111111abcdef8.cloudfront.net/image.jpg?Expires=1357034400"
              "&Signature=nitfHRCrtziwO2HwPfWw~yYDhUF5EwRunQA-j19DzZrvDh6hQ73lDx~-ar3UocvvRQVw6EkC~GdpGQyyOSKQim-TxAnW7d8F5"
              "&Key-Pair-Id=APKA9ONS7QCOWEXAMPLE")

# (the exception message, the parts of its value that must not be printed, the parts that must stay)
CASES = [
    ("password=Tr0ub4dor&3xyz", ["Tr0ub4dor", "&3xyz", "3xyz"], ["password="]),
    ("pass=Sp ace Pass", ["Sp ace", "ace Pass"], ["pass="]),
    (f"could not read {AWS}", ["AKIAIOSFODNN7EXAMPLE", "aws4_request", "aeeed9bbccd4d02ee5c0"],
     ["X-Amz-Signature=" + MARK, "X-Amz-Credential=" + MARK, "X-Amz-Date=20130524T000000Z"]),
    (f"403 Forbidden {AZURE}", ["koLniLcK0tMLuMfYeuSQwB", "IaxRbvU", "aIRbvU"], ["sig=" + MARK, "sp=rw"]),
    (f"403 Forbidden {GCS}", ["247a2aa45f169edf", "gserviceaccount.com%2F20181026"],
     ["X-Goog-Signature=" + MARK, "X-Goog-Credential=" + MARK, "X-Goog-Expires=900"]),
    (f"403 Forbidden {CLOUDFRONT}", ["nitfHRCrtziwO2HwPfWw"], ["Signature=" + MARK, "Key-Pair-Id="]),
    ("passwd Hunter2Hunter2", ["Hunter2"], ["passwd " + MARK]),
    ("login failed: password%3DUrlEnc0dedPass", ["UrlEnc0dedPass"], ["password%3D" + MARK]),
    ("bad form: user%3Dbob%26password%3DUrlEnc0dedPass%26next%3D%2Fhome", ["UrlEnc0dedPass"],
     ["%26next%3D%2Fhome", "user%3Dbob"]),
]


@pytest.mark.parametrize("message,gone,kept", CASES, ids=[c[0][:24] for c in CASES])
@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_each_secret_as_a_ranks_exception_is_redacted_whole(tmp_path, message, gone, kept, fmt):
    rank = CASES.index(next(c for c in CASES if c[0] == message)) + 1
    log = tmp_path / "job.log"
    log.write_text(f"[rank0]: iteration 1/10 | loss 2.0\n[rank{rank}]: Traceback (most recent call last):\n"
                   f"[rank{rank}]:   File \"train.py\", line 10, in <module>\n"
                   f"[rank{rank}]: RuntimeError: {message}\n")
    r = run(["analyze", str(log), "--format", fmt], env=ENV)
    assert r.returncode == 3, (r.stdout, r.stderr)
    out = r.stdout + r.stderr
    assert MARK in out, out
    for g in gone:
        assert g not in out, (g, out)
    for k in kept if fmt == "json" else ():     # (the text formats clip a long message)
        assert k in out, (k, out)


@pytest.mark.parametrize("text", [
    "x?password=abc123xyz&b=1",                 # a URL query: `&` ends the value, the next pair stays
    "password=hunter2 user=bob",               # the next `name=` pair ends a prose value
])
def test_the_value_ends_where_its_format_ends_it(text):
    out = redact(text)
    assert "hunter2" not in out and "abc123xyz" not in out
    assert out.endswith(("&b=1", " user=bob")), out


@pytest.mark.parametrize("text", [
    "password authentication failed for user \"train\"", "cat /etc/passwd", "num_pass=3", "pass: 2/3",
    "forward pass took 12.5 ms", "Password reset required",
])
def test_words_that_are_no_password_are_left_alone(text):
    assert redact(text) == text


def test_triage_never_redacts_its_own_messages():
    """Issue 45: `check-config` with nothing to check said `KEY=<redacted>`; the tool's text is never
    redacted, the user's inputs in a message are (a token in an -o name)."""
    r = run(["check-config"], env=ENV)
    assert r.returncode == 2 and "give a config file or KEY=VALUE overrides" in r.stderr, r.stderr
    token = "hf_" + "abcdefghijklmnopqrstuvwxyz012345"
    r = run(["analyze", "-", "-o", f"/nonexistent-dir/{token}.zzz"], input="iteration 1/2\n", env=ENV)
    assert r.returncode == 2 and token not in r.stderr and MARK in r.stderr, r.stderr


def test_a_newline_in_an_output_name_is_escaped(tmp_path):
    out = tmp_path / "a\nb.txt"
    r = run(["analyze", "-", "-o", str(out)], input="iteration 1/2\n", env=ENV)
    assert r.returncode == 0 and out.exists()
    assert r.stderr.count("\n") == 1 and "a\\nb.txt" in r.stderr, r.stderr
    r = run(["analyze", "-", "-o", str(tmp_path / "a\nb.zzz")], input="iteration 1/2\n", env=ENV)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
