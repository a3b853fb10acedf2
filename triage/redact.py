"""Secret redaction for every output format (on by default; `--no-redact` turns it off).

What is redacted (tests/test_redact_recall.py measures each family on a table of real formats):

* tokens recognisable on their own: AWS access key ids (AKIA/ASIA/...), GitHub (ghp_/gho_/ghu_/
  ghs_/ghr_/github_pat_), GitLab (glpat-, gldt-, glrt-, GR1348941, ...), Slack (xox?-, xapp-,
  webhook URLs), Hugging Face (hf_, api_org_), NVIDIA/NGC (nvapi-), OpenAI/Anthropic (sk-),
  Stripe, npm, PyPI, Docker Hub, Databricks, Google (AIza, ya29.), Vault, SendGrid, Replicate,
  Groq, age, JWTs;
* values of secret-named keys: `NAME=VALUE`, `NAME: VALUE`, `"NAME": "VALUE"`, `--name VALUE`,
  `setenv NAME VALUE`, Megatron's `name ..... VALUE`, YAML lines, `name: old -> new`, and the
  dict keys of the report itself (and the old/new of a `{"key": NAME, ...}` change);
* `Authorization:` / `Bearer` credentials, passwords in URLs (`scheme://user:PASSWORD@host`),
  netrc `password`, `docker login -p`, `wandb login KEY`, `wandb.login(key=...)`, Azure SAS `sig=`;
* PEM / OpenSSH / PGP private key blocks: every line between BEGIN and END, whether the block is
  one string (escaped or real newlines) or consecutive strings of a list (see `redact_lines`).

Key names are matched on whole words (split at `_ - .` and camelCase), the secret word last:
`HF_TOKEN`, `wandb_api_key`, `aws_secret_access_key`, `clientSecret`, `PGPASSWORD` are secret
names; `tokenizer_type`, `max_tokens`, `num_key_value_heads`, `moe_token_dispatcher_type`,
`keyframe`, `text_key` are not.  A lower-case `..._token` that is not an access token by its
qualifier (`fim_pad_token`, `bos_token`) loses its value only when the value looks like a
credential (16+ characters of letters and digits), never `<fim_pad>` or `False`.

Speed: a string is first searched for the hints every rule needs (literals such as `token`, `://`,
`ghp_`, and a run of 64 base64 characters: one C-level search, Hyperscan when the wheel is there,
else one stdlib `re` over the lower-cased string); only the rules of the hints found then run,
each with the `regex` timeout or linear by construction.  `redact_obj` searches all the strings of
a report in one Hyperscan scan and rebuilds only the dicts and lists that hold a hit.
"""
from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from functools import lru_cache
from itertools import accumulate
from operator import add
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Literal,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from .lazyre import lazy_re
from .match.rx import TIMEOUT, LazyRx, lazy, regex

if TYPE_CHECKING:
    from hyperscan import Database, Scratch

MARK = "<redacted>"
WITHHELD = MARK + " (line withheld: redaction timed out)"

# ----------------------------------------------------------------------------------------------
# hints: literal (lower-case) substrings, each naming the rule groups that need it.  Every rule
# below needs one of its group's literals, so a string with none of them skips every rule.

KV, AUTHZ, BEARER, URL, TOKENS, PEM, WANDB, DOCKER, SAS, B64, COOKIE, CLIPW = range(12)

_HINTS: Dict[str, Tuple[int, ...]] = {
    "token": (KV,), "secret": (KV,), "passw": (KV,), "passphr": (KV,), "pwd": (KV,), "key": (KV,),
    "auth": (KV, AUTHZ), "bearer": (BEARER,), "://": (URL,),
    "-----begin": (PEM,), "---- begin": (PEM,), "-----end": (PEM,), "---- end": (PEM,), "private-lines:": (PEM,),
    "wandb": (WANDB,), "docker": (DOCKER,), "sig=": (SAS,), "signature=": (SAS,), "credential=": (SAS,),
    "pass=": (KV,), "pass =": (KV,), "pass%3d": (KV,), "cookie": (COOKIE,),
    "mysql": (CLIPW,), "mariadb": (CLIPW,), "sshpass": (CLIPW,), "redis-cli": (CLIPW,),
}
for _lit in ("akia", "asia", "abia", "acca", "a3t", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
             "glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-", "glsoat-", "glffct-", "glimt-",
             "glagent-", "glft-", "glwt-", "gr1348941", "xox", "xapp-", "hf_", "api_org_", "nvapi-",
             "sk-", "k_live_", "k_test_", "npm_", "pypi-", "dckr_pat_", "dapi", "ya29.", "aiza",
             "hvs.", "hvb.", "sg.", "r8_", "gsk_", "age-secret", "eyj"):
    _HINTS[_lit] = (TOKENS,)
_LITS: List[str] = list(_HINTS)


def _trie(words: Sequence[str]) -> str:
    """An alternation of literals factored by prefix (the stdlib engine tries far fewer branches)."""
    t: Dict[str, Any] = {}
    for w in words:
        d = t
        for c in w:
            d = d.setdefault(c, {})
        d[""] = {}

    def emit(d: Dict[str, Any]) -> str:
        alts = [re.escape(c) + emit(sub) for c, sub in sorted(d.items()) if c]
        if not alts:
            return ""
        end = "" in d        # a literal ends here: the shortest hint is enough
        if end:
            return ""
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return emit(t)


_HINT = lazy_re(_trie(_LITS))       # searched in the lower-cased string


def _groups_of(found: Iterable[str]) -> FrozenSet[int]:
    g: Set[int] = set()
    for lit in found:
        g.update(_HINTS[lit])
    return frozenset(g)


def _groups_of_ids(ids: Iterable[int]) -> FrozenSet[int]:
    g: Set[int] = set()
    for j in ids:
        g.update(_ID_GROUPS[j])
    return frozenset(g)


# a line that is only base64 of a key block's width (64: PEM, 70: OpenSSH, 76: MIME), a block
# whose BEGIN and END are both out of sight; the hint is a run of 64 such characters
_B64_RUN = lazy_re(r"[A-Za-z0-9+/]{64}")
_B64_HS = rb"(?:^|[^A-Za-z0-9+/=])[A-Za-z0-9+/]{64}(?:[A-Za-z0-9+/]{6}|[A-Za-z0-9+/]{12})?(?:[^A-Za-z0-9+/=]|$)"


