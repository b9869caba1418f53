"""The Graphs tab's figures, drawn server-side as SVG in the agreement dashboards' style
(agreement.plots: palette, fonts as outlines, no timestamps, so the same answers give the same
bytes). Plain rows in, SVG text out.

* ``accuracy_svg``: the share of correct answers per task and graph size, each with its 95 %
  Wilson interval (``agreement.plots.wilson_interval``), against chance (50 %);
* ``difficulty_svg``: how many yes / no questions people got right in what share — the hard
  questions are the bars on the left, listed first on the per-question page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator, PercentFormatter

from agreement.plots import BLUE, GREY, STYLE, _empty, _svg, wilson_interval
from graphs.questions import QuestionRow

WIDTH = 6.4
#: What an empty figure says: answers count once their question is complete (final answers).
NOTHING_FINAL = "No yes / no question is complete yet: answers count once all are in."


def accuracy_svg(rows: Sequence[QuestionRow]) -> str:
    """Dots: correct answers over answers per (task, graph size) of the yes / no questions,
    whiskers: 95 % Wilson intervals; dashed: chance."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row.share_correct is None:
            continue
        tally = counts[(row.task_label, row.graph_size)]
        tally[0] += sum(1 for value in row.answers if value == row.expected)
        tally[1] += row.n_answers
    if not counts:
        return _empty(NOTHING_FINAL, WIDTH, 1.4)
    groups = sorted(counts)
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(WIDTH, 0.7 + 0.34 * len(groups)))
        for position, group in enumerate(groups):
            correct, total = counts[group]
            low, high = wilson_interval(correct, total)
            axes.plot([low, high], [position, position], color=BLUE, linewidth=1.4)
            axes.plot([correct / total], [position], "o", color=BLUE, markersize=5)
            axes.text(1.03, position, f"{correct} of {total}", va="center", color=GREY, fontsize=8)
        axes.axvline(0.5, color=GREY, linestyle=(0, (4, 3)), linewidth=0.9)
        axes.set_yticks(range(len(groups)), [f"{task}, {size} graphs" for task, size in groups])
        axes.invert_yaxis()
        axes.set_xlim(0, 1.0)
        axes.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axes.set_xlabel("Answers matching the known answer (95 % Wilson interval; dashed: chance)")
        axes.grid(axis="y", visible=False)
        return _svg(figure)


def difficulty_svg(rows: Sequence[QuestionRow]) -> str:
    """Bars: yes / no questions by the share of their answers that were right (ten bins)."""
    shares = [row.share_correct for row in rows if row.share_correct is not None]
    if not shares:
        return _empty(NOTHING_FINAL, WIDTH, 1.4)
    bins = [0] * 10
    for share in shares:
        bins[min(int(share * 10), 9)] += 1
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(WIDTH, 2.3))
        axes.bar([index / 10 + 0.05 for index in range(10)], bins, width=0.09, color=BLUE)
        axes.set_xlim(0, 1.0)
        axes.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("Share of a question's answers that were right")
        axes.set_ylabel("questions")
        axes.grid(axis="x", visible=False)
        return _svg(figure)
