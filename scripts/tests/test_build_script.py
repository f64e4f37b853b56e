"""scripts/build.sh must fail when the build fails, whatever its output filter prints.

A fake `cmake` on PATH stands in for the real build: it prints ninja-style progress lines and
an error, then exits with a chosen status. (An earlier build.sh swallowed the status: with
pipefail, `build | grep || true` ran `true` after a failed build and the script went on.)
"""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_build(tmp_path, status, output):
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "build.sh", tmp_path / "scripts" / "build.sh")
    (tmp_path / "build" / "p").mkdir(parents=True)
    (tmp_path / "build" / "p" / "build.ninja").write_text("")  # configured already
    fake = tmp_path / "bin"
    fake.mkdir()
    cmake = fake / "cmake"
    cmake.write_text(f"#!/bin/sh\nprintf '{output}'\nexit {status}\n")
    cmake.chmod(cmake.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", TESSERA_JOBS="1")
    return subprocess.run(["bash", str(tmp_path / "scripts" / "build.sh"), "p"], env=env,
                          capture_output=True, text=True)


@pytest.mark.parametrize("output", [
    "[1/2] Building x.o\\n[2/2] Linking y\\n",          # only progress: grep prints nothing
    "[1/2] Building x.o\\nFAILED: x.o\\nerror: boom\\n",  # an error grep passes through
])
def test_failed_build_fails(tmp_path, output):
    r = run_build(tmp_path, 1, output)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "building preset 'p' failed" in r.stderr


@pytest.mark.parametrize("output", ["[1/1] Linking y\\n", "warning: w\\n[1/1] Linking y\\n"])
def test_good_build_passes(tmp_path, output):
    r = run_build(tmp_path, 0, output)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[1/1]" not in r.stdout  # progress lines are hidden
