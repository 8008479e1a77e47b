"""Bar chart of bench/seed_stages.py's results, in pure Python.

    python3 bench/plot_stages.py RESULTS.json OUT.png

Two panels: the training iteration time per stage (iter_ms, median, with a
min-max whisker) and the optimizer step alone (opt_ms, median); per stage a
kfuse bar and a torch bar beside it where the JSON has one. Stage 1 is the
article's baseline (plain torch AdamW, fp32), drawn grey. torch's stage 3
is not run (its LayerNorm is already native): when the JSON lists it under
"omitted", torch's stage 2 bar is drawn again there, outlined. Failed rows
read "error". The PNG is written with zlib and struct; the text is a 5x7
bitmap font (lowercase with a descender row) drawn at 2x and 3x.
"""

import json
import math
import struct
import sys
import zlib

# -- a 5x7 bitmap font (8 rows: row 7 holds descenders) -----------------------

_GLYPHS = {
    "A": ".###.|#...#|#...#|#####|#...#|#...#|#...#",
    "B": "####.|#...#|#...#|####.|#...#|#...#|####.",
    "C": ".###.|#...#|#....|#....|#....|#...#|.###.",
    "D": "###..|#..#.|#...#|#...#|#...#|#..#.|###..",
    "E": "#####|#....|#....|####.|#....|#....|#####",
    "F": "#####|#....|#....|####.|#....|#....|#....",
    "G": ".###.|#...#|#....|#.###|#...#|#...#|.####",
    "H": "#...#|#...#|#...#|#####|#...#|#...#|#...#",
    "I": ".###.|..#..|..#..|..#..|..#..|..#..|.###.",
    "J": "..###|...#.|...#.|...#.|...#.|#..#.|.##..",
    "K": "#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#",
    "L": "#....|#....|#....|#....|#....|#....|#####",
    "M": "#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#",
    "N": "#...#|#...#|##..#|#.#.#|#..##|#...#|#...#",
    "O": ".###.|#...#|#...#|#...#|#...#|#...#|.###.",
    "P": "####.|#...#|#...#|####.|#....|#....|#....",
    "Q": ".###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#",
    "R": "####.|#...#|#...#|####.|#.#..|#..#.|#...#",
    "S": ".####|#....|#....|.###.|....#|....#|####.",
    "T": "#####|..#..|..#..|..#..|..#..|..#..|..#..",
    "U": "#...#|#...#|#...#|#...#|#...#|#...#|.###.",
    "V": "#...#|#...#|#...#|#...#|#...#|.#.#.|..#..",
    "W": "#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#.",
    "X": "#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#",
    "Y": "#...#|#...#|.#.#.|..#..|..#..|..#..|..#..",
    "Z": "#####|....#|...#.|..#..|.#...|#....|#####",
    "a": ".....|.....|.###.|....#|.####|#...#|.####",
    "b": "#....|#....|#.##.|##..#|#...#|#...#|####.",
    "c": ".....|.....|.###.|#....|#....|#...#|.###.",
    "d": "....#|....#|.##.#|#..##|#...#|#...#|.####",
    "e": ".....|.....|.###.|#...#|#####|#....|.###.",
    "f": "..##.|.#..#|.#...|###..|.#...|.#...|.#...",
    "g": ".....|.....|.####|#...#|#...#|.####|....#|.###.",
    "h": "#....|#....|#.##.|##..#|#...#|#...#|#...#",
    "i": "..#..|.....|.##..|..#..|..#..|..#..|.###.",
    "j": "...#.|.....|..##.|...#.|...#.|...#.|#..#.|.##..",
    "k": "#....|#....|#..#.|#.#..|##...|#.#..|#..#.",
    "l": ".##..|..#..|..#..|..#..|..#..|..#..|.###.",
    "m": ".....|.....|##.#.|#.#.#|#.#.#|#.#.#|#.#.#",
    "n": ".....|.....|#.##.|##..#|#...#|#...#|#...#",
    "o": ".....|.....|.###.|#...#|#...#|#...#|.###.",
    "p": ".....|.....|####.|#...#|#...#|####.|#....|#....",
    "q": ".....|.....|.####|#...#|#...#|.####|....#|....#",
    "r": ".....|.....|#.##.|##..#|#....|#....|#....",
    "s": ".....|.....|.###.|#....|.###.|....#|####.",
    "t": ".#...|.#...|###..|.#...|.#...|.#..#|..##.",
    "u": ".....|.....|#...#|#...#|#...#|#..##|.##.#",
    "v": ".....|.....|#...#|#...#|#...#|.#.#.|..#..",
    "w": ".....|.....|#...#|#...#|#.#.#|#.#.#|.#.#.",
    "x": ".....|.....|#...#|.#.#.|..#..|.#.#.|#...#",
    "y": ".....|.....|#...#|#...#|#...#|.####|....#|.###.",
    "z": ".....|.....|#####|...#.|..#..|.#...|#####",
    "0": ".###.|#...#|#..##|#.#.#|##..#|#...#|.###.",
    "1": "..#..|.##..|..#..|..#..|..#..|..#..|.###.",
    "2": ".###.|#...#|....#|...#.|..#..|.#...|#####",
    "3": "#####|...#.|..#..|...#.|....#|#...#|.###.",
    "4": "...#.|..##.|.#.#.|#..#.|#####|...#.|...#.",
    "5": "#####|#....|####.|....#|....#|#...#|.###.",
    "6": "..##.|.#...|#....|####.|#...#|#...#|.###.",
    "7": "#####|....#|...#.|..#..|.#...|.#...|.#...",
    "8": ".###.|#...#|#...#|.###.|#...#|#...#|.###.",
    "9": ".###.|#...#|#...#|.####|....#|...#.|.##..",
    ".": ".....|.....|.....|.....|.....|.##..|.##..",
    ",": ".....|.....|.....|.....|.##..|..#..|.#...",
    "-": ".....|.....|.....|#####|.....|.....|.....",
    ":": ".....|.##..|.##..|.....|.##..|.##..|.....",
    "/": ".....|....#|...#.|..#..|.#...|#....|.....",
    "%": "##...|##..#|...#.|..#..|.#...|#..##|...##",
    "(": "...#.|..#..|.#...|.#...|.#...|..#..|...#.",
    ")": ".#...|..#..|...#.|...#.|...#.|..#..|.#...",
    "+": ".....|..#..|..#..|#####|..#..|..#..|.....",
    "=": ".....|.....|#####|.....|#####|.....|.....",
    "_": ".....|.....|.....|.....|.....|.....|#####",
    "'": "..#..|..#..|.#...|.....|.....|.....|.....",
    "[": ".###.|.#...|.#...|.#...|.#...|.#...|.###.",
    "]": ".###.|...#.|...#.|...#.|...#.|...#.|.###.",
    ">": ".#...|..#..|...#.|....#|...#.|..#..|.#...",
    "<": "...#.|..#..|.#...|#....|.#...|..#..|...#.",
    "|": "..#..|..#..|..#..|..#..|..#..|..#..|..#..",
    "*": ".....|..#..|#.#.#|.###.|#.#.#|..#..|.....",
    "?": ".###.|#...#|....#|...#.|..#..|.....|..#..",
    "!": "..#..|..#..|..#..|..#..|..#..|.....|..#..",
    "#": ".#.#.|.#.#.|#####|.#.#.|#####|.#.#.|.#.#.",
    " ": ".....|.....|.....|.....|.....|.....|.....",
}
GLYPH_W, GLYPH_H, ADVANCE = 5, 8, 6
FONT = {ch: [row.ljust(GLYPH_W, ".") for row in spec.split("|")]
        for ch, spec in _GLYPHS.items()}


