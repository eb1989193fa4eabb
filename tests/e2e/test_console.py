"""The web console in real headless Chromium against ``hindsight up`` on loopback: each view loads, a
search filters, an approval empties the review queue, the explainer shows every layer, a bank token sees
no other bank, and a cross-site form post changes nothing. Screenshots are kept as test artefacts."""

from __future__ import annotations

import contextlib
import http.server
import json
import secrets
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from hindsight.cli.credentials import TOKENS_FILE, read_credentials
from hindsight.cli.mesh import READY_LINE, read_mesh
from tests.integration.test_mesh import (  # noqa: F401 - fixtures
    environment,
    shared_stores,
    start_up,
    stop_for_sure,
)

WAIT = 60.0
BANK = "console-e2e"
OTHER = "console-e2e-other"
VIEWS = ("banks", "timeline", "episodes", "facts", "entities", "lessons", "reviews", "explain", "purge")


def _browser_paths() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    assert chromium and driver, "the Debian packages chromium and chromium-driver are needed"
    return chromium, driver


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    chromium, driver = _browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1440,1000"):
        options.add_argument(argument)
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    try:
        yield chrome
    finally:
        chrome.quit()


@contextlib.contextmanager
def cross_site_page(target: str) -> Iterator[str]:
    """A page on another origin whose form posts to ``target`` by itself (as a hostile site would)."""
    html = (
        '<!doctype html><form id="f" method="post" enctype="text/plain" action="' + target + '">'
        '<input name=\'{"ids": ["t1"], "x": "\' value=\'"}\'></form>'
        "<script>document.getElementById('f').submit()</script>"
    ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{server.server_address[1]}/"
    finally:
        server.shutdown()


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content or {}


async def seed(client: Client) -> None:
    """Turns in two sessions, contradictory facts (a user's, then a later outside one), an episode."""
    await call(
        client,
        "retain",
        turns=[
            {"id": "t1", "text": "I work at Acme.", "speaker": "Alice", "time": "2023-03-01T12:00:00Z"},
            {
                "id": "t2",
                "text": "The deploy to staging failed twice because of the flaky cache.",
                "time": "2023-03-02T12:00:00Z",
                "tags": ["deploy"],
            },
        ],
        session_id="s1",
        bank=BANK,
    )
    await call(client, "retain", text="Lunch was a tomato soup.", id="t3", session_id="s2", bank=BANK)
    await call(
        client,
        "retain",
        text="I work at Globex.",
        speaker="Alice",
        source="external",
        id="t4",
        time="2024-03-01T12:00:00Z",
        session_id="s2",
        bank=BANK,
    )
    await call(
        client,
        "write_episode",
        situation="deploy to staging",
        action="cleared the cache first",
        outcome="the deploy passed",
        lesson="clear the cache before a deploy",
        success=True,
        task_type="deploy",
        session_id="s1",
        bank=BANK,
    )
    await call(client, "reflect", bank=BANK)  # reflect now knows the bank and holds its lesson
    await call(client, "retain", text="Another bank's secret: the vault code is 4711.", bank=OTHER)
    await call(client, "recall", query="vault", bank=OTHER)  # a searched bank is one reflect knows


class Page:
    """The console as a person uses it."""

    def __init__(self, driver: WebDriver, url: str, shots: Path) -> None:
        self.driver, self.url, self.shots = driver, url, shots
        self.wait = WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))

    def sign_in(self, token: str) -> None:
        self.driver.get(self.url)
        self.driver.execute_script("sessionStorage.clear()")
        self.driver.get(self.url)
        field = self.wait.until(expected_conditions.visibility_of_element_located((By.ID, "token")))
        field.send_keys(token)
        self.driver.find_element(By.ID, "signin-button").click()
        self.wait.until(expected_conditions.visibility_of_element_located((By.ID, "tabs")))
        self.loaded()

    def loaded(self) -> None:
        """Wait until the page says it is no longer loading."""
        self.wait.until(lambda d: d.find_element(By.ID, "status").text != "loading…")

    def open(self, view: str) -> str:
        self.driver.find_element(By.CSS_SELECTOR, f'#tabs button[data-view="{view}"]').click()
        self.loaded()
        text = self.driver.find_element(By.ID, "view").text
        return str(text)

    def errors(self) -> list[str]:
        return [e.text for e in self.driver.find_elements(By.CSS_SELECTOR, "#view .error")]

    def shot(self, name: str) -> Path:
        path = self.shots / f"console-{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def confirm(self) -> None:
        self.wait.until(expected_conditions.alert_is_present()).accept()

    def submit(self, name: str, value: str) -> None:
        field = self.driver.find_element(By.CSS_SELECTOR, f'#view form input[name="{name}"]')
        field.clear()
        field.send_keys(value)
        self.driver.find_element(By.CSS_SELECTOR, "#view form button[type=submit]").click()
        self.loaded()

    def rows(self, container: str = "#view") -> list[str]:
        """The text of each table row (read in one script, so a re-render cannot go stale under it)."""
        script = "return [...document.querySelectorAll(arguments[0])].map((row) => row.innerText);"
        return list(self.driver.execute_script(script, f"{container} tbody tr"))


