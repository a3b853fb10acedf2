"""Render the reports of a few corpus logs in every format and shoot the HTML in headless Chromium at
1280 and 800 px wide, and print it to PDF: what a ticket reader sees (docs/screenshots/).

Usage: python scripts/screenshots.py [OUT_DIR]     (default docs/screenshots; needs `chromium`)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(ROOT, "tests", "fixtures", "logs")
CASES = {
    "ima-cascade": [os.path.join(LOGS, "synthetic", "multirank_ima_cascade.log")],
    "unexplained": [os.path.join(LOGS, "synthetic", "unrelated_dataset_error.log")],
    "step-times": [os.path.join(LOGS, "synthetic", "steptime", "qwen3_30b_te_graphs.log"), "--baseline-log",
                   os.path.join(LOGS, "synthetic", "steptime", "qwen3_30b_eager.log")],
}
FORMATS = {"text": "txt", "markdown": "md", "html": "html", "jira": "jira", "junit": "xml", "json": "json"}
WIDTHS = (1280, 800)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    sys.exit("screenshots.py: no chromium on PATH")


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    browser = chromium()
    for case, args in CASES.items():
        for fmt, ext in FORMATS.items():
            path = os.path.join(out, f"{case}.{ext}")
            subprocess.run([sys.executable, "-m", "triage", "analyze", *args, "--format", fmt, "-o", path, "--force"],
                           cwd=ROOT, capture_output=True, check=False)
        page = "file://" + os.path.abspath(os.path.join(out, f"{case}.html"))
        for w in WIDTHS:
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--window-size={w},1600", f"--screenshot={os.path.join(out, f'{case}-{w}.png')}", page],
                           capture_output=True, timeout=120, check=False)
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                        f"--print-to-pdf={os.path.join(out, f'{case}.pdf')}", page],
                       capture_output=True, timeout=120, check=False)
        print(f"{case}: {', '.join(sorted(os.listdir(out)))}" if case == list(CASES)[-1] else case)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "screenshots"))
