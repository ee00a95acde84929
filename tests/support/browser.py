"""Headless Chromium for end-to-end tests: looking at the Airflow UI as a person does.

Debian's ``chromium`` and ``chromium-driver`` (``/usr/bin/chromium``, ``/usr/bin/chromedriver``) driven by selenium.
The browser may reach 127.0.0.1 only (``--host-resolver-rules``: every other host name fails to resolve), keeps no
profile between sessions (a new ``--user-data-dir``), and phones nowhere (no sync, component updates, background
networking, QUIC).

::

    with Browser(tmp_path / "browser") as browser:
        browser.login(airflow.base_url, "admin", airflow.passwords["admin"])
        browser.open(f"{airflow.base_url}/dags/train")
        browser.wait_for("[data-testid='dag-graph']")
        browser.screenshot(tmp_path / "dag.png")
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Flags of every session. ``--host-resolver-rules``: only 127.0.0.1 resolves, so the page cannot reach another host.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)
#: Where Airflow's UI keeps the colour mode: next-themes with ``storageKey="theme"`` and ``attribute="class"``, so
#: ``localStorage["theme"]`` is ``light``, ``dark`` or ``system`` and ``<html>`` has class ``light`` or ``dark``.
COLOR_MODE_STORAGE_KEY = "theme"
#: The labels of Airflow's user menu > Appearance items (English locale).
COLOR_MODE_LABELS = {"light": "Light Mode", "dark": "Dark Mode", "system": "Follow System Setting"}


class Browser:
    """One headless Chromium session (selenium WebDriver), closed by :meth:`close` or on leaving ``with``.

    :param user_data_dir: an empty directory for the profile; None: a temporary one.
    :param width: the window's width, in CSS pixels.
    :param height: the window's height, in CSS pixels.
    :param timeout: default seconds for :meth:`wait_for`.
    :raises FileNotFoundError: Chromium or its driver is not installed.
    """

    def __init__(
        self, user_data_dir: Path | None = None, *, width: int = 1400, height: int = 900, timeout: float = 30.0
    ) -> None:
        for binary in (CHROMIUM, CHROMEDRIVER):
            if not Path(binary).is_file():
                raise FileNotFoundError(
                    f"{binary} is missing: install Debian's chromium and chromium-driver (scripts/setup-venv.sh "
                    f"does, for the test extra)"
                )
        self._tmp = None if user_data_dir is not None else tempfile.TemporaryDirectory(prefix="chromium-")
        profile = user_data_dir if user_data_dir is not None else Path(self._tmp.name)
        profile.mkdir(parents=True, exist_ok=True)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
            options.add_argument(flag)
        # The browser's console (errors of the page's scripts) for :meth:`console_errors`.
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.timeout = timeout
        # Explicit driver and browser paths: selenium's own manager (which downloads drivers) is not run.
        try:
            self.driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
        except BaseException:
            if self._tmp is not None:
                self._tmp.cleanup()
            raise
        self.set_viewport(width, height)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Quit the browser (and its driver) and remove a temporary profile."""
        try:
            self.driver.quit()
        finally:
            if self._tmp is not None:
                self._tmp.cleanup()

    def set_viewport(self, width: int, height: int) -> None:
        """Size the window so that the page's viewport (and so a screenshot) is ``width`` x ``height`` CSS pixels:
        headless Chromium's window size includes room for browser chrome it does not draw."""
        self.driver.set_window_size(width, height)
        inner_width, inner_height = self.script("return [window.innerWidth, window.innerHeight]")
        self.driver.set_window_size(2 * width - inner_width, 2 * height - inner_height)

    # ---- pages -------------------------------------------------------------------------------------------------

    def login(self, base_url: str, username: str, password: str, *, next_path: str = "/") -> None:
        """Sign in through the simple auth manager's form at ``/auth/login`` and wait until it has set the ``_token``
        cookie and moved on.

        :param base_url: the api-server's base URL, e.g. ``http://127.0.0.1:8080``.
        :param next_path: where the form sends the browser afterwards.
        :raises TimeoutException: the form did not appear, or the login was not accepted.
        """
        self.open(f"{base_url}/auth/login?next={quote(base_url + next_path, safe='')}")
        self.wait_for("input[name='username']").send_keys(username)
        self.driver.find_element(By.CSS_SELECTOR, "input[name='password']").send_keys(password)
        self.driver.find_element(By.CSS_SELECTOR, "button[type='submit']").click()
        WebDriverWait(self.driver, self.timeout).until(
            lambda d: d.get_cookie("_token") is not None and "/auth/login" not in d.current_url,
            f"login as {username} not accepted (still at {self.driver.current_url})",
        )

    def open(self, url: str) -> None:
        """Load ``url`` in the window."""
        self.driver.get(url)

    def wait_for(self, selector: str, *, timeout: float | None = None, visible: bool = True) -> WebElement:
        """Wait until an element matching the CSS ``selector`` is in the page (and visible, by default).

        :param timeout: seconds; None: the browser's default.
        :returns: the first such element.
        :raises TimeoutException: none appeared within ``timeout``; the message names the selector and the URL.
        """
        condition = (
            expected_conditions.visibility_of_element_located
            if visible
            else expected_conditions.presence_of_element_located
        )
        try:
            return WebDriverWait(self.driver, timeout or self.timeout).until(condition((By.CSS_SELECTOR, selector)))
        except TimeoutException as e:
            raise TimeoutException(
                f"no {selector!r} within {timeout or self.timeout:g} s at {self.driver.current_url}"
            ) from e

    def wait_for_text(self, text: str, *, exact: bool = False, timeout: float | None = None) -> WebElement:
        """Wait until an element whose own text contains ``text`` (or, ``exact``, is ``text`` once whitespace is
        normalised) is visible.

        :param timeout: seconds; None: the browser's default.
        :raises TimeoutException: none appeared within ``timeout``.
        """
        literal = _xpath_literal(text)
        xpath = f"//*[text()[normalize-space(.)={literal}]]" if exact else f"//*[text()[contains(., {literal})]]"
        try:
            return WebDriverWait(self.driver, timeout or self.timeout).until(
                expected_conditions.visibility_of_element_located((By.XPATH, xpath))
            )
        except TimeoutException as e:
            raise TimeoutException(
                f"no text {text!r} within {timeout or self.timeout:g} s at {self.driver.current_url}"
            ) from e

    def screenshot(self, path: Path) -> Path:
        """Save the window as a PNG at ``path`` (directories created).

        :raises RuntimeError: the driver could not take it.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        if not self.driver.save_screenshot(str(path)):
            raise RuntimeError(f"could not save a screenshot to {path}")
        return path

    def script(self, source: str, *args: Any) -> Any:
        """Run JavaScript in the page (``arguments[0]``... are ``args``); its return value."""
        return self.driver.execute_script(source, *args)

    def console_errors(self) -> list[str]:
        """The page's console messages at level SEVERE since the last call (script errors, failed loads)."""
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    # ---- colour mode -------------------------------------------------------------------------------------------

    def color_mode(self) -> str:
        """The colour mode the UI shows now: ``light`` or ``dark`` (the class on ``<html>``)."""
        classes = str(self.script("return document.documentElement.className")).split()
        return "dark" if "dark" in classes else "light"

    def set_color_mode(self, mode: str) -> None:
        """Switch the UI's colour mode as a user does: the nav's User button > Appearance > the mode; wait until
        the page shows it. Airflow keeps the choice in ``localStorage["theme"]`` (:data:`COLOR_MODE_STORAGE_KEY`).

        :param mode: ``light``, ``dark`` or ``system``.
        :raises TimeoutException: the menu or its item was not found (the page must be one of Airflow's UI), or the
            page did not switch.
        """
        self.wait_for_text("User", exact=True).click()
        self.wait_for_text("Appearance", exact=True).click()
        self.wait_for_text(COLOR_MODE_LABELS[mode], exact=True).click()
        WebDriverWait(self.driver, self.timeout).until(
            lambda d: (
                d.execute_script("return localStorage.getItem(arguments[0])", COLOR_MODE_STORAGE_KEY) == mode
                and (mode == "system" or self.color_mode() == mode)
            ),
            f"the UI did not switch to {mode}",
        )
        # Close the menu (it would cover the page in a screenshot).
        self.driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def _xpath_literal(text: str) -> str:
    """``text`` as an XPath 1.0 string literal (which has no escapes)."""
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in text.split("'")) + ")"
