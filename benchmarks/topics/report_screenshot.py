"""A picture of a ``report.html`` as a reader first sees it (``docs/report-demo.png``).

Opens the report in headless Chromium (``report_open.chromium``), waits until the page has
drawn its views (``data-rendered``), and saves the window as Chromium's PNG (the report's
flat colours keep it small: 190 KiB at 1280 x 1500). Prints the file's size.

    phrasekit topics sample --out /tmp/demo
    python benchmarks/topics/report_screenshot.py /tmp/demo/report.html --out docs/report-demo.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from report_open import chromium


def screenshot(page: Path, out: Path, width: int, height: int) -> int:
    """Save ``page`` as drawn in a ``width`` x ``height`` window to ``out``; its bytes."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from phrasekit.io import atomic_write

    driver = chromium()
    try:
        driver.set_window_size(width, height)
        driver.get(page.resolve().as_uri())
        WebDriverWait(driver, 60, poll_frequency=0.05).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered"))
        png = driver.get_screenshot_as_png()
    finally:
        driver.quit()
    with atomic_write(out, "wb", encoding=None) as fh:
        fh.write(png)
    return out.stat().st_size


def main() -> None:
    """Parse the arguments, take the picture, print its size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report.html")
    parser.add_argument("--out", type=Path, default=Path("docs/report-demo.png"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args()
    if not args.report.is_file():
        raise SystemExit(f"{args.report}: no such file")
    size = screenshot(args.report, args.out, args.width, args.height)
    print(f"{args.out}: {args.width}x{args.height}, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
