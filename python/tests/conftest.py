"""Shared pieces of the Python package's tests: where the repository, the fixtures and the
`hazel` binary are."""

import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"


def load_fixtures():
    return json.loads((HERE / "fixtures" / "bridgestan.json").read_text())


FIXTURES = load_fixtures()


def model_for(name, **kwargs):
    """The hazel model of a fixture's program and data."""
    import hazel

    spec = FIXTURES["models"][name]
    data = None if spec["data"] is None else REPO / spec["data"]
    return hazel.Model(REPO / spec["program"], data=data, **kwargs)


def hazel_binary():
    """The `hazel` CLI: $HAZEL_BIN, else a build in the repository's target directory, else
    on PATH; None when there is none (the tests comparing with the CLI then skip)."""
    given = os.environ.get("HAZEL_BIN")
    if given:
        return Path(given)
    for profile in ("release", "debug"):
        candidate = REPO / "target" / profile / "hazel"
        if candidate.is_file():
            return candidate
    found = shutil.which("hazel")
    return Path(found) if found else None


@pytest.fixture(scope="session")
def hazel_bin():
    path = hazel_binary()
    if path is None:
        pytest.skip(
            "SKIPPED: no hazel binary (set HAZEL_BIN or run `cargo build -p hazel-cli`)"
        )
    return path
