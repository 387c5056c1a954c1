"""`reasonlab report export ID --format html|md|latex`: a published revision of a report written from the
shell, against the real API app (sqlite)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import client as cli_client
from cli.main import main
from tests.cli.conftest import InProcessApi


def test_a_report_is_exported_in_each_format(
    cli_api: InProcessApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cli_client._client(None, None) as client:
        projects = client.request("GET", "/projects")
        project = next(p["id"] for p in projects if p["name"] == "default")
        blocks = [{"id": "m", "type": "markdown", "text": "**Finding**: loss falls as $t^{-1}$."}]
        report = client.request(
            "POST", f"/projects/{project}/reports", json_body={"title": "Finding", "blocks": blocks}
        )
    runner = CliRunner()
    unpublished = runner.invoke(main, ["report", "export", str(report["id"])])
    assert unpublished.exit_code == 1 and "no published revision" in unpublished.output
    with cli_client._client(None, None) as client:
        client.request("POST", f"/reports/{report['id']}/publish", json_body={"base_version": 1})

    monkeypatch.chdir(tmp_path)
    html = runner.invoke(main, ["report", "export", str(report["id"])])
    assert html.exit_code == 0, html.output
    page = (tmp_path / f"report-{report['id']}-r1.html").read_text()
    assert "<strong>Finding</strong>" in page and "<script" not in page

    out = tmp_path / "md.zip"
    md = runner.invoke(main, ["report", "export", str(report["id"]), "--format", "md", "-o", str(out)])
    assert md.exit_code == 0, md.output
    assert "$t^{-1}$" in zipfile.ZipFile(out).read("report.md").decode()

    latex = runner.invoke(
        main, ["report", "export", str(report["id"]), "--format", "latex", "--revision", "1"]
    )
    assert latex.exit_code == 0, latex.output
    tex = zipfile.ZipFile(tmp_path / f"report-{report['id']}-r1-latex.zip").read("report.tex").decode()
    assert "\\begin{document}" in tex and "$t^{-1}$" in tex

    missing = runner.invoke(main, ["report", "export", str(report["id"]), "--revision", "9"])
    assert (
        missing.exit_code == 1
        and "revision 9 of report" in missing.output
        and "Traceback" not in missing.output
    )
