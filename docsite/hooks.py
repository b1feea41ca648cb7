"""mkdocs hooks (mkdocs.yml): the generated reference pages join the site's files, written
from the code at each build (docsite.pages), never committed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).parents[1]
# mkdocs loads this file by path, and restores sys.path after: the project's packages stay
# importable for the build (the pages set Django up with the demo's settings).
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docsite import pages  # noqa: E402

GENERATED = {
    "reference/facade.md": pages.facade_page,
    "reference/modules.md": pages.modules_page,
    "reference/settings.md": pages.settings_page,
    "reference/commands.md": pages.commands_page,
    "reference/rest-api.md": pages.rest_api_page,
}


def on_files(files: Files, config: Any) -> Files:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    for path, write in GENERATED.items():
        files.append(File.generated(config, path, content=write()))
    return files
