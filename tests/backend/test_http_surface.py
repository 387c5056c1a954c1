"""What any client sees before it logs in: odd paths answer 404s, never 500s;
unknown API paths answer the API's JSON 404; every response carries the security headers; OPTIONS
answers; cross-origin use only where it was configured."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.main import create_app
from tests.backend.conftest import Api

INDEX = '<!doctype html><html><head><script type="module" src="/assets/app.js"></script></head></html>'


def _dashboard(api: Api, tmp_path: Path, **settings: object) -> TestClient:
    static = tmp_path / "static"
    (static / "assets").mkdir(parents=True, exist_ok=True)
    (static / "index.html").write_text(INDEX)
    (static / "assets" / "app.js").write_text("console.log(1)")
    (static / "favicon.svg").write_text("<svg/>")
    app_settings = api.settings.model_copy(update={"static_dir": static, **settings})
    return TestClient(create_app(app_settings, background=False), raise_server_exceptions=False)


@pytest.fixture
def dash(api: Api, tmp_path: Path) -> Iterator[TestClient]:
    with _dashboard(api, tmp_path) as client:
        yield client


def _api_error(response: object, status: int, code: str) -> None:
    assert response.status_code == status, (response.status_code, response.text[:200])  # type: ignore[attr-defined]
    assert response.headers["content-type"].startswith("application/json")  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"detail", "code", "errors"} and body["code"] == code


def test_nul_paths_are_404_not_500(dash: TestClient, api: Api) -> None:
    for path in ("/%00", "/api/v1/%00", "/index.html%00.js", "/assets/%00", "/runs/%00/x"):
        for headers in ({}, api.h()):
            r = dash.get(path, headers=headers)
            assert r.status_code == 404, (path, r.status_code, r.text[:200])


def test_unknown_api_paths_are_json_404s(dash: TestClient, api: Api) -> None:
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        for path in ("/api/v1/nope", "/api/v1/", "/api/v1", "/api/v1/runs/1/nope", "/api/v1/%00", "/api"):
            r = dash.request(method, path, headers=api.h())
            _api_error(r, 404, "not_found")
    # a known path with a method it lacks is still a 405, in the API's format, with its methods
    r = dash.delete("/api/v1/health")
    _api_error(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "GET, OPTIONS"
    # the dashboard keeps serving client-side routes and its files
    assert dash.get("/experiments/3").text == INDEX
    assert dash.get("/assets/app.js").text == "console.log(1)"
    assert dash.get("/favicon.svg").text == "<svg/>"
    assert dash.get("/../../etc/passwd").text == INDEX


def test_api_404s_without_a_dashboard_too(api: Api, tmp_path: Path) -> None:
    settings = api.settings.model_copy(update={"static_dir": tmp_path / "no-dashboard"})
    with TestClient(create_app(settings, background=False)) as client:
        _api_error(client.get("/api/v1/nope", headers=api.h()), 404, "not_found")
        _api_error(client.get("/nope"), 404, "not_found")
        _api_error(client.delete("/api/v1/health"), 405, "method_not_allowed")


def test_every_response_carries_the_security_headers(dash: TestClient, api: Api) -> None:
    responses = {
        "dashboard": dash.get("/"),
        "route": dash.get("/runs/1"),
        "asset": dash.get("/assets/app.js"),
        "api": dash.get("/api/v1/health"),
        "api error": dash.get("/api/v1/experiments"),
        "api 404": dash.get("/api/v1/nope"),
        "docs": dash.get("/api/v1/docs"),
        "413": dash.post("/api/v1/experiments", content=b"x", headers={"content-length": str(1 << 30)}),
    }
    for name, r in responses.items():
        assert r.headers["x-content-type-options"] == "nosniff", name
        assert r.headers["x-frame-options"] == "DENY", name
        assert r.headers["referrer-policy"] == "no-referrer", name
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"], name
    csp = _directives(responses["dashboard"].headers["content-security-policy"])
    assert csp["default-src"] == ["'self'"]
    assert csp["script-src"] == ["'self'"]  # no inline or eval'd script can run on the dashboard
    assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'self'"]
    assert csp["connect-src"] == ["'self'"]
    assert _directives(responses["api"].headers["content-security-policy"])["default-src"] == ["'none'"]
    docs_csp = responses["docs"].headers["content-security-policy"]
    assert "http" not in docs_csp  # no CDN: Swagger UI comes from the server itself
    assert _directives(docs_csp)["script-src"] == ["'self'", "'unsafe-inline'"]


def test_docs_load_swagger_ui_from_the_server_itself(dash: TestClient, tmp_path: Path) -> None:
    page = dash.get("/api/v1/docs")
    assert page.status_code == 200
    assert "cdn.jsdelivr.net" not in page.text and "https://" not in page.text
    assert '"/assets/swagger/swagger-ui-bundle.js"' in page.text
    assert '"/assets/swagger/swagger-ui.css"' in page.text
    assert "'/api/v1/openapi.json'" in page.text or '"/api/v1/openapi.json"' in page.text
    # the build's copy of swagger-ui-dist (frontend/vite.config.ts) is served as a dashboard asset
    swagger = tmp_path / "static" / "assets" / "swagger"
    swagger.mkdir(parents=True)
    (swagger / "swagger-ui-bundle.js").write_text("window.SwaggerUIBundle = 1")
    asset = dash.get("/assets/swagger/swagger-ui-bundle.js")
    assert asset.status_code == 200 and asset.text == "window.SwaggerUIBundle = 1"


def _directives(policy: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in policy.split(";"):
        name, *values = part.split()
        out[name] = values
    return out


def test_options_answers_the_allowed_methods(dash: TestClient, api: Api) -> None:
    r = dash.options("/api/v1/experiments")
    assert r.status_code == 204
    assert set(r.headers["allow"].split(", ")) == {"GET", "POST", "OPTIONS"}
    assert r.headers["x-content-type-options"] == "nosniff"
    r = dash.options("/api/v1/runs/5/tags/x")
    assert set(r.headers["allow"].split(", ")) == {"PUT", "DELETE", "OPTIONS"}
    assert dash.options("/").status_code == 204
    _api_error(dash.options("/api/v1/nope"), 404, "not_found")
    # a browser's cross-origin preflight gets no CORS grant: cross-origin use is off unless configured
    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    r = dash.options("/api/v1/experiments", headers=preflight)
    assert r.status_code == 204 and "access-control-allow-origin" not in r.headers
    r = dash.get("/api/v1/health", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_configured_cors_origins_are_granted(api: Api, tmp_path: Path) -> None:
    with _dashboard(api, tmp_path, cors_origins=["https://lab.example"]) as client:
        ok = {
            "Origin": "https://lab.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        }
        r = client.options("/api/v1/experiments", headers=ok)
        assert r.status_code == 200, r.text
        assert r.headers["access-control-allow-origin"] == "https://lab.example"
        assert "authorization" in r.headers["access-control-allow-headers"].lower()
        assert r.headers["x-content-type-options"] == "nosniff"
        r = client.options("/api/v1/experiments", headers={**ok, "Origin": "https://evil.example"})
        assert r.status_code == 400 and "access-control-allow-origin" not in r.headers
        r = client.get("/api/v1/experiments", headers={"Origin": "https://lab.example", **api.h()})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://lab.example"
        # a plain OPTIONS (no preflight) still answers the methods
        assert client.options("/api/v1/experiments").status_code == 204


def test_cors_origins_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    from backend.settings import Settings

    monkeypatch.setenv("REASONLAB_CORS_ORIGINS", "https://a.example, https://b.example")
    assert Settings(home=home).cors_origins == ["https://a.example", "https://b.example"]
    monkeypatch.setenv("REASONLAB_CORS_ORIGINS", "")
    assert Settings(home=home).cors_origins == []


def test_hashed_assets_are_cached_for_good_and_the_page_is_revalidated(api: Api, tmp_path: Path) -> None:
    """A built chunk's name carries its content's hash: browsers keep it without asking again. Files
    without one (Swagger UI's) and index.html (which names the current chunks) are revalidated."""
    static = tmp_path / "static"
    (static / "assets" / "swagger").mkdir(parents=True)
    (static / "index.html").write_text(INDEX)
    (static / "assets" / "index-B59A1lcm.js").write_text("console.log(1)")
    (static / "assets" / "mantine-CKg0vgt5.css").write_text("a{}")
    (static / "assets" / "swagger" / "swagger-ui-bundle.js").write_text("ui")
    (static / "assets" / "app.js").write_text("console.log(2)")
    settings = api.settings.model_copy(update={"static_dir": static})
    with TestClient(create_app(settings, background=False)) as client:
        for path in ("/assets/index-B59A1lcm.js", "/assets/mantine-CKg0vgt5.css"):
            r = client.get(path)
            assert (
                r.status_code == 200 and r.headers["cache-control"] == "public, max-age=31536000, immutable"
            )
        for path in ("/assets/swagger/swagger-ui-bundle.js", "/assets/app.js"):
            r = client.get(path)
            assert r.status_code == 200 and "cache-control" not in r.headers, path
        for path in ("/", "/runs/1", "/experiments/2"):
            r = client.get(path)
            assert r.text == INDEX and r.headers["cache-control"] == "no-cache"
