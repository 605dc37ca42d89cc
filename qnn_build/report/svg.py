"""Small inline SVG charts for the HTML pages (the accuracy debugger's, the zoo report).

Written here rather than drawn with matplotlib: the charts are a line along a graph's layers and
grouped bars, which take a few dozen lines of SVG; they scale crisply in the page, need no image
files beside it, add no dependency, and the same data gives the same bytes."""

from html import escape

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 760, 260, 56, 16, 20, 46
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")


def _scale(values, lo=None, hi=None):
    finite = [v for v in values if v is not None]
    lo = min(finite + [0.0]) if lo is None else lo
    hi = max(finite + [lo + 1.0]) if hi is None else hi
    hi = hi if hi > lo else lo + 1.0
    plot_h = HEIGHT - TOP - BOTTOM
    return lambda v: TOP + plot_h * (1 - (min(max(v, lo), hi) - lo) / (hi - lo)), lo, hi


def _frame(y, lo, hi, y_label: str, title: str, width: int = WIDTH) -> list[str]:
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" '
             f'viewBox="0 0 {width} {HEIGHT}" role="img" aria-label="{escape(title)}" font-family="sans-serif" '
             f'font-size="11">', f'<title>{escape(title)}</title>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        parts.append(f'<line x1="{LEFT}" x2="{width - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
                     f'<text x="{LEFT - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
    parts.append(f'<text x="12" y="{TOP + (HEIGHT - TOP - BOTTOM) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {TOP + (HEIGHT - TOP - BOTTOM) / 2:.0f})">{escape(y_label)}</text>')
    return parts


def line_chart(labels: list[str], series: dict[str, list], y_label: str, title: str, mark: int | None = None) -> str:
    """One line per series over the labelled x positions (e.g. a graph's layers in order); `mark`
    highlights one position (the layer where the error jumps)."""
    values = [v for vs in series.values() for v in vs]
    y, lo, hi = _scale(values)
    n = max(len(labels), 2)
    x = lambda i: LEFT + (WIDTH - LEFT - RIGHT) * i / (n - 1)  # noqa: E731
    parts = _frame(y, lo, hi, y_label, title)
    if mark is not None:
        parts.append(f'<line x1="{x(mark):.1f}" x2="{x(mark):.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" '
                     f'stroke="#d62728" stroke-dasharray="4 3"/><text x="{x(mark) + 4:.1f}" y="{TOP + 10}" '
                     f'fill="#d62728">{escape(labels[mark][:40])}</text>')
    for (name, vs), color in zip(series.items(), COLORS):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(vs) if v is not None)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{points}"/>')
        parts += [f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{color}"><title>{escape(labels[i])}: '
                  f'{v:.4g}</title></circle>' for i, v in enumerate(vs) if v is not None]
    step = max(1, len(labels) // 12)
    parts += [f'<text x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">{escape(label[:14])}</text>'
              for i, label in enumerate(labels) if i % step == 0]
    parts.append(_legend(list(series)))
    return "".join(parts) + "</svg>"


def bar_chart(groups: list[str], series: dict[str, list], y_label: str, title: str, width: int = 520) -> str:
    """Grouped bars: one group per label, one bar per series (None: no bar)."""
    values = [v for vs in series.values() for v in vs]
    y, lo, hi = _scale(values)
    parts = [*_frame(y, lo, hi, y_label, title, width), f'<text x="{width / 2:.0f}" y="12" text-anchor="middle" '
             f'font-weight="bold">{escape(title)}</text>']
    group_w = (width - LEFT - RIGHT) / max(len(groups), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    for g, label in enumerate(groups):
        x0 = LEFT + g * group_w + group_w * 0.1
        for s, ((name, vs), color) in enumerate(zip(series.items(), COLORS)):
            v = vs[g]
            if v is None:
                continue
            top, base = y(max(v, lo)), y(max(lo, 0.0))
            parts.append(f'<rect x="{x0 + s * bar_w:.1f}" y="{min(top, base):.1f}" width="{bar_w * 0.9:.1f}" '
                         f'height="{abs(base - top):.1f}" fill="{color}"><title>{escape(label)} {escape(name)}: '
                         f'{v:.4g}</title></rect>')
        parts.append(f'<text x="{x0 + group_w * 0.4:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">'
                     f'{escape(label[:18])}</text>')
    parts.append(_legend(list(series)))
    return "".join(parts) + "</svg>"


def _legend(names: list[str]) -> str:
    return "".join(f'<rect x="{LEFT + 110 * k}" y="{HEIGHT - 18}" width="10" height="10" fill="{c}"/>'
                   f'<text x="{LEFT + 110 * k + 14}" y="{HEIGHT - 9}">{escape(n[:14])}</text>'
                   for k, (n, c) in enumerate(zip(names, COLORS)))