async def test_the_console_in_chromium_against_hindsight_up(
    shared_stores: dict[str, str],  # noqa: F811
    browser: WebDriver,
    tmp_path: Path,
) -> None:
    mesh = start_up(shared_stores)
    try:
        mesh.wait_for_line(READY_LINE)
        info = read_mesh(mesh.home)
        credentials = read_credentials(mesh.home, shared_stores)
        assert info is not None and credentials is not None
        async with mcp_client(info.mcp_url, credentials.agent) as client:
            await seed(client)
        bank_token = secrets.token_urlsafe(24)
        with (mesh.home / TOKENS_FILE).open("a") as tokens:  # an agent of one bank, as a user adds one
            tokens.write(f"{bank_token}={OTHER}\n")
        origin = info.mcp_url.removesuffix("/mcp")
        page = Page(browser, f"{origin}/console", tmp_path)

        page.sign_in(credentials.admin)
        assert "admin" in browser.find_element(By.ID, "who").text
        options = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#bank option")]
        assert {BANK, OTHER} <= set(options)
        browser.find_element(By.CSS_SELECTOR, f'#bank option[value="{BANK}"]').click()
        page.loaded()
        for view in VIEWS:
            text = page.open(view)
            assert page.errors() == [], (view, page.errors())
            assert text, view
            page.shot(view)
        banks = page.open("banks")
        assert BANK in banks and OTHER in banks

        page.open("timeline")
        assert len(page.rows("#timeline-list")) == 4
        page.submit("q", "flaky cache")
        searched = page.rows("#timeline-list")
        assert len(searched) == 1 and "flaky cache" in searched[0]
        page.submit("q", "")
        browser.find_element(By.CSS_SELECTOR, '#view select[name="source"] option[value="external"]').click()
        browser.find_element(By.CSS_SELECTOR, "#view form button[type=submit]").click()
        page.loaded()
        assert [row for row in page.rows("#timeline-list")] and all(
            "Globex" in r for r in page.rows("#timeline-list")
        )
        page.shot("timeline-filtered")
        page.open("timeline")
        page.shot("timeline")

        page.open("episodes")
        assert "cleared the cache first" in browser.find_element(By.ID, "view").text
        page.open("lessons")
        assert "cache" in browser.find_element(By.ID, "view").text

        queue = page.open("reviews")
        assert "Acme" in queue and "Globex" in queue
        page.shot("reviews")
        browser.find_element(By.XPATH, "//main//button[text()='Approve']").click()
        page.confirm()
        page.wait.until(expected_conditions.presence_of_element_located((By.ID, "queue-empty")))
        assert page.rows() == []

        page.open("facts")
        page.submit("q", "Where does Alice work?")
        facts = "\n".join(page.rows("#facts-list"))
        assert "Globex" in facts and "superseded by" in facts

        page.open("entities")
        browser.find_element(By.LINK_TEXT, "Alice").click()
        page.wait.until(lambda d: "Alice" in d.find_element(By.ID, "entity-page").text)

        page.open("explain")
        page.submit("q", "why did the deploy fail?")
        page.wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#explain-out .layer"))
        )
        layers = [
            e.get_attribute("data-layer")
            for e in browser.find_elements(By.CSS_SELECTOR, "#explain-out .layer")
        ]
        assert layers == ["episodic", "semantic", "reflect"]  # working memory weighs 0: not asked
        explained = browser.find_element(By.ID, "explain-out").text
        for label in (
            "recency",
            "importance",
            "confidence",
            "trust",
            "time boost",
            "Assembled context",
            "flaky cache",
        ):
            assert label in explained, label
        browser.set_window_size(1440, 1500)  # the whole explanation, down to the context
        page.shot("explainer")
        browser.set_window_size(1440, 1000)

        page.open("timeline")
        before = len(page.rows("#timeline-list"))
        browser.find_element(
            By.XPATH, "//main//tr[contains(., 'tomato soup')]//button[text()='Forget']"
        ).click()
        page.confirm()
        page.wait.until(lambda d: len(page.rows("#timeline-list")) == before - 1)

        # an agent of one bank: sees that bank only, and the page shows nothing of another
        page.sign_in(bank_token)
        assert [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#bank option")] == [OTHER]
        assert "vault code" in page.open("timeline")
        status = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/console/api/banks/' + arguments[0] + '/timeline',"
            " {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('hindsight.console.token')}})"
            ".then(r => r.json().then(b => done([r.status, JSON.stringify(b)])));",
            BANK,
        )
        assert status[0] == 403 and "Acme" not in status[1] and "flaky" not in status[1]
        browser.execute_script(
            "const o = document.createElement('option'); o.value = o.textContent = arguments[0];"
            "document.getElementById('bank').append(o); document.getElementById('bank').value = arguments[0];"
            "document.getElementById('bank').dispatchEvent(new Event('change'));",
            BANK,
        )
        page.loaded()
        shown = browser.find_element(By.ID, "view").text
        assert "does not grant" in shown and "flaky" not in shown and "Acme" not in shown
        page.shot("bank-token-refused")

        # a hostile page posts a form to the console: refused, nothing forgotten
        forget = f"{origin}/console/api/banks/{BANK}/forget"
        with cross_site_page(forget) as hostile:
            browser.get(hostile)
            page.wait.until(lambda d: d.current_url.startswith(origin))
            assert "application/json" in browser.page_source
        async with mcp_client(info.mcp_url, credentials.agent) as client:
            listed = await call(client, "list_recent", bank=BANK, limit=10)
        assert "t1" in json.dumps(listed)
    except TimeoutException:
        with contextlib.suppress(Exception):
            browser.save_screenshot(str(tmp_path / "console-timeout.png"))
        raise
    finally:
        stop_for_sure(mesh)
