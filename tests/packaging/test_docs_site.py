"""The documentation site builds as `.ci/docs` builds it: strict (a broken link, a missing anchor
or an unresolved reference fails), offline (no asset from another host), and the reference holds
every public name and the REST API's paths relative to the host's include. It takes tens of
seconds on a shared 2-core machine: marked slow, so the fast loop leaves it to CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import scheduling

ROOT = Path(__file__).parents[2]
# An asset a page would load from elsewhere: a script, a style sheet, an image, a font.
REMOTE_ASSET = re.compile(
    r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=\"(?:https?:)?//[^\"]+\"|"
    r"url\((?:'|\")?(?:https?:)?//",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        env={**env, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return folder


@pytest.mark.slow
def test_the_site_loads_nothing_from_another_host(site: Path) -> None:
    found = [
        f"{path.relative_to(site)}: {match.group(0)}"
        for path in site.rglob("*")
        if path.suffix in {".html", ".css"}
        for match in REMOTE_ASSET.finditer(path.read_text(errors="replace"))
    ]

    assert not found, "\n".join(found[:20])


@pytest.mark.slow
def test_the_reference_shows_every_public_name(site: Path) -> None:
    facade = (site / "reference" / "facade" / "index.html").read_text()
    modules = (site / "reference" / "modules" / "index.html").read_text()

    for name in scheduling.__all__:
        assert f'id="scheduling.{name}"' in facade, name
    for module in scheduling.PUBLIC_MODULES:
        assert f'id="{module}' in modules, module


@pytest.mark.slow
def test_the_rest_reference_gives_paths_relative_to_the_include(site: Path) -> None:
    page = (site / "reference" / "rest-api" / "index.html").read_text()

    assert "/api/scheduling/events/" in page  # the note: where the tutorial's include puts them
    assert "<code>/events/scheduling_jobs/scheduledjobrun/{id}/history/</code>" in page
    assert "<code>/jobs/{key}/</code>" in page
    assert "/events/purchases/" not in page  # the demo's models are not the reference
