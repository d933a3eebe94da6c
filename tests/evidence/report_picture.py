#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report.html as a picture: the timeline's regions in Chromium's screenshot, against the positions the page's SVG and Chromium's layout give.

usage: report_picture.py SCREENSHOT.png GEOMETRY.json REPORT.html
GEOMETRY.json is what the instrumented copy of the page measured in Chromium (the timeline
SVG's box in page pixels and its viewBox, each of its texts' box in SVG units, the lines of
the detail cells that hold an error). Prints PASS/FAIL lines; exits 1 on a FAIL.
Python's standard library only: the PNG is decoded here (8-bit RGB or RGBA, not interlaced).
"""
import json
import re
import struct
import sys
import zlib

FAILS = 0


def check(ok, name, why=""):
    global FAILS
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + why))
    FAILS += 0 if ok else 1


def png_chunks(path):
    """Width, height, bit depth, colour type, interlace and the IDAT bytes of a PNG."""
    d = open(path, "rb").read()
    assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", d[16:29])
    i, idat = 8, b""
    while i < len(d):
        n, = struct.unpack(">I", d[i:i + 4])
        if d[i + 4:i + 8] == b"IDAT":
            idat += d[i + 8:i + 8 + n]
        i += 12 + n
    return w, h, depth, ctype, lace, idat


def png_rows(path, upto):
    """The first upto rows of the PNG as lists of (r, g, b) tuples."""
    w, h, depth, ctype, lace, idat = png_chunks(path)
    assert depth == 8 and ctype in (2, 6) and lace == 0, f"PNG type {ctype}/{depth}/{lace}"
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompressobj().decompress(idat, (w * bpp + 1) * min(h, upto))
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(min(h, upto)):
        f = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for x in range(bpp, stride):
                cur[x] = (cur[x] + cur[x - bpp]) & 255
        elif f == 2:
            cur = bytearray((a + b) & 255 for a, b in zip(cur, prev))
        elif f == 3:
            for x in range(stride):
                left = cur[x - bpp] if x >= bpp else 0
                cur[x] = (cur[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[x] = (cur[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(cur[x:x + 3]) for x in range(0, stride, bpp)])
        prev = cur
    return rows


def is_mark(px):
    """A mark's fill (green, red, amber, grey, purple): a dark channel. Lane backgrounds,
    grid lines, band edges, the rotation bar and the overlap shading are all light."""
    return min(px) < 120


def is_label_blue(px):
    """The change band labels' #0969da, antialiased edges included."""
    r, g, b = px
    return r < 110 and b > 170 and b - r > 90


def timeline_marks(html):
    """(x, y) of each mark of the timeline SVG, in SVG units: circles, key-state squares
    (14 wide, at x - 7, y - 7), rotation diamonds (a path from the top point x, y - 8)."""
    m = re.search(r'<svg class="plot" viewBox="0 0 (\d+) (\d+)" role="img" '
                  r'aria-label="change timeline">(.*?)</svg>', html, re.S)
    assert m, "no timeline SVG in the page"
    svg, marks = m.group(3), []
    for cx, cy in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)" r="7"', svg):
        marks.append((float(cx), float(cy)))
    for x, y in re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="14" height="14" rx="2"', svg):
        marks.append((float(x) + 7, float(y) + 7))
    for x, y in re.findall(r'<path d="M([\d.]+) ([\d.]+)l8 8l-8 8l-8 -8z"', svg):
        marks.append((float(x), float(y) + 8))
    return marks


def main(png, geom_path, html_path):
    g = json.load(open(geom_path))
    html = open(html_path, encoding="utf-8").read()
    box = g["svg"]
    s = box["width"] / box["vb"]  # page pixels per SVG unit
    right = box["left"] + box["width"]
    rows = png_rows(png, int(box["top"] + box["height"]) + 2)

    def px(x, y):  # the screenshot's pixel at SVG point (x, y)
        return rows[int(round(box["top"] + y * s))][int(round(box["left"] + x * s))]

    # every text of the timeline inside the SVG by Chromium's layout (the SVG clips what runs
    # past it); the change band labels also drawn whole in the picture (a cut label's blue
    # runs into the SVG's edge)
    out = [f"'{t['text']}' {t['x']:.1f} to {t['x'] + t['width']:.1f}" for t in g["texts"]
           if t["x"] < 0 or t["x"] + t["width"] > box["vb"]]
    check(g["texts"] and not out, f"the timeline's {len(g['texts'])} texts lie inside the SVG "
          f"({box['vb']:.0f} wide)", "; ".join(out[:4]))
    for lb in [t for t in g["texts"] if t["cls"] == "bandlbl"]:
        name = f"timeline label '{lb['text']}'"
        y0, y1 = int(box["top"] + lb["y"] * s), int(box["top"] + (lb["y"] + lb["height"]) * s) + 1
        x0 = int(box["left"] + lb["x"] * s) - 2
        x1 = min(int(right), int(box["left"] + (lb["x"] + lb["width"]) * s) + 3)
        blue = [x for y in range(y0, y1) for x in range(max(x0, 0), x1)
                if is_label_blue(rows[y][x])]
        edge = [x for x in blue if x >= right - 3]
        ext = (max(blue) - min(blue) + 1) if blue else 0
        check(blue and not edge and ext >= 0.8 * lb["width"] * s,
              name + " drawn whole in the screenshot, clear of the SVG's right edge",
              f"{len(edge)} label pixels at the edge, drawn {ext} of {lb['width'] * s:.0f} px")
    # the marks: no two of a lane closer than a mark is wide, by the SVG's coordinates; in the
    # picture each centre has a mark's colour and the point halfway to the next mark of its
    # lane is background (two overlapping marks paint it)
    marks = timeline_marks(html)
    check(len(marks) >= 8, f"the timeline has its marks ({len(marks)})")
    lanes = {}
    for x, y in marks:
        lanes.setdefault(round(y), []).append(x)
    close, covered, unpainted = [], [], []
    for y, xs in sorted(lanes.items()):
        xs.sort()
        for x in xs:
            if not is_mark(px(x, y)):
                unpainted.append(f"({x:.1f},{y})")
        for a, b in zip(xs, xs[1:]):
            if b - a < 17:
                close.append(f"{a:.1f} and {b:.1f} at y {y}")
            if is_mark(px((a + b) / 2, y)):
                covered.append(f"between {a:.1f} and {b:.1f} at y {y}")
    check(not close, "no two marks of a lane closer than 17 SVG units", "; ".join(close[:4]))
    check(not unpainted, "every mark's centre is painted in the screenshot", " ".join(unpainted[:4]))
    check(not covered, "the screenshot shows background between neighbouring marks (no overlap)",
          "; ".join(covered[:4]))
    # a detail cell: the key id after an error starts a line of its own (Chromium's layout)
    cells = g["cells"]
    bad = [c for c in cells if "error" not in c or "keyid" not in c or c["keyid"] < c["error"] + 5]
    check(cells and not bad, "a cell's key id starts its own line below the error before it",
          json.dumps(bad or cells)[:200])
    return 1 if FAILS else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
