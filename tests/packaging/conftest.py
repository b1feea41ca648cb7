import shutil
import sys
from pathlib import Path

import pytest

from tests.packaging.test_wheel import ROOT, run

# Copied to build from: the source tree without what a checkout accumulates (virtualenvs,
# caches, build/ and *.egg-info, which setuptools would otherwise write into ROOT).
NOT_SOURCE = shutil.ignore_patterns(
    ".*", "build", "dist", "*.egg-info", "__pycache__", "node_modules"
)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(work), str(source)])
    (built,) = work.glob("django_scheduling-*.whl")
    return built
