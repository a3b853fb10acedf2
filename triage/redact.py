"""Secret redaction for every output format (on by default; `--no-redact` turns it off)."""
from __future__ import annotations

import re
from typing import Any


from .rx import TIMEOUT, lazy

MARK = "<redacted>"
_SECRET_NAME = lazy(r"(?i)(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|ACCESS_KEY)")
_RULES = [
    # Bearer / token auth headers
    (lazy(r"(?i)\b(Bearer|token)\s+[A-Za-z0-9._~+/=\-]{8,}"), r"\1 " + MARK),
    # KEY=VALUE / KEY: VALUE for secret-looking variable names (WANDB_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY, ...)
    # (also quoted, as in JSON or an os.environ dump: "wandb_api_key": "...", {'HF_TOKEN': '...'})
    (lazy(r"(?i)\b([A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|ACCESS_KEY(?:_ID)?|AUTH)[A-Z0-9_]*['\"]?)"
                   r"(\s*[=:]\s*|\s+set by environment to\s+)(['\"]?)([^\s'\",;}]+)"), r"\1\2\3" + MARK),
    # Hugging Face, GitHub, Slack, OpenAI-style and AWS access key ids
    (lazy(r"\bhf_[A-Za-z0-9]{20,}\b"), MARK),
    (lazy(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}\b"), MARK),
    (lazy(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}\b"), MARK),
    (lazy(r"\bsk-[A-Za-z0-9_\-]{20,}\b"), MARK),
    (lazy(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MARK),
    # passwords in URLs: scheme://user:password@host
    (lazy(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+@"), r"\1" + MARK + "@"),
    # W&B keys are 40 hex characters after `wandb login`
    (lazy(r"(?i)(wandb\s+login\s+(?:--relogin\s+)?)[0-9a-f]{40}\b"), r"\1" + MARK),
]


# every rule above needs one of these substrings: most strings meet one C-level search and no rule
_HINT = re.compile(r"(?i)bearer|token|key|secret|passw|auth|hf_|gh[opusr]_|github_pat|xox|sk-|akia|asia|://|wandb")


def redact(text: str) -> str:
    if not text or not _HINT.search(text):
        return text
    for rx, rep in _RULES:
        try:
            text = rx.sub(rep, text, timeout=TIMEOUT)
        except TimeoutError:
            return MARK + " (line withheld: redaction timed out)"
    return text


def redact_obj(obj: Any) -> Any:
    """Redact every string inside a JSON-like structure (keys included)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(k) if isinstance(k, str) else k:
                (MARK if isinstance(k, str) and _SECRET_NAME.search(k) and isinstance(v, str) else redact_obj(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(x) for x in obj]
    return obj
