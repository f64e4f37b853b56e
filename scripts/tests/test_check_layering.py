"""The layering check must flag each forbidden include and accept the allowed ones."""
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "check_layering.py"


def run(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)


def test_clean_tree_passes(tmp_path):
    r = run(tmp_path, {
        "ir/core/a.cpp": '#include "ir/core/ir.h"\n',
        "backends/cuda/codegen/c.cpp": '#include "backends/llvm/lowering.h"\n#include "ir/core/ir.h"\n',
        "backends/cuda/runtime/d.cpp": '#include "backends/cuda/runtime/x.h"\n#include <cuda.h>\n',
        "backends/vulkan/runtime/e.cpp": '#include "backends/gpu_module.h"\n',
    })
    assert r.returncode == 0, r.stdout
    assert "layering: ok" in r.stdout


def test_each_rule_is_enforced(tmp_path):
    r = run(tmp_path, {
        "ir/core/a.cpp": '#include "hal/include/tessera/hal.h"\n',
        "hal/src/b.cpp": '  #  include "ir/core/ir.h"\n',
        "backends/cuda/runtime/c.cpp": '#include "backends/rocm/runtime/x.h"\n',
        "backends/vulkan/codegen/d.cpp": '#include <vulkan/vulkan.h>\n',
        "backends/cpu/runtime/e.cpp": '#include "backends/builtin_drivers.h"\n',
    })
    assert r.returncode == 1
    out = r.stdout
    assert "ir/core/a.cpp:1: ir/ must not include hal/" in out
    assert "hal/src/b.cpp:1: hal/ must not include ir/" in out
    assert "backend 'cuda' must not include backend 'rocm'" in out
    assert "backend 'cpu' must not include backend 'builtin_drivers.h'" in out
    assert "backends/vulkan/codegen/d.cpp:1: codegen must not include a vendor runtime header" in out