def text_width(text, scale):
    return max(0, len(text) * ADVANCE - 1) * scale


# -- a canvas of RGB bytes ----------------------------------------------------

WHITE, BLACK = (255, 255, 255), (0, 0, 0)
GRID, AXIS, TEXT, MUTED = (225, 225, 225), (60, 60, 60), (20, 20, 20), \
    (110, 110, 110)
BASELINE, KFUSE, TORCH, ERROR = (150, 150, 150), (31, 119, 180), \
    (255, 127, 14), (200, 30, 30)


class Canvas:
    def __init__(self, width, height, color=WHITE):
        self.w, self.h = width, height
        self.px = bytearray(bytes(color) * (width * height))

    def rect(self, x0, y0, x1, y1, color):
        """Fills [x0, x1) x [y0, y1), clipped."""
        x0, x1 = max(0, int(round(x0))), min(self.w, int(round(x1)))
        y0, y1 = max(0, int(round(y0))), min(self.h, int(round(y1)))
        if x0 >= x1:
            return
        line = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            start = (y * self.w + x0) * 3
            self.px[start:start + len(line)] = line

    def outline(self, x0, y0, x1, y1, color, width=2, dash=0):
        if not dash:
            self.rect(x0, y0, x1, y0 + width, color)
            self.rect(x0, y1 - width, x1, y1, color)
            self.rect(x0, y0, x0 + width, y1, color)
            self.rect(x1 - width, y0, x1, y1, color)
            return
        x = x0
        while x < x1:
            self.rect(x, y0, min(x + dash, x1), y0 + width, color)
            self.rect(x, y1 - width, min(x + dash, x1), y1, color)
            x += 2 * dash
        y = y0
        while y < y1:
            self.rect(x0, y, x0 + width, min(y + dash, y1), color)
            self.rect(x1 - width, y, x1, min(y + dash, y1), color)
            y += 2 * dash

    def text(self, x, y, text, color=TEXT, scale=2, align="left",
             rotate=False):
        """Draws `text` with its top-left at (x, y) (align: left, center,
        right about x). rotate: reads bottom to top, (x, y) its
        bottom-left (align then along the vertical)."""
        width = text_width(text, scale)
        shift = {"left": 0, "center": width // 2, "right": width}[align]
        for i, ch in enumerate(text):
            glyph = FONT.get(ch, FONT["?"])
            for gy, row in enumerate(glyph):
                for gx, bit in enumerate(row):
                    if bit != "#":
                        continue
                    u = i * ADVANCE * scale + gx * scale - shift
                    v = gy * scale
                    if rotate:
                        self.rect(x + v, y - u - scale, x + v + scale, y - u,
                                  color)
                    else:
                        self.rect(x + u, y + v, x + u + scale, y + v + scale,
                                  color)

    def png(self):
        raw = bytearray()
        stride = self.w * 3
        for y in range(self.h):
            raw.append(0)  # filter: none
            raw += self.px[y * stride:(y + 1) * stride]

        def chunk(tag, body):
            return (struct.pack(">I", len(body)) + tag + body
                    + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF))
        return (b"\x89PNG\r\n\x1a\n"
                + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h,
                                             8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(bytes(raw), 9))
                + chunk(b"IEND", b""))