def _hint(text: str) -> FrozenSet[int]:
    """The rule groups a string needs (empty: nothing secret-like in it)."""
    hs = _hs()
    if hs:
        db, scratch = hs
        found: List[int] = []

        def on_hit(lit_id: int, _from: int, _to: int, _flags: int, _ctx: object) -> None:
            found.append(lit_id)
        try:
            db.scan(text.encode("utf-8", "surrogatepass"), match_event_handler=on_hit, scratch=scratch)
        except Exception:  # noqa: BLE001 - e.g. the scratch busy in another thread
            return _hint_re(text)
        return _groups_of_ids(found) if found else _NONE
    return _hint_re(text)


def _hint_re(text: str) -> FrozenSet[int]:
    low = text.lower()
    m = _HINT.search(low)
    b64 = len(text) >= 64 and _B64_RUN.search(text) is not None
    if m is None:
        return _B64_ONLY if b64 else _NONE
    g = _groups_of(_HINT.findall(low, m.start()))
    return g | _B64_ONLY if b64 else g


_NONE: FrozenSet[int] = frozenset()
_B64_ONLY: FrozenSet[int] = frozenset((B64,))
_ID_GROUPS: List[Tuple[int, ...]] = [_HINTS[x] for x in _LITS] + [(B64,)]     # Hyperscan ids


# Hyperscan for many strings at once (redact_obj), built on first use and cached (lru_cache):
# False when not available, else (database, scratch).  (tests monkeypatch _hs to the fallback.)
_HsDb = Tuple["Database", "Scratch"]


@functools.lru_cache(maxsize=1)
def _hs() -> Union[Literal[False], _HsDb]:
    try:
        import hyperscan

        from .match import anchors
        exprs = [_hs_literal(x) for x in _LITS] + [_B64_HS]
        flags = [hyperscan.HS_FLAG_CASELESS] * len(_LITS) + [0]
        key = anchors.db_key("redact", exprs, flags)
        db = anchors.load_cached(key) if anchors.hyperscan_available() else None
        if db is None:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
            if anchors.hyperscan_available():
                anchors.store_cached(key, db)
        return (db, hyperscan.Scratch(db))
    except Exception:  # noqa: BLE001 - no wheel, or it cannot compile here: the stdlib search
        return False


def _hs_literal(lit: str) -> bytes:
    return b"".join(bytes([c]) if chr(c).isalnum() else b"\\x%02x" % c for c in lit.encode())


def _hint_many(strings: List[str]) -> Dict[int, FrozenSet[int]]:
    """{index: rule groups} for the strings that hold a hint (one Hyperscan scan of them all)."""
    hs = _hs() if len(strings) > 8 else False
    if not hs:
        memo: Dict[str, FrozenSet[int]] = {}
        out = {}
        for i, s in enumerate(strings):
            g = memo.get(s)
            if g is None:
                g = memo[s] = _hint_re(s)
            if g:
                out[i] = g
        return out
    db, scratch = hs
    # one byte per character (a non-ASCII character reads as "?"), one newline between strings
    data = "\n".join(strings).encode("ascii", "replace")
    starts = list(map(add, accumulate(map(len, strings), initial=0), range(len(strings) + 1)))
    found: Dict[int, Set[int]] = {}

    def on(lit_id: int, _from: int, to: int, _flags: int, _ctx: Any) -> None:
        found.setdefault(bisect_right(starts, to - 1) - 1, set()).add(lit_id)

    try:
        db.scan(data, match_event_handler=on, scratch=scratch)
    except Exception:  # noqa: BLE001 - e.g. the scratch busy in another thread: the stdlib search
        return _hint_many(strings[:8]) if len(strings) <= 8 else {
            i: g for i, g in ((i, _hint_re(x)) for i, x in enumerate(strings)) if g}
    return {i: _groups_of_ids(ids) for i, ids in found.items()}


# ----------------------------------------------------------------------------------------------
# key names: whole words, the secret word last

