"""README's "How the code is laid out" matches the tree (issue 41), and the house has no import circle
and no arrow back up a floor (scripts/house.py)."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_readme_names_every_folder_of_the_package():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
    folders = sorted(d for d in os.listdir(os.path.join(ROOT, "triage"))
                     if os.path.isfile(os.path.join(ROOT, "triage", d, "__init__.py")))
    for d in folders:
        assert re.search(rf"triage/{d}/|\b{d}/", section), d
    for named in re.findall(r"triage/(\w+)/", section):
        assert named in folders, named


def test_no_import_circle_and_no_arrow_back_up():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "house.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "circles between files 0  arrows back up a floor 0" in r.stdout, r.stdout
    assert "modules on no floor" not in r.stdout, r.stdout
