"""`triage known add|list|remove`: the known-issue table of the verdict store."""
from __future__ import annotations

import json
import re
from typing import List, Optional

import click

from ..cliutil import (
    DB_HELP,
    fail,
    load_patterns,
)


@click.group()
def known() -> None:
    """The known-issue table: link a signature or a pitfall to the ticket that tracks it.

    \b
    Examples:
      triage known add capture-memory-overhead https://jira.example.com/browse/TRAIN-123 --title "graph pools"
      triage known add "unexplained-failure: RuntimeError: <path> boom" https://github.com/org/repo/issues/7
      triage known list
      triage known remove capture-memory-overhead"""


@known.command("add")
@click.argument("key")
@click.argument("url")
@click.option("--title", default=None, help="The ticket's title.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help="Also accept the pitfall ids of these pattern files or directories (repeatable).")
def known_add(key: str, url: str, title: Optional[str], db: Optional[str], pattern_dirs: List[str]) -> None:
    """Link KEY (a pitfall id, a job signature as `triage fleet` or the JSON's `signature` shows
    it, its short id as every report shows it, or re:REGEX -- a regex found in a job's signature or
    error block) to the ticket at URL; adding the same KEY again replaces its link.

    \b
    Examples:
      triage known add capture-memory-overhead https://jira.example.com/browse/TRAIN-7 --title "graph pools"
      triage known add "nccl-error: NCCL / collective communication error (incl. a lost peer)" URL
      triage known add 're:FileNotFoundError: .*tokenizer' https://jira.example.com/browse/TRAIN-9"""
    from ..fleet.store import Store, known_key_error, url_error
    extra = [p.id for p in load_patterns(pattern_dirs)] if pattern_dirs else []
    sid = re.fullmatch(r"[0-9a-f]{12}", key) is not None and key not in extra
    why = (None if sid else known_key_error(key, extra)) or url_error(url)
    if why:
        raise fail("{}", why) from None
    with Store(db) as st:
        if sid:                 # a signature's short id, as every report shows it: the signature it stands for
            sig = st.signature_of(key)
            if sig is None:
                raise fail("no job in the store has signature id {} (record the job first: "
                           "triage analyze --record, or triage fleet)", key) from None
            key = sig
        new = st.known_add(key, url, title)
    from ..report.util import clip
    click.echo(f"{'added' if new else 'updated'}: {clip(key, 500)} -> {clip(url, 500)}")


@known.command("list")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def known_list(db: Optional[str], fmt: str) -> None:
    """List the known issues with how often the store has seen each.

    \b
    Example:  triage known list --db postgresql://triage@db/triage --format json"""
    from ..fleet.store import Store, day
    with Store(db, existing=True) as st:
        rows = st.known_list()
        sigs = [r["key"] for r in rows if ": " in r["key"]]
        pits = [r["key"] for r in rows if ": " not in r["key"]]
        seen = st.seen(signatures=sigs, pitfalls=pits)
    out = []
    for r in rows:
        n, first, last = seen.get(r["key"], (0, 0.0, 0.0))
        out.append({"key": r["key"], "url": r["url"], "title": r["title"], "added": day(r["added_at"]),
                    "seen": n, "first_seen": day(first) if n else None, "last_seen": day(last) if n else None})
    if fmt == "json":
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if not out:
        click.echo("no known issues (add one with: triage known add KEY URL)")
    from ..report.util import clip  # (one clipped line each: a title may hold escapes or newlines)
    for k in out:
        seen_s = f"seen {k['seen']}x, {k['first_seen']}..{k['last_seen']}" if k["seen"] else "not seen yet"
        title = f"  {clip(k['title'], 500)}" if k["title"] else ""
        click.echo(f"{clip(k['key'], 500)}\n  {clip(k['url'], 500)}{title}\n  {seen_s}")


@known.command("remove")
@click.argument("keys", nargs=-1, required=True)
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
def known_remove(keys: List[str], db: Optional[str]) -> None:
    """Remove the known issues KEYS (exit 1 when one of them was not in the table).

    \b
    Example:  triage known remove illegal-memory-access"""
    from ..fleet.store import Store
    from ..verdict import EXIT_FOUND
    missing = []
    with Store(db, existing=True) as st:
        for k in keys:
            if st.known_remove(k):
                click.echo(f"removed: {k}")
            else:
                missing.append(k)
    if missing:
        click.echo(f"triage: not a known issue: {', '.join(missing)} (see triage known list)", err=True)
        raise click.exceptions.Exit(EXIT_FOUND)