# -- the chart ----------------------------------------------------------------

STAGES = [(1, "stage 1", "Adam fp32"), (2, "stage 2", "+fused AdamW"),
          (3, "stage 3", "+fused LN"), (4, "stage 4", "+bf16 amp")]


def nice_step(top, ticks=5):
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


def fmt_value(v):
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_tick(v, step):
    if step >= 1 and float(v).is_integer():
        return str(int(v))
    digits = max(0, -math.floor(math.log10(step)) + (1 if step * 10 % 10
                                                     else 0))
    return f"{v:.{min(digits, 3)}f}"


def bars_for(data, key):
    """stage -> list of (impl, value | None, row | None, style) in drawing
    order; style: baseline, kfuse, torch, torch_same, error, missing."""
    rows = {(r.get("case"), r.get("impl")): r for r in data.get("results", [])}
    omitted = {(o.get("case"), o.get("impl"))
               for o in data.get("omitted", [])}
    out = {}
    for stage, _, _ in STAGES:
        case = f"seed.stage{stage}"
        entries = []
        impls = ["kfuse"] if stage == 1 else ["kfuse", "torch"]
        for impl in impls:
            row = rows.get((case, impl))
            if stage == 1 and row is None:
                row = rows.get((case, "torch"))
            if row is not None and "error" in row:
                entries.append((impl, None, row, "error"))
            elif row is not None and row.get(key) is not None:
                style = "baseline" if stage == 1 else impl
                entries.append((impl, float(row[key]), row, style))
            elif (impl == "torch" and (case, impl) in omitted
                  and rows.get(("seed.stage2", "torch"), {}).get(key)
                  is not None):
                same = rows[("seed.stage2", "torch")]
                entries.append((impl, float(same[key]), same, "torch_same"))
            else:
                entries.append((impl, None, None, "missing"))
        out[stage] = entries
    return out


