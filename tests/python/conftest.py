# The package under test is the build tree's (PYTHONPATH=build/python, set by ctest); the
# repository's configs and test data are found from GPUSIM_REPO_DIR (also set by ctest).
import os

import pytest

REPO = os.environ.get("GPUSIM_REPO_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


@pytest.fixture
def repo():
    return REPO


@pytest.fixture
def configs():
    return os.path.join(REPO, "configs")
