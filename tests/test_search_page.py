"""The search page in a real headless browser (Debian's chromium and chromedriver through
selenium) against ``hybrid-engine serve`` on loopback: typing a query, then applying a filter,
then clicking a facet value, each shows the hits the API gives for the same request, with
highlights and each hit's place in the legs; a server with an API key answers the page
nothing until the key is typed. ``HYBRID_ENGINE_SCREENSHOT=FILE`` saves the page after the
facet click (docs/server.md's picture)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_process import saved_bm25_index

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the test extra) is absent")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_S = 20.0


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """A saved BM25-only index of 40 documents with metadata (no model to load)."""
    return saved_bm25_index(tmp_path / "index", 40)


@pytest.fixture
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (apt-get install)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1200,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _api(url: str, body: dict[str, Any], key: str | None = None) -> list[dict[str, Any]]:
    headers = {"X-API-Key": key} if key else {}
    answer = httpx.post(f"{url}/search", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["results"][0]["hits"]


def _search(browser: Any, searches: int) -> list[dict[str, str]]:
    """Wait for the page's ``searches``-th answer; the hits it shows."""
    WebDriverWait(browser, WAIT_S).until(
        lambda d: (
            d.find_element(By.TAG_NAME, "body").get_attribute("data-searches") == str(searches)
        )
    )
    return [
        {
            "id": item.get_attribute("data-id"),
            "snippet": item.find_element(By.CLASS_NAME, "snippet").get_attribute("innerHTML"),
            "legs": item.find_element(By.CLASS_NAME, "legs").text,
        }
        for item in browser.find_elements(By.CSS_SELECTOR, "#hits li")
    ]


def test_the_page_shows_what_the_api_answers(index: Path, serve: Any, browser: Any) -> None:
    url = serve(str(index), "--port", "0").url()
    browser.get(url + "/")
    WebDriverWait(browser, WAIT_S).until(
        lambda d: "40 documents" in d.find_element(By.ID, "status").text
    )
    query = "river stone"
    browser.find_element(By.ID, "query").send_keys(query)
    browser.find_element(By.ID, "facets").send_keys("lang,group")
    browser.find_element(By.ID, "go").click()
    shown = _search(browser, 1)
    expected = _api(url, {"query": query, "k": 10, "highlight": True, "explain": True})
    assert [hit["id"] for hit in shown] == [hit["id"] for hit in expected]
    assert [hit["snippet"] for hit in shown] == [hit["highlight"] for hit in expected]
    assert all("bm25 #" in hit["legs"] for hit in shown)

    where = {"group": {"$in": [1, 2]}}
    browser.find_element(By.ID, "filter").send_keys(json.dumps(where))
    browser.find_element(By.ID, "go").click()
    shown = _search(browser, 2)
    assert [hit["id"] for hit in shown] == [
        hit["id"] for hit in _api(url, {"query": query, "filter": where})
    ]

    button = browser.find_element(By.CSS_SELECTOR, "#facet-counts button[data-field='lang']")
    value = json.loads(button.get_attribute("data-value"))
    button.click()
    shown = _search(browser, 3)
    narrowed = {**where, "lang": value}
    assert json.loads(browser.find_element(By.ID, "filter").get_attribute("value")) == narrowed
    expected = _api(url, {"query": query, "filter": narrowed})
    assert [hit["id"] for hit in shown] == [hit["id"] for hit in expected] and shown
    screenshot = os.environ.get("HYBRID_ENGINE_SCREENSHOT")
    if screenshot:
        browser.save_screenshot(screenshot)


def test_the_page_needs_the_key_of_a_keyed_server(index: Path, serve: Any, browser: Any) -> None:
    url = serve(str(index), "--port", "0", api_key="s3cret").url()
    browser.get(url + "/")
    browser.find_element(By.ID, "query").send_keys("cat")
    browser.find_element(By.ID, "go").click()
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "error").text)
    assert "X-API-Key" in browser.find_element(By.ID, "error").text
    assert browser.find_elements(By.CSS_SELECTOR, "#hits li") == []
    browser.find_element(By.ID, "apikey").send_keys("s3cret")
    browser.find_element(By.ID, "go").click()
    shown = _search(browser, 1)
    assert [hit["id"] for hit in shown] == [
        hit["id"] for hit in _api(url, {"query": "cat"}, key="s3cret")
    ]