def panel(canvas, x0, y0, x1, y1, title, key, data, whisker=None,
          floor=None):
    """One bar chart in the box (x0, y0)-(x1, y1). `floor`: a row key whose
    value (the copy of the step's bytes) is drawn as a dashed line across
    that stage's bars."""
    canvas.text((x0 + x1) // 2, y0, title, TEXT, 2, "center")
    left, right = x0 + 100, x1 - 20
    top, bottom = y0 + 44, y1 - 56
    bars = bars_for(data, key)
    values = [v for entries in bars.values() for _, v, _, _ in entries
              if v is not None]
    if whisker:
        values += [float(e[2][whisker[1]]) for entries in bars.values()
                   for e in entries if e[2] is not None
                   and e[3] not in ("error", "missing")
                   and e[2].get(whisker[1]) is not None]
    vmax = max(values) if values else 1.0
    step = nice_step(vmax * 1.12 or 1.0)
    ymax = step * math.ceil(vmax * 1.12 / step) if vmax > 0 else step

    def ypos(v):
        return bottom - (bottom - top) * v / ymax

    tick = 0.0
    while tick <= ymax + step * 1e-6:
        y = ypos(tick)
        canvas.rect(left, y, right, y + 1, GRID)
        canvas.rect(left - 6, y, left, y + 1, AXIS)
        canvas.text(left - 10, int(y) - 7, fmt_tick(tick, step), TEXT, 2,
                    "right")
        tick += step
    canvas.rect(left, top, left + 2, bottom + 1, AXIS)
    canvas.rect(left, bottom, right, bottom + 2, AXIS)
    canvas.text(x0 + 18, (top + bottom) // 2, "time (ms)", TEXT, 2, "center",
                rotate=True)

    group = (right - left) / len(STAGES)
    bar_w, gap = 64, 8
    for index, (stage, line1, line2) in enumerate(STAGES):
        center = left + group * (index + 0.5)
        canvas.text(int(center), bottom + 10, line1, TEXT, 2, "center")
        canvas.text(int(center), bottom + 30, line2, MUTED, 2, "center")
        entries = bars[stage]
        if stage == 1:
            entries = entries[:1]
        span = len(entries) * bar_w + (len(entries) - 1) * gap
        for j, (impl, value, row, style) in enumerate(entries):
            bx = center - span / 2 + j * (bar_w + gap)
            mid = int(bx + bar_w / 2)
            if style == "error":
                canvas.text(mid, bottom - 22, "error", ERROR, 2, "center")
                continue
            if style == "missing":
                canvas.text(mid, bottom - 22, "n/a", MUTED, 2, "center")
                continue
            ytop = ypos(value)
            color = {"baseline": BASELINE, "kfuse": KFUSE, "torch": TORCH,
                     "torch_same": TORCH}[style]
            if style == "torch_same":
                canvas.outline(bx, ytop, bx + bar_w, bottom, color, 2, 6)
            else:
                canvas.rect(bx, ytop, bx + bar_w, bottom, color)
            label_y = ytop - 20
            if whisker and style != "torch_same":
                lo, hi = row.get(whisker[0]), row.get(whisker[1])
                if lo is not None and hi is not None:
                    canvas.rect(mid - 1, ypos(float(hi)), mid + 1,
                                ypos(float(lo)) + 1, BLACK)
                    canvas.rect(mid - 6, ypos(float(hi)), mid + 6,
                                ypos(float(hi)) + 1, BLACK)
                    canvas.rect(mid - 6, ypos(float(lo)), mid + 6,
                                ypos(float(lo)) + 1, BLACK)
                    label_y = min(label_y, ypos(float(hi)) - 20)
            canvas.text(mid, int(label_y), fmt_value(value),
                        MUTED if style == "torch_same" else TEXT, 2,
                        "center")
        floors = [float(row[floor]) for _, _, row, style in entries
                  if floor and row is not None and style != "torch_same"
                  and row.get(floor) is not None]
        if floors and stage != 1:
            y = int(ypos(min(floors)))
            x = int(center - span / 2 - 6)
            while x < center + span / 2 + 6:
                canvas.rect(x, y, min(x + 8, center + span / 2 + 6), y + 2,
                            BLACK)
                x += 14


def legend(canvas, x, y, items):
    for label, color, outlined in items:
        if outlined:
            canvas.outline(x, y, x + 18, y + 16, color, 2, 4)
        else:
            canvas.rect(x, y, x + 18, y + 16, color)
        canvas.text(x + 26, y + 1, label, TEXT, 2)
        x += 26 + text_width(label, 2) + 36


def fmt_ratio(v):
    return "n/a" if v is None else f"{v:.2f}x"


def render(data):
    width, height = 1640, 830
    canvas = Canvas(width, height)
    params = next((r.get("params_M") for r in data.get("results", [])
                   if r.get("params_M")), None)
    config = data.get("config", {})
    size = (f"{params}M params, " if params else "") + \
        f"batch {config.get('batch', 16)} x seq {config.get('seq', 512)}"
    canvas.text(width // 2, 14,
                f"GPT training step by stage: kfuse vs torch ({size})",
                TEXT, 3, "center")
    meta = " | ".join(str(p) for p in (
        data.get("device"), "torch " + str(data.get("torch", "?")),
        "commit " + str(data.get("commit", "?"))[:10],
        str(data.get("date", ""))[:16].replace("T", " ") + " UTC") if p)
    canvas.text(width // 2, 50, meta, MUTED, 2, "center")
    legend(canvas, 60, 84, [
        ("baseline: torch AdamW foreach=False, fp32", BASELINE, False),
        ("kfuse", KFUSE, False),
        ("torch: fused AdamW + nn.LayerNorm", TORCH, False),
        ("torch stage 3 = stage 2 (not run)", TORCH, True)])
    panel(canvas, 0, 130, width // 2, 720,
          "Iteration time (median, whisker min-max)", "iter_ms", data,
          whisker=("iter_min_ms", "iter_max_ms"))
    panel(canvas, width // 2, 130, width, 720,
          "Optimizer step alone (median), dashed: a copy of its bytes",
          "opt_ms", data, floor="opt_copy_floor_ms")

    results = data.get("results", [])

    def get(stage, impl, key):
        for r in results:
            if r.get("case") == f"seed.stage{stage}" and r.get("impl") == impl \
                    and "error" not in r:
                return r.get(key)
        return None

    k4 = get(4, "kfuse", "iter_ms")
    k1 = get(1, "kfuse", "iter_ms")
    line = (f"iteration time, stage 4 torch/kfuse "
            f"{fmt_ratio(data.get('speedup_stage4_kfuse_vs_torch'))}"
            f" | kfuse stage 1/stage 4 "
            f"{fmt_ratio(k1 / k4 if k1 and k4 else None)}"
            f" | AdamW step, stage 2 torch/kfuse "
            f"{fmt_ratio(data.get('opt_ratio_stage2_torch_over_kfuse'))}")
    canvas.text(width // 2, 744, line, TEXT, 2, "center")
    parts, diffs = [], []
    for stage in (2, 4):
        d = data.get(f"loss_diff_stage{stage}_kfuse_vs_torch")
        if d:
            diffs.append(f"stage {stage} {d['max_rel']:.1e}")
            steps = d["steps"]
    if diffs:
        parts.append("loss curves kfuse vs torch, max rel diff: "
                     + ", ".join(diffs) + f" ({steps} steps)")
    peak = data.get("peak_GiB_compare", {}).get("seed.stage4", {})
    if peak.get("kfuse") is not None and peak.get("torch") is not None:
        parts.append(f"stage 4 peak GiB: kfuse {peak['kfuse']:.2f}, "
                     f"torch {peak['torch']:.2f}")
    if parts:
        canvas.text(width // 2, 770, " | ".join(parts), MUTED, 2, "center")
    ceiling = data.get("opt_ceiling_ratio_stage2_torch_over_copy")
    traffic = get(2, "torch", "opt_traffic_bytes")
    errors = data.get("errors") or []
    if ceiling is not None and traffic and not errors:
        canvas.text(width // 2, 796,
                    f"dashed: a copy moving the step's "
                    f"{traffic / 1e9:.2f} GB, torch's fused step takes "
                    f"{fmt_ratio(ceiling)} its GPU time (the most any "
                    "kernel could gain)", MUTED, 2,
                    "center")
    if errors:
        names = ", ".join(f"{e.get('case')} {e.get('impl', '')}".strip()
                          for e in errors)
        canvas.text(width // 2, 796, f"failed: {names}"[:130], ERROR, 2,
                    "center")
    return canvas


def main(argv):
    if len(argv) != 3:
        print("usage: python3 bench/plot_stages.py RESULTS.json OUT.png",
              file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    canvas = render(data)
    with open(argv[2], "wb") as f:
        f.write(canvas.png())
    print(f"wrote {argv[2]} ({canvas.w}x{canvas.h})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
