"""A picture of a ``report.html`` as a reader first sees it (``docs/report-demo.png``).

Opens the report in headless Chromium (``report_open.chromium``), waits until the page has
drawn its views (``data-rendered``), and saves the window as PNG; with ImageMagick's ``convert``
on the PATH the picture is reduced to a 256-colour palette (the report's flat colours survive,
the file gets several times smaller). Prints the file's size.

    phrasekit topics sample --out /tmp/demo
    python benchmarks/report_screenshot.py /tmp/demo/report.html --out docs/report-demo.png
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from report_open import chromium


def screenshot(page: Path, out: Path, width: int, height: int, colours: int) -> int:
    """Save ``page`` as drawn in a ``width`` x ``height`` window to ``out``; its bytes."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium()
    try:
        driver.set_window_size(width, height)
        driver.get(page.resolve().as_uri())
        WebDriverWait(driver, 60, poll_frequency=0.05).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered"))
        png = driver.get_screenshot_as_png()
    finally:
        driver.quit()
    convert = shutil.which("convert")
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.png"
        raw.write_bytes(png)
        staged = Path(tmp) / "out.png"
        if convert and colours:
            subprocess.run([convert, str(raw), "-strip", "-colors", str(colours),
                            f"PNG8:{staged}"], check=True)
        else:
            staged.write_bytes(png)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(staged, out)
    return out.stat().st_size


def main() -> None:
    """Parse the arguments, take the picture, print its size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report.html")
    parser.add_argument("--out", type=Path, default=Path("docs/report-demo.png"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1500)
    parser.add_argument("--colours", type=int, default=256,
                        help="palette size with ImageMagick (0: keep Chromium's PNG)")
    args = parser.parse_args()
    if not args.report.is_file():
        raise SystemExit(f"{args.report}: no such file")
    size = screenshot(args.report, args.out, args.width, args.height, args.colours)
    print(f"{args.out}: {args.width}x{args.height}, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