_WORD = lazy_re(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ALWAYS = {"password", "passwd", "passphrase", "secret"}
# words that make `..._token` / `..._key` an access credential (not a tokenizer token, a dict key)
_CRED = {"access", "auth", "api", "app", "bearer", "refresh", "session", "id", "oauth", "oauth2", "private",
         "personal", "pat", "security", "secret", "service", "client", "bot", "user", "login", "admin",
         "write", "read", "deploy", "job", "trigger", "runner", "registration", "webhook", "cloud", "sas",
         "jwt", "csrf", "xsrf", "hf", "hub", "huggingface", "github", "gh", "gitlab", "gl", "slack",
         "wandb", "ngc", "nvidia", "nvapi", "npm", "pypi", "docker", "registry", "vault", "openai",
         "anthropic", "kaggle", "comet", "neptune", "mlflow", "databricks", "aws", "azure", "gcp", "google",
         "discord", "telegram", "twilio", "stripe", "sendgrid", "mailgun", "cohere", "mistral", "groq",
         "together", "replicate", "pinecone", "gemini", "deepseek", "fireworks", "perplexity", "clearml",
         "account", "master", "encryption", "decryption", "signing", "license", "ssh", "storage",
         "subscription", "shared", "consumer", "hmac", "crypto", "x"}


@lru_cache(maxsize=4096)
def name_class(name: str) -> int:
    """2: a secret name (its value is redacted), 1: a secret name only if the value looks like a
    credential (a lower-case `..._token` of no credential qualifier), 0: not a secret name."""
    words = _WORD.findall(name)
    if not words:
        return 0
    ws = [w.lower() for w in words]
    _split_secret_suffix(ws)
    return _words_class(ws, name.rsplit(".", 1)[-1])


def _split_secret_suffix(ws: List[str]) -> None:
    """A last word that ends in a secret word after a credential qualifier (apikey) or is an
    always-secret word with a prefix (PGPASSWORD) is split in two, in place."""
    last = ws[-1]
    for suf in ("password", "passwd", "passphrase", "secret", "token", "key"):
        if last != suf and last.endswith(suf):
            pre = last[:-len(suf)]
            if suf in _ALWAYS or pre in _CRED:
                ws[-1:] = [pre, suf]
            break


# words that make `..._KEY` a key into data (a cache, a table, a sort), even in capitals
_DATA_KEY = {"cache", "primary", "foreign", "sort", "partition", "shard", "sharding", "routing", "dedup", "dedupe",
             "idempotency", "lookup", "index", "unique", "composite", "surrogate", "row", "column", "dict", "map",
             "group", "grouping", "join", "cluster", "clustering", "order", "json", "text", "label", "metric",
             "cursor", "pagination", "range", "attention", "query"}

_LAST_WORD_CLASS = {"auth": 1,            # docker config.json "auth": base64(user:password)
                    "authorization": 2}


def _words_class(ws: List[str], tail: str) -> int:
    """name_class of a name's lower-cased words; `tail`: the name's part after its last dot."""
    last = ws[-1]
    prev = ws[-2] if len(ws) > 1 else ""
    caps = tail.upper() == tail                     # an environment variable: HF_TOKEN, MY_API_KEY
    if last in _ALWAYS:
        return 2
    if last in ("token", "key"):
        if last == "key" and prev in _DATA_KEY and not (set(ws[:-2]) & _CRED):
            return 0                  # CACHE_KEY, PRIMARY_KEY: a key into data, not a credential
        return 2 if caps or prev in _CRED else (1 if last == "token" else 0)
    if last == "pass":                # DB_PASS=..., pass=...: a secret only after `=` (_kv_at), never `pass: 3`
        return 2
    if last == "pwd":                 # MYSQL_PWD, never PWD or env.PWD (the working directory)
        return 2 if len(_WORD.findall(tail)) > 1 else 0
    if last == "id":                                                         # aws_access_key_id
        return 2 if prev == "key" and len(ws) > 2 and ws[-3] in _CRED else 0
    return _LAST_WORD_CLASS.get(last, 0)


_PLACEHOLDER = lazy_re(r"(?i)(?:none|null|nil|undefined|true|false|yes|no|on|off|value|\**|x+|\.+|#+|\?+|-+"
                          r"|<[^<>]*>|\[[^\[\]]*\]|\$\{[^}]*\}|\$\(.*\)|\$[A-Za-z_]\w*|%\w+%|\{\{.*\}\})")
_CREDLIKE = lazy_re(r"(?=[^0-9]*[0-9])(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9_\-.+/=~]{16,}")


def _keep_value(v: str, cls: int) -> bool:
    """True when the value of a secret name is not to be redacted (empty, None, a placeholder,
    already redacted; for class 1 also anything that does not look like a credential)."""
    v = v.strip()
    if not v or MARK in v or _PLACEHOLDER.fullmatch(v):
        return True
    return cls == 1 and not _CREDLIKE.fullmatch(v)


# ----------------------------------------------------------------------------------------------
# rules: `regex` patterns (lazy) run with its timeout; the stdlib ones are linear (said at each)

_VAL = r"""(?P<val>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|\$\{[^}\s]*\}|(?![{\[(])[^\s'",;}\]&)]+)"""
_NAMEHINT = r"(?=[\w.\-]*?(?i:token|secret|pass|pwd|key|auth))"
# _KV and _KVVAL are stdlib patterns, linear: _kv_rule matches _KV once per name (a maximal run of
# name characters), and its cost is the name (the look-ahead and the back-tracking to the separator
# stay inside it) plus the blanks and dots after it; _KVVAL runs once per secret name, from the end
# of its separator, and what it matches is consumed (its alternatives are disjoint single passes).
_KV = lazy_re(r"""(?:(?<![\w.\-$@/])|(?<=%26|%3[Ff]))(?:
    (?P<flag>--?""" + _NAMEHINT + r"""[A-Za-z][\w.\-]*)(?:[ \t]*=[ \t]*|[ \t]+)(?=[^\s\-])
  | (?P<q>["']?)""" + _NAMEHINT + r"""(?P<name>[A-Za-z_][\w.\-]*)(?P=q)
    (?P<sep>[ \t]*[:=][ \t]*|%3[Dd]|[ \t]+\.{2,}[ \t]+|[ \t]+set\ by\ environment\ to[ \t]+
      |(?<=["'])\][ \t]*=[ \t]*|(?<=["']),[ \t]*(?=["']))
  | (?<=setenv[ \t])""" + _NAMEHINT + r"""(?P<env>[A-Za-z_]\w*)[ \t]+(?=\S)
)""", re.X)
_KVVAL = lazy_re(_VAL)
_NETRC = lazy(r"(?i)\b(?:login|user(?:name)?)[ \t]+\S+[ \t]+(?:password|passwd)[ \t]+(?P<val>\S+)")
# a password after its word and a blank, `passwd Hunter2Hunter2` (a shell's history, a chpasswd script, a message):
# only a value of letters and digits both (never `password authentication failed`), not a path
_PWSPACE = lazy(r"""(?i)(?<![\w./\-])(?:password|passwd|passphrase)[ \t]+(?P<val>(?=[^\s/]*[0-9])(?=[^\s/]*[A-Za-z])"""
                r"""[A-Za-z0-9!#$%^&*+=@_.~\-]{6,}(?![^\s,;:)]))""")
_AUTHZ = lazy(r"""(?i)\b(?:proxy-)?authorization["']?[ \t]*[:=][ \t]*["']?(?:(?:basic|bearer|token|digest|bot|"""
              r"""negotiate|ntlm|apikey|sso-key|hoba|mutual|vapid|aws4-hmac-sha256|scram-sha-\d+)[ \t]+)?"""
              r"""(?P<val>[^\s"',;]+)""")
_BEARER = lazy(r"(?i)\bbearer[ \t]+(?P<val>[A-Za-z0-9._~+/\-]{8,}=*)")
# a URL's password may hold a `/` or an `@` (a store URL pasted unencoded, postgresql://svc:p@ss/w0rd@db:5432/x):
# it runs to the last `@` before a host (name or [IPv6], a port, then the end of the authority), unless it
# starts like a port and a path (https://host:8443/x@y is no password); else to the first `@`
_URL_HOST = r"""(?:[a-z0-9][a-z0-9.\-]*|\[[0-9a-f:.]+\])(?::\d{1,5})?(?=[/?#\s"'<>,;:)\]]|$)"""
_URL = lazy(r"""(?i)\b(?:[a-z][a-z0-9+.\-]*://(?:[^\s:/?#@"'<>]*:(?:(?P<val>(?!\d{1,5}[/?#])[^\s?#"'<>]+)@(?="""
            + _URL_HOST + r""")|(?P<val3>[^\s/?#"'<>]+)@)|(?P<user>[^\s:/?#@"'<>]{20,})@)"""
            r"""|https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>[A-Za-z0-9_/+\-]{16,})"""
            r"""|https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/(?P<path2>[A-Za-z0-9_\-]{16,}))""")
_TOKENS = lazy(r"""\b(?:
    (?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b
  | gh[pousr]_[A-Za-z0-9]{30,}\b
  | github_pat_[A-Za-z0-9_]{40,}\b
  | gl(?:pat|dt|ptt|rt|cbt|oas|soat|ffct|imt|agent|ft|wt)-[A-Za-z0-9_\-]{20,}
  | GR1348941[A-Za-z0-9_\-]{20,}
  | xox[abposre](?:\.xox[bp])?-[A-Za-z0-9\-]{10,}
  | xapp-\d-[A-Za-z0-9\-]{20,}
  | hf_[A-Za-z0-9]{20,}\b
  | api_org_[A-Za-z0-9]{20,}\b
  | nvapi-[A-Za-z0-9_\-]{40,}
  | sk-(?=[A-Za-z_\-]*[0-9])[A-Za-z0-9_\-]{20,}
  | [sr]k_(?:live|test)_[A-Za-z0-9]{16,}\b
  | npm_[A-Za-z0-9]{36}\b
  | pypi-AgE[A-Za-z0-9_\-]{50,}
  | dckr_pat_[A-Za-z0-9_\-]{20,}
  | dapi[a-f0-9]{32}(?:-\d)?\b
  | ya29\.[A-Za-z0-9_\-]{20,}
  | AIza[A-Za-z0-9_\-]{35}
  | hv[sb]\.[A-Za-z0-9_\-]{24,}
  | SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}
  | r8_[A-Za-z0-9]{30,}\b
  | gsk_[A-Za-z0-9]{40,}\b
  | AGE-SECRET-KEY-1[0-9A-Z]{58}\b
  | eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*
)""", re.X)
_WANDB = lazy(r"""\bwandb[ \t]+login\b(?:[ \t]+\S+)*?[ \t]+(?P<val>[A-Za-z0-9_\-]{32,})\b"""
              r"""|\bwandb\.login\([^)\n]*?\bkey[ \t]*=[ \t]*(?P<q>["'])(?P<val2>[^"'\n]+)(?P=q)""")
_DOCKER = lazy(r"""\bdocker[ \t]+login\b[^\n]*?[ \t]-p(?:[ \t]+|=)(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"']+)""")
# a signed URL's signature and credential, to the end of the query value (`&`, `#` or the URL's end): Azure SAS
# `sig=`, AWS SigV4 presigned `X-Amz-Signature=` / `X-Amz-Credential=` (AKIA.../date/region/s3/aws4_request),
# Google `X-Goog-Signature=` / `X-Goog-Credential=`, and V2 / CloudFront `Signature=`
_SAS = lazy(r"""(?i)[?&](?:sig|signature|x-(?:amz|goog)-(?:signature|credential))=(?P<val>[^\s&#"']{8,})""")
# an HTTP Cookie / Set-Cookie header (curl -v, a requests dump, a headers dict): the rest of its line
# (inside a quoted string, to its quote: `'Cookie': 'a=b'`)
_COOKIE = lazy(r"""(?i)\b(?P<set>set-)?cookie["']?[ \t]*:[ \t]*(?:["'](?P<val>[^\r\n"']+)|(?P<val>[^\r\n]+))""")
_COOKIE_PAIR = lazy_re(r"([ \t]*[^=;\s]+[ \t]*=[ \t]*)([^;]*)")
# a password on a client's command line: mysql / mariadb -pPASS (attached: `-p PASS` prompts, PASS is then the
# database), sshpass -p PASS (among sshpass's own options, before the command: ssh's `-p 22` is a port),
# redis-cli -a PASS / --pass PASS
_PWVAL = r"""(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"';|&]+)"""
_CLIPW = lazy(r"""\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlslap|mysqlbinlog|mariadb"""
              r"""(?:-dump|-admin|-import|-show|-check|-slap|-binlog)?)(?=[ \t])[^\n|;&]*?[ \t]-p(?=[^\s])""" + _PWVAL
              + r"""|\bsshpass(?:[ \t]+-[fdP](?:[ \t]*[^\s\-]\S*)?|[ \t]+-[evV]+)*[ \t]+-p[ \t]*"""
              + _PWVAL.replace("val", "val2")
              + r"""|\bredis-cli(?=[ \t])[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+""" + _PWVAL.replace("val", "val3"))


def _quoted(v: str) -> Tuple[str, str, str]:
    """(opening quote, inside, closing quote)."""
    if v[:1] in ("'", '"'):
        q = v[0]
        return (q, v[1:-1], q) if len(v) > 1 and v.endswith(q) else (q, v[1:], "")
    return "", v, ""


def _kv_at(text: str, m: re.Match[str]) -> Tuple[int, Optional[str]]:
    """A name and its separator matched: (end, replacement of text[m.start():end]), or (0, None)
    when the name is not a secret name or has no value.  The value is matched only after the name
    is known to be secret (every character is then consumed once).  A YAML line
    (`  password: two words  # comment`) gives the whole rest of the line as the value."""
    name = m.group("flag") or m.group("name") or m.group("env")
    sep = m.group("sep") or ""
    before = text[m.start() - 1] if m.start() > 0 else ""
    vs = m.end()
    cls = _kv_class(text, m, name, sep, before)
    given = text[m.start():vs].lower()
    last = _WORD.findall(name)[-1].lower() if cls else ""
    if not cls or (last == "pass" and "=" not in given and "%3d" not in given):
        return 0, None        # `pass: 3`, `--pass 2` (a pass of an algorithm); `pass=...` is a password
    v = _KVVAL.match(text, vs)
    if v is None:
        return 0, None
    q, inner, q2 = _quoted(v.group("val"))
    inner, end = _value_extent(text, v.end(), vs, inner, bool(q), last in _PROSE_SECRET and before not in ("?", "&"),
                               given)
    if not q and m.group("sep") and ":" in m.group("sep"):
        inner, end = _yaml_value(text, m.start(), vs, inner, end)
    keep = _keep_value(inner, cls) or inner.lower() in _SCHEMES      # `Authorization: Bearer <redacted>`
    if last == "pass" and inner.isdigit():
        keep = True                           # `num_pass=3`: a count of passes
    if not keep and not q:
        keep = _code_not_value(text, inner, end)
    rep = text[m.start():end] if keep else text[m.start():vs] + q + MARK + q2
    return _with_change(text, end, rep, cls)


def _kv_class(text: str, m: re.Match[str], name: str, sep: str, before: str) -> int:
    """name_class of a matched name, as where it stands makes it (0: not a secret here)."""
    cls = name_class(name)
    if sep[:1] in ("]", ","):  # os.environ["HF_TOKEN"] = "...", os.environ.setdefault("HF_TOKEN", "...")
        if not m.group("q") or before != ("[" if sep[0] == "]" else "(") or cls != 2:
            return 0
    if cls == 1 and before in ("?", "&") and "=" in sep:
        cls = 2               # a URL query's `?token=` / `&token=` is a credential, like `access_token=`
    if not cls and name == "key" and "=" in sep and _WANDB_KEY.match(text, m.end()):
        cls = 2               # a Weights & Biases API key, `key=<40 hex>` (wandb.login(key=...) unquoted)
    return cls


def _value_extent(text: str, end: int, vs: int, inner: str, quoted: bool, prose_pw: bool,
                  given: str) -> Tuple[str, int]:
    """(value, its end) as its format delimits it: a URL-encoded `password%3DVALUE%26next` to the encoded
    `&`; `?password=x: connection failed` without the message's colon; a password written `password=VALUE`
    in prose (not a URL query, where `&` ends it) to the end of the line or the next `name=` pair, as a
    password may hold `&` and blanks."""
    if quoted:
        return inner, end
    if "%3d" in given:
        k = inner.lower().find("%26")
        return (inner[:k], vs + k) if k >= 0 else (inner, end)
    if len(inner) > 1 and inner[-1] == ":" and text[end:end + 1] in ("", " ", "\t", "\n"):
        return inner[:-1], end - 1
    if prose_pw and "=" in given:
        r = _PROSE_REST.match(text, end)
        if r is not None and r.end() > end:
            return inner + r.group(0), r.end()
    return inner, end


def _yaml_value(text: str, start: int, vs: int, inner: str, end: int) -> Tuple[str, int]:
    """(value, its end): on a YAML line (only blanks or "- " before the name at `start`) the rest
    of the line from `vs`, a trailing comment aside, when longer than the value matched."""
    ls = text.rfind("\n", 0, start) + 1
    if text[ls:start].strip() not in ("", "-"):
        return inner, end
    le = text.find("\n", vs)
    seg = text[vs:le if le >= 0 else len(text)]
    for c in (" #", "\t#"):
        k = seg.find(c)
        if k >= 0:
            seg = seg[:k]
    seg = seg.rstrip()
    if len(seg) > len(inner):
        return seg, vs + len(seg)
    return inner, end


def _code_not_value(text: str, inner: str, end: int) -> bool:
    """An unquoted value that is code, not a credential: a string prefix (f"...", b'...') or a
    call or subscript (api_key=os.getenv("KEY"), cfg["token"])."""
    if len(inner) <= 2 and text[end:end + 1] in ("'", '"'):
        return True
    return _CODE.fullmatch(inner) is not None


def _with_change(text: str, end: int, rep: str, cls: int) -> Tuple[int, str]:
    """(end, replacement) of a secret name's value, extended over a change that follows it,
    `env.HF_TOKEN: 'old' -> 'new'` (triage's diff), its new value redacted too."""
    a = _ARROW.match(text, end)
    if a is not None:
        v2 = _KVVAL.match(text, a.end())
        if v2 is not None:
            q, inner, q2 = _quoted(v2.group("val"))
            new = text[a.end():v2.end()] if _keep_value(inner, cls) else q + MARK + q2
            return v2.end(), rep + a.group(0) + new
    return end, rep


_ARROW = lazy_re(r"[ \t]*->[ \t]*")
# a password's name (its last word), whose value `NAME=VALUE` runs on past `&` and blanks (_kv_at)
_PROSE_SECRET = {"password", "passwd", "passphrase", "pass", "pwd"}
# what goes on from where a value stopped: `&...`, or a blank and a word that is not the next `name=` / `name:`
_PROSE_REST = lazy_re(r"(?:&[^\s&]*|[ \t]+(?![\w.\-]+[ \t]*[=:])[^\s&]+)*")
_WANDB_KEY = lazy_re(r"""["']?(?:local-)?[0-9a-f]{40}(?![\w\-])""")
_CODE = lazy_re(r"[A-Za-z_][\w.]*[(\[]")
_KVWORD = lazy_re(r"token|secret|pass|pwd|key|auth")     # on the lower-cased string
_KVWORD_I = lazy_re(r"token|secret|pass|pwd|key|auth", re.I)
_IDCH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _kv_rule(text: str) -> str:
    """Values of secret names.  _KV is matched only where a name holding a secret word starts, once
    per name: a stdlib literal search finds the words, and the scan back to the name's start stops
    at the previous word (each character is passed once)."""
    low = text.lower()
    words = _KVWORD.finditer(low) if len(low) == len(text) else _KVWORD_I.finditer(text)
    out: List[str] = []
    last, prev = 0, -1            # end of the last replacement; the previous word tried
    for w in words:
        p = w.start()
        if p < last:
            continue
        i, bound = p, max(last, prev)
        while i > bound and text[i - 1] in _IDCH:
            i -= 1
        if i == prev:             # the previous word's name: tried already
            prev = p
            continue
        if text[i - 1:i] == "%" and text[i:i + 2] in ("26", "3F", "3f") and i + 2 <= p:
            i += 2                # a URL-encoded `&name%3D` / `?name%3D` (a form body, a nested URL)
        prev = p
        if i > last and text[i - 1] in "\"'":
            i -= 1
        m = _KV.match(text, i)
        if m is None:
            continue
        end, rep = _kv_at(text, m)
        if rep is not None:
            out.append(text[last:m.start()])
            out.append(rep)
            last, prev = end, -1
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _netrc(text: str) -> str:
    low = text.lower()
    if "login" not in low and "user" not in low:
        return text
    return _NETRC.compiled().sub(_val, text, timeout=TIMEOUT)


def _val(m: regex.Match[str]) -> str:
    """Replace the named groups val/val2/val3/user/path/path2 that took part (a plain value, kept when it
    is a placeholder)."""
    s, base = m.group(0), m.start()
    for g in ("val", "val2", "val3", "user", "path", "path2"):
        try:
            v = m.group(g)
        except IndexError:
            continue
        if v is None:
            continue
        q, inner, q2 = _quoted(v)
        if _keep_value(inner, 2) or (g == "user" and not _CREDLIKE.fullmatch(inner)):
            return s
        a, b = m.start(g) - base, m.end(g) - base
        return s[:a] + q + MARK + q2 + s[b:]
    return s


_SCHEMES = {"basic", "bearer", "token", "digest", "bot", "negotiate", "ntlm", "apikey", "sso-key"}


def _authz(m: regex.Match[str]) -> str:
    v = m.group("val")
    if len(v) < 8 or v.lower() in _SCHEMES:      # `Authorization: f"Bearer {token}"`, a bare scheme
        return m.group(0)
    return _val(m)


def _bearer(m: regex.Match[str]) -> str:
    v = m.group("val")
    if len(v) < 20 and not any(c.isdigit() for c in v):   # "Bearer authentication", not a credential
        return m.group(0)
    return _val(m)


_B64LINE = lazy_re(r"(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/]{76}|[A-Za-z0-9+/]{70}|[A-Za-z0-9+/]{64})"
                      r"(?=[ \t\"',]*$)", re.M)
_PATHLIKE = lazy_re(r"/[a-z_]{2,}/")


def _b64_token(m: re.Match[str]) -> str:
    t = m.group(0)
    if not (any(c.isdigit() for c in t) and any(c.islower() for c in t) and any(c.isupper() for c in t)) \
            or _PATHLIKE.search(t):              # random base64 has all three; a path has /words/
        return t
    return MARK


def _b64_line(text: str) -> str:
    """A key block's body line seen alone: a line ending in a base64 token of a key block's width
    (stdlib, linear: three fixed widths tried at each position)."""
    return _B64LINE.sub(_b64_token, text)


def _cookie(m: regex.Match[str]) -> str:
    """A Cookie header's every `name=value` loses its value, a Set-Cookie's first one (the rest are
    attributes: Path, Expires, HttpOnly); a value without `name=` is redacted whole."""
    v = m.group("val")
    if "=" not in v:
        return _val(m)
    first = [True]

    def pair(p: re.Match[str]) -> str:
        val, only = p.group(2), m.group("set") is not None
        if only and not first[0]:
            return p.group(0)
        first[0] = False
        return p.group(0) if _keep_value(val, 2) else p.group(1) + MARK + val[len(val.rstrip()):]
    return m.group(0)[:m.start("val") - m.start()] + _COOKIE_PAIR.sub(pair, v)


def _sub(rx: LazyRx, rep: Union[str, Callable[[regex.Match[str]], str]]) -> Callable[[str], str]:
    """A rule that replaces the matches of a `regex` pattern (with its timeout)."""
    return lambda text: rx.sub(rep, text, timeout=TIMEOUT)


_RULES: Dict[int, Tuple[Callable[[str], str], ...]] = {      # each rule: a string -> the string redacted
    B64: (_b64_line,),
    KV: (_kv_rule, _netrc, _sub(_PWSPACE, _val)),
    AUTHZ: (_sub(_AUTHZ, _authz),),
    BEARER: (_sub(_BEARER, _bearer),),
    URL: (_sub(_URL, _val),),
    TOKENS: (_sub(_TOKENS, MARK),),
    WANDB: (_sub(_WANDB, _val),),
    DOCKER: (_sub(_DOCKER, _val),),
    SAS: (_sub(_SAS, _val),),
    COOKIE: (_sub(_COOKIE, _cookie),),
    CLIPW: (_sub(_CLIPW, _val),),
}
_ORDER = (SAS, TOKENS, AUTHZ, BEARER, URL, WANDB, DOCKER, COOKIE, CLIPW, KV, B64)   # recognisable tokens first
# (a signed URL's credential first: whole, not its access key id alone)


def _apply(text: str, groups: FrozenSet[int]) -> str:
    """Run the rules of GROUPS over one string (PEM blocks aside)."""
    try:
        for g in _ORDER:
            if g in groups:
                for rule in _RULES[g]:
                    text = rule(text)
    except TimeoutError:
        return WITHHELD
    return text


# ----------------------------------------------------------------------------------------------
# private key blocks: every line from BEGIN to END

_BEGIN = lazy_re(r"-{4,5} ?BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_END = lazy_re(r"-{4,5} ?END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PUTTY = lazy_re(r"(?:^|\s)Private-Lines:[ \t]*(\d{1,4})[ \t]*$")    # PuTTY: the next N lines
_END_ANY = lazy_re(r"-{4,5} ?END [A-Z0-9 ]{1,40}-{4,5}")
_PUBLIC = lazy_re(r"-{4,5} ?BEGIN (?:CERTIFICATE|(?:[A-Z0-9]+ )?PUBLIC KEY|X509 CRL|CERTIFICATE REQUEST|"
                     r"PGP PUBLIC KEY BLOCK|SSH2 PUBLIC KEY) ?-{4,5}")
_B64RUN = lazy_re(r"[A-Za-z0-9+/=]{16,}")
_BODY = lazy_re(r"(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]*={1,2})[\"',\\]*")
_ARMOR_HEADER = lazy_re(r"(?:^|\s)(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset|Subject):\s")
MAX_BLOCK = 400            # lines looked ahead for the END of a block (an 8192-bit RSA key is ~100)
_HAS_ALNUM = lazy_re(r"[A-Za-z0-9]")


def _cut_body(line: str) -> str:
    """A line inside a key block: its last token and every base64 run go (a prefix such as
    `[rank0]: ` or the report's `file:line: ` stays)."""
    s = line.rstrip()
    if not s.strip():
        return line
    k = max(s.rfind(" "), s.rfind("\t"))
    return _B64RUN.sub(MARK, s[:k + 1]) + MARK + line[len(s):]


def _body_like(line: str) -> bool:
    s = line.strip()
    if not s or _ARMOR_HEADER.search(s):
        return True
    tok = s.rsplit(None, 1)[-1]
    return MARK in tok or _BODY.fullmatch(tok) is not None


def _find_end(lines: List[str], i: int) -> Optional[int]:
    for j in range(i, min(len(lines), i + MAX_BLOCK)):
        if "END" in lines[j] and _END.search(lines[j]):
            return j
    return None


def _plain(line: str, public: bool = False) -> str:
    g = _hint(line)
    if not g:
        return line
    return _apply(line, g - _NOT_IN_PUBLIC if public else g - _PEM_ONLY)


_PEM_ONLY: FrozenSet[int] = frozenset((PEM,))
_NOT_IN_PUBLIC: FrozenSet[int] = frozenset((PEM, B64))   # a certificate's lines are no key's body


def _lines(lines: List[str], carry: bool = False) -> Tuple[List[str], bool]:
    """Redact consecutive lines; CARRY: the first line continues a key block opened before them.
    Returns the lines and whether a key block is still open after the last one."""
    if not carry:
        s = _orphan_body_start(lines)
        if s is not None:
            out = [_plain(x) for x in lines[:s]]
            rest, open_ = _lines(lines[s:], True)
            return out + rest, open_
    return _KeyBlocks(lines, carry).run()


def _orphan_body_start(lines: List[str]) -> Optional[int]:
    """An END whose BEGIN is out of sight (a context window cut it off): the index of the first of
    the body-like lines just before the END (the block), or None."""
    e = next((j for j, x in enumerate(lines) if "END" in x and _END.search(x)), None)
    if e is None or any("BEGIN" in x and _BEGIN.search(x) for x in lines[:e + 1]):
        return None
    s = e
    while s > 0 and _body_like(lines[s - 1]):
        s -= 1
    return s


def _line_after_end(tail: str) -> str:
    """What follows a block's END on its line, read as a line of its own."""
    return _lines([tail])[0][0] if tail else ""


class _KeyBlocks:
    """One _lines pass over `lines`: each line redacted by where it is, inside a key block (`open_`;
    `end`: the index of its END line, None when no END is in sight), inside a certificate or
    public key block (`public`), or outside."""

    def __init__(self, lines: List[str], carry: bool) -> None:
        self.lines = lines
        self.out: List[str] = []
        self.i = 0
        self.open_ = carry
        self.end = _find_end(lines, 0) if carry else None
        self.public = False

    def run(self) -> Tuple[List[str], bool]:
        n = len(self.lines)
        while self.i < n:                 # each step takes the line, or leaves it to be read again
            ln = self.lines[self.i]
            if self.public:
                self.public = _END_ANY.search(ln) is None
                self._take(_plain(ln, True))
            elif self.open_:
                self._in_block(ln)
            else:
                self._outside(ln)
        return self.out, self.open_

    def _take(self, red: str) -> None:
        self.out.append(red)
        self.i += 1

    def _in_block(self, ln: str) -> None:
        if self.end is None:              # no END in sight: the body-like lines that follow
            closed = not _body_like(ln)
        elif self.i < self.end:           # a new block: the open one was cut short
            closed = "BEGIN" in ln and _BEGIN.search(ln) is not None
        else:
            self._end_line(ln)
            return
        if closed:
            self.open_ = False            # this line is outside the block: read again
        else:
            self._take(_cut_body(ln))

    def _end_line(self, ln: str) -> None:
        m = _END.search(ln)
        assert m is not None              # _find_end found the END on this line
        self.open_ = False
        self._take(_B64RUN.sub(MARK, ln[:m.start()]) + m.group(0) + _line_after_end(ln[m.end():]))

    def _outside(self, ln: str) -> None:
        m = _BEGIN.search(ln) if "BEGIN" in ln else None
        if m is not None:
            self._begin_line(ln, m)
        elif not ("Private-Lines:" in ln and self._putty(ln)):
            pub = _PUBLIC.search(ln) if "BEGIN" in ln else None
            if pub is not None:
                self.public = _END_ANY.search(ln, pub.end()) is None
            self._take(_plain(ln, True) if pub is not None else _plain(ln))

    def _putty(self, ln: str) -> bool:
        """A PuTTY key's `Private-Lines: N`: the next N lines are its body."""
        pm = _PUTTY.search(ln)
        if not pm:
            return False
        k = min(len(self.lines), self.i + 1 + int(pm.group(1)))
        self.out.append(ln)
        self.out.extend(_cut_body(x) for x in self.lines[self.i + 1:k])
        self.i = k
        return True

    def _begin_line(self, ln: str, m: re.Match[str]) -> None:
        head, after = _plain(ln[:m.start()]) + m.group(0), ln[m.end():]
        e = _END.search(after)
        if e is not None:                 # a whole block on one line (JSON: "...\n...")
            inner = after[:e.start()]
            self._take(head + (MARK if _HAS_ALNUM.search(inner) else inner) + e.group(0)
                       + _line_after_end(after[e.end():]))
        else:
            self.out.append(head + (MARK if _HAS_ALNUM.search(after) else after))
            self.open_, self.end = True, _find_end(self.lines, self.i + 1)
            self.i += 1


def _items(items: List[str], carry: bool = False) -> Tuple[List[str], bool]:
    """Consecutive strings (each may hold several lines) read as one stream of lines."""
    flat: List[str] = []
    counts: List[int] = []
    for s in items:
        parts = s.split("\n")
        flat.extend(parts)
        counts.append(len(parts))
    red, open_ = _lines(flat, carry)
    out, k = [], 0
    for c in counts:
        out.append("\n".join(red[k:k + c]))
        k += c
    return out, open_


# ----------------------------------------------------------------------------------------------
# the API

def redact(text: str) -> str:
    """Redact one string (several lines allowed: a key block across them is redacted whole)."""
    if not text:
        return text
    g = _hint(text)
    if not g:
        return text
    if PEM in g:
        return _items([text])[0][0]
    return _apply(text, g)


def redact_each(texts: Sequence[str]) -> Dict[str, str]:
    """{text: redact(text)} of many separate strings, their hints found in one Hyperscan scan (a storm's 10,000
    dropped lines were a scan each, issue 44): an ASCII string with no hint there is its own redaction (a hint
    found anywhere, or a string of other characters, is redacted as `redact` does)."""
    out: Dict[str, str] = {}
    plain = [t for t in dict.fromkeys(texts) if t.isascii()]
    hinted = _hint_many(plain)
    for i, t in enumerate(plain):
        out[t] = redact(t) if i in hinted else t
    for t in texts:
        if t not in out:
            out[t] = redact(t)
    return out


def redact_lines(lines: Sequence[str]) -> List[str]:
    """Redact consecutive lines of one stream (a key block spread over them is redacted whole)."""
    lines = list(lines)
    hits = _hint_many(lines)
    if any(PEM in g for g in hits.values()):
        return _items(lines)[0]
    out = list(lines)
    for i, g in hits.items():
        out[i] = _apply(out[i], g)
    return out


def redact_text(text: str) -> str:
    """A whole rendered report (the text format): the same as `redact`."""
    return redact(text)


def redact_obj(obj: Any) -> Any:
    """Redact every string inside a JSON-like structure (keys included).  The value of a key whose
    name is a secret name is redacted whole; a list of strings is read as consecutive lines (a key
    block spread over them is redacted whole), and a block left open at the end of a dict's string
    or list continues into its sibling strings and lists (a log line's `text` into its `after`).

    All the strings are searched for hints at once; only the dicts and lists that hold a hit are
    rebuilt, the rest of the structure is returned as it is (shared, not copied)."""
    w = _Walk()
    w.collect(obj)
    if not w.strings:
        return obj
    pos = _hint_many(w.strings)
    if not pos:
        return obj
    w.hits = {w.strings[i]: g for i, g in pos.items()}
    w.hitpos = sorted(pos)
    return w.rebuild(obj)


_VALUE_FIELDS = ("old", "new", "value", "default", "current", "baseline")
_STOP = object()
_CONTAINERS = (dict, list, tuple)


class _Walk:
    """One redact_obj: the strings in document order, each container's span of them, the hits."""

    def __init__(self) -> None:
        self.strings: List[str] = []
        self.spans: Dict[int, Tuple[int, int]] = {}
        self.hits: Dict[str, FrozenSet[int]] = {}
        self.hitpos: List[int] = []
        self.done: Dict[str, str] = {}

    def collect(self, o: Any) -> None:
        acc = self.strings
        t = type(o)
        if t is str or (t not in _CONTAINERS and isinstance(o, str)):
            acc.append(o)
            return
        start = len(acc)
        if t is dict or (t not in _CONTAINERS and isinstance(o, dict)):
            self._collect_dict(o)
        elif t is list or t is tuple or isinstance(o, (list, tuple)):
            self._collect_items(o)
        else:
            return
        self.spans[id(o)] = (start, len(acc))

    def _collect_dict(self, o: Dict[Any, Any]) -> None:
        acc = self.strings
        for k, v in o.items():
            if type(k) is str or isinstance(k, str):
                acc.append(k)
            tv = type(v)
            if tv is str:
                acc.append(v)
            elif tv in _CONTAINERS or isinstance(v, (str, dict, list, tuple)):
                self.collect(v)

    def _collect_items(self, o: Sequence[Any]) -> None:
        acc = self.strings
        for x in o:
            tx = type(x)
            if tx is str:
                acc.append(x)
            elif tx in _CONTAINERS or isinstance(x, (str, dict, list, tuple)):
                self.collect(x)

    def has_hit(self, o: Any) -> bool:
        a, b = self.spans.get(id(o), (0, 0))
        k = bisect_left(self.hitpos, a)
        return k < len(self.hitpos) and self.hitpos[k] < b

    def text(self, s: str) -> str:
        g = self.hits.get(s)
        if g is None:
            return s
        r = self.done.get(s)
        if r is None:
            r = self.done[s] = redact(s) if PEM in g else _apply(s, g)
        return r

    def rebuild(self, o: Any) -> Any:
        if isinstance(o, str):
            return self.text(o)
        if isinstance(o, dict):
            return self.dict(o) if self.has_hit(o) else o
        if isinstance(o, (list, tuple)):
            return self.list(o)[0] if self.has_hit(o) else o
        return o

    def list(self, o: Sequence[Any], carry: bool = False) -> Tuple[Any, bool]:
        """A list: its runs of strings are read as consecutive lines when one holds a key block's
        BEGIN (or CARRY: a block is open before the first); returns the list and whether a block
        is still open after it."""
        hits = self.hits
        pem = carry
        if not pem:
            for x in o:
                if isinstance(x, str):
                    g = hits.get(x)
                    if g is not None and PEM in g:
                        pem = True
                        break
        if not pem:
            return [self.rebuild(x) for x in o], False
        out: List[Any] = []
        run: List[str] = []
        open_ = carry
        for x in list(o) + [_STOP]:
            if isinstance(x, str):
                run.append(x)
                continue
            if run:
                red, open_ = _items(run, open_)
                out.extend(red)
                run = []
            if x is not _STOP:
                out.append(self.rebuild(x))
                open_ = False
        return out, open_

    def dict(self, o: Dict[Any, Any]) -> Dict[Any, Any]:
        out: Dict[Any, Any] = {}
        opened: List[Any] = []         # the keys whose string or list leaves a key block open
        secret_row = self._secret_row(o)
        for k, v in o.items():
            k2, cls = self._key(k)
            if secret_row and k in _VALUE_FIELDS:
                cls = max(cls, secret_row)
            if cls and _secret_value(v, cls):
                out[k2] = MARK
                continue
            out[k2], op = self._value(v)
            if op:
                opened.append(k2)
        if opened:
            _continue_blocks(out, opened)
        return out

    def _secret_row(self, o: Dict[Any, Any]) -> int:
        """The name_class of a change row's key, {"key": "env.HF_TOKEN", "old": ..., "new": ...}."""
        hits = self.hits
        row = 0
        for f in ("key", "name"):
            v = o.get(f)
            if isinstance(v, str) and v in hits and KV in hits[v]:
                row = max(row, name_class(v))
        return row

    def _key(self, k: Any) -> Tuple[Any, int]:
        """A dict key redacted, and its name_class."""
        if isinstance(k, str):
            g = self.hits.get(k)
            if g is not None:
                return self.text(k), (name_class(k) if KV in g else 0)
        return k, 0

    def _value(self, v: Any) -> Tuple[Any, bool]:
        """A dict value redacted, and whether it leaves a key block open."""
        if isinstance(v, str):
            g = self.hits.get(v)
            if g is not None and PEM in g:
                red, op = _items([v])
                return red[0], op
            return (v if g is None else self.text(v)), False
        if isinstance(v, (list, tuple)):
            return self.list(v) if self.has_hit(v) else (v, False)
        return self.rebuild(v), False


def _continue_blocks(out: Dict[Any, Any], opened: List[Any]) -> None:
    """A key block left open in the `opened` keys' values continues into the sibling strings and
    lists (an evidence line's `text` into its `after` lines), in place."""
    for k2, v in out.items():
        if k2 in opened or v == MARK:
            continue
        if isinstance(v, str) and v:
            out[k2] = _items([v], True)[0][0]
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, str) for x in v):
            out[k2] = _items(list(v), True)[0]


def _secret_value(v: Any, cls: int) -> bool:
    if isinstance(v, bool) or v is None:
        return False
    if isinstance(v, (int, float)):
        return cls == 2
    if isinstance(v, str):
        return not _keep_value(v, cls)
    return False
