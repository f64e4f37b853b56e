"""`tessera conform --html`: the page is self-contained, carries the heat map, failures and
settings, and renders in headless Chromium (Debian's `chromium`, installed by
scripts/setup-deps.sh) to a screenshot that is not blank, with no console message and with the
marker its inline script sets. Skips with a reason when chromium is absent.

The binary is $TESSERA_BIN, or build/default/tools/tessera.
"""
import os
import pathlib
import re
import shutil
import struct
import subprocess
import zlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build/default/tools/tessera"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def png_pixels(data):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes) into rows of
    (r, g, b) tuples: enough of the format to count colours without an imaging library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return rows


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if not BIN.exists():
        pytest.fail(f"tessera binary not found at {BIN}; build first")
    out = tmp_path_factory.mktemp("html") / "out.html"
    r = subprocess.run([str(BIN), "conform", "--device", "cpu:0", "--filter", "exp*", "--html",
                        str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    return out


def test_page_is_self_contained_and_complete(report):
    html = report.read_text()
    # Nothing from the network: no external scripts, styles, images or fonts.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html
    # A heat map with a cell for exp x f32 on cpu:0, numbers in its tooltip.
    assert re.search(r'<td class="cell"[^>]*title="exp f32 on cpu:0: \d+/\d+ pass; worst ', html)
    for dtype in ("f16", "bf16", "f32", "f64"):
        assert f"<th>{dtype}</th>" in html
    assert "<h2>Failures</h2>" in html and "<h2>Findings</h2>" in html
    # The run's settings.
    for key, value in (("seed", "1"), ("profile", "full"), ("devices", "cpu:0"), ("filter", "exp*")):
        assert re.search(rf"<tr><th>{key}</th><td>{re.escape(value)}</td></tr>", html), key
    assert re.search(r"<tr><th>tessera</th><td>\d+\.\d+\.\d+</td></tr>", html)
    assert re.search(r"<tr><th>started \(UTC\)</th><td>\d{4}-\d\d-\d\dT", html)


def chromium(*args):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                    "(scripts/setup-deps.sh installs it)")
def test_page_renders_in_headless_chromium(report, tmp_path):
    url = report.resolve().as_uri()
    shot = tmp_path / "shot.png"
    r = chromium(f"--screenshot={shot}", "--window-size=1200,900", url)
    assert shot.exists(), r.stderr[-3000:]
    console = [l for l in r.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    assert console == [], console
    rows = png_pixels(shot.read_bytes())
    assert len(rows) == 900 and len(rows[0]) == 1200
    colours = {px for row in rows[::4] for px in row[::4]}
    assert len(colours) >= 8, colours  # text, headings, green..red heat-map cells
    white = sum(px == (255, 255, 255) for row in rows[::4] for px in row[::4])
    assert white < 0.97 * len(rows[::4]) * len(rows[0][::4])
    # Some heat-map green (a passing cell): g well above r and b.
    assert any(g > r + 40 and g > b + 40 for (r, g, b) in colours)
    dom = chromium("--dump-dom", url)
    assert 'data-rendered="ok"' in dom.stdout, dom.stderr[-3000:]
    assert re.search(r'<span id="cellcount">\d+ cells, 0 over budget\.</span>', dom.stdout)
