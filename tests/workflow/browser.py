"""Open a Snakemake report in headless Chromium (Debian's chromium and chromedriver, driven
by selenium) and view every registered result."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-quic", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1400,1000")


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    for tool in ("chromium", "chromedriver"):
        if not shutil.which(tool):
            return (f"{tool} is not installed (Debian packages chromium and chromium-driver; "
                    "scripts/install-browser.sh installs them as root)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the test extra)"
    return None


def view_every_result(page: Path, shots: Path) -> tuple[list[dict], list[dict]]:
    """Click through the report: every result category, every file toggle, every "view"
    button; a screenshot of each. Returns what each view showed in the main panel (images,
    frames, objects right of the sidebar) and the browser's SEVERE log entries."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    views: list[dict] = []
    try:
        driver.get(page.as_uri())
        time.sleep(2)
        driver.save_screenshot(str(shots / "home.png"))
        sidebar = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "a") if a.text]
        categories = sidebar[sidebar.index("About") + 1:]
        for category in categories:
            driver.get(page.as_uri())
            time.sleep(1)
            driver.find_element(By.LINK_TEXT, category).click()
            time.sleep(0.5)
            toggles = len(driver.find_elements(By.CSS_SELECTOR, "label[for^='toggle-']")) or 1
            for t in range(toggles):
                labels = driver.find_elements(By.CSS_SELECTOR, "label[for^='toggle-']")
                if labels:
                    labels[t].click()
                    time.sleep(0.3)
                for i in range(len(driver.find_elements(By.CSS_SELECTOR, "a[iconname=eye]"))):
                    eye = driver.find_elements(By.CSS_SELECTOR, "a[iconname=eye]")[i]
                    row = eye.find_element(By.XPATH, "./ancestor::tr").text.strip()
                    eye.click()
                    time.sleep(1)
                    shown = driver.execute_script(
                        "return Array.from(document.querySelectorAll('img,iframe,object,embed'))"
                        ".filter(e => e.getBoundingClientRect().left > 300 && e.clientWidth > 200"
                        " && e.clientHeight > 100).map(e => e.tagName)")
                    name = " / ".join(x for x in (category, labels[t].text if labels else "", row) if x)
                    shot = shots / (re.sub(r"\W+", "_", name).strip("_") + ".png")
                    driver.save_screenshot(str(shot))
                    views.append({"result": name, "shown": shown, "screenshot": str(shot)})
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    finally:
        driver.quit()
    return views, errors
