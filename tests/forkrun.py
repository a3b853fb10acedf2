"""N `python -m triage ARGS` processes at once, for the tests about concurrency between processes
(tests/test_store.py: many epilogs writing one store), without N interpreter start-ups.

    python tests/forkrun.py < SPEC        # SPEC: JSON [[arg, ...], ...], one argument list a process

This script is itself a subprocess (never fork the multi-threaded pytest worker): it imports triage
once and analyses the first argument list's log once (warm: what a running triage holds after one
analysis, the catalog's regexes compiled; a verdict stored in a throwaway store), then forks one
child per argument list, every child before the first is waited for, so they all run at the same
time.  Each child is its own process with its own store connection and runs `python -m triage ARGS`
as the interpreter would (runpy on triage.__main__, sys.argv as -m sets it), its stdout to
/dev/null, its stderr kept.  Prints JSON [[exit code, stderr], ...] in order."""
import json
import os
import runpy
import sys
import tempfile


def child(args, err_path):
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(devnull, 1)
        os.dup2(err, 2)
        import triage
        sys.argv = [os.path.join(os.path.dirname(triage.__file__), "__main__.py"), *args]
        try:
            runpy.run_module("triage", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 99
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def warm(specs, tmp):
    """What a long-lived triage process holds after its first analysis, made once here rather than in
    every child: the catalog loaded and the rule regexes compiled that the first child's log meets (the
    `regex` package compiles in Python, ~50 ms a process), and, for a child that stores its verdict, the
    store's code run once (SQLAlchemy's first statements, ~10 ms a child) on a throwaway SQLite store in
    TMP.  The children's store is not opened and nothing of theirs is written: they still each connect,
    create and record on their own."""
    args = list(specs[0]) if specs else []
    logs = [a for a in args if os.path.isfile(a)]
    if not logs:
        return
    from triage.cli import load_patterns
    from triage.pipeline import Options, triage
    try:
        triage(logs[:1], Options(pats=tuple(load_patterns([]))))
    except Exception:        # noqa: BLE001 -- a log the children are to fail on: they say so themselves
        pass
    if args[:1] != ["analyze"] or "--db" not in args or {"-o", "--output"} & set(args):
        return
    import contextlib
    import io
    at = args.index("--db") + 1
    args[at] = "sqlite:///" + os.path.join(tmp, "warm.db")
    argv = sys.argv
    sys.argv = [argv[0], *args]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_module("triage", run_name="__main__", alter_sys=True)
    except BaseException:    # noqa: BLE001 -- SystemExit, or what the children will say themselves
        pass
    finally:
        sys.argv = argv
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))


def main():
    specs = json.load(sys.stdin)
    import importlib
    import pkgutil

    import triage                       # what every child would import, imported once: triage's modules
    names = [m.name for m in pkgutil.walk_packages(triage.__path__, "triage.") if not m.name.endswith("__main__")]
    for mod in names + ["sqlalchemy", "sqlalchemy.dialects.sqlite", "psycopg"]:   # and the store's drivers
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
    tmp = tempfile.mkdtemp(prefix="forkrun-")
    warm(specs, tmp)
    pids = []
    sys.stdout.flush()
    sys.stderr.flush()
    import gc
    gc.collect()
    gc.freeze()        # the children's collections leave the parent's objects alone (fewer pages copied)
    for i, args in enumerate(specs):
        err_path = os.path.join(tmp, f"{i}.err")
        pid = os.fork()
        if pid == 0:
            child(args, err_path)
        pids.append((pid, err_path))
    out = []
    for pid, err_path in pids:
        _, status = os.waitpid(pid, 0)
        with open(err_path, encoding="utf-8", errors="replace") as f:
            out.append([os.waitstatus_to_exitcode(status), f.read()])
        os.unlink(err_path)
    os.rmdir(tmp)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
