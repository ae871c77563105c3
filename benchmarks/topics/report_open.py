"""How long a ``report.html`` takes to open in headless Chromium, and how big it is.

Each load starts a fresh headless Chromium (no cache, as a user opening the file) and reads
two times: ``load``, the page's own navigation timing from the start of navigation to the end
of its load event (the inline scripts, which draw every view, run before it), and ``ready``,
the wall time from asking the browser to open the file until the page has marked itself drawn
(``data-rendered``), as the browser test waits for. It also checks the page made no request
(no resource entries) and logged no console error.

Needs Chromium, chromedriver (Debian: ``apt-get install chromium chromium-driver``) and
selenium (the ``dev`` extra).

Usage: python benchmarks/topics/report_open.py REPORT.html [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import time
from pathlib import Path

_DATA_RE = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def chromium():
    """A fresh headless Chromium driven by selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        raise SystemExit("chromium and chromedriver are needed (apt-get install chromium "
                         "chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1500", "--disable-extensions"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver_path), options=opts)


def open_once(page: Path) -> dict[str, float | int]:
    """One load of ``page`` in a fresh browser: its times, requests and console errors."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium()
    try:
        start = time.perf_counter()
        driver.get(page.resolve().as_uri())
        WebDriverWait(driver, 60, poll_frequency=0.02).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered"))
        ready = time.perf_counter() - start
        nav = driver.execute_script(
            "const n = performance.getEntriesByType('navigation')[0];"
            "return [n.loadEventEnd - n.startTime,"
            " performance.getEntriesByType('resource').length];")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        marks = driver.execute_script("return document.querySelectorAll('svg *').length")
    finally:
        driver.quit()
    return {"load_s": nav[0] / 1000, "ready_s": ready, "requests": int(nav[1]),
            "errors": len(errors), "svg_elements": int(marks)}


def describe(page: Path) -> str:
    """The page's size and what its views hold."""
    text = page.read_text(encoding="utf-8")
    size = page.stat().st_size
    match = _DATA_RE.search(text)
    views = json.loads(match.group(1)).get("views", {}) if match else {}
    docs = views.get("documents", {})
    return (f"{page}: {size:,} bytes ({size / 2**20:.2f} MiB); "
            f"{len(views.get('topic_map', []))} topics, document map {docs.get('n_shown', 0):,} "
            f"of {docs.get('n_docs', 0):,} documents, views: {', '.join(sorted(views))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(describe(args.report))
    rows = [open_once(args.report) for _ in range(args.runs)]
    for n, r in enumerate(rows, 1):
        print(f"load {n}: load {r['load_s']:.2f} s, ready {r['ready_s']:.2f} s, "
              f"{r['svg_elements']:,} SVG elements, {r['requests']} requests, "
              f"{r['errors']} console errors")
    for key in ("load_s", "ready_s"):
        values = [r[key] for r in rows]
        print(f"{key[:-2]}: median {statistics.median(values):.2f} s, max {max(values):.2f} s "
              f"over {len(values)} fresh-browser loads")


if __name__ == "__main__":
    main()
