"""The figures of the "Models against people" section (llm/figures.py): SVG of each figure for a
stage with a model rater, the empty figure without one, identical bytes for identical data."""

from __future__ import annotations

import pytest

from llm import figures
from llm.calibration import stage_calibration
from tests.llm import calibration_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(django_capture_on_commit_callbacks):
    return calibration_study.build(django_capture_on_commit_callbacks, slug="figures")


@pytest.mark.parametrize("name", figures.FIGURES)
def test_each_figure_is_an_svg_of_the_stage(study, name):
    svg = figures.stage_figure(study.stage, name)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    # Text is drawn as outlines (agreement.plots' style): no <text> element, the same
    # everywhere; and the drawing is deterministic.
    assert "<text" not in svg
    assert figures.stage_figure(study.stage, name) == svg


def test_figures_show_data_not_the_empty_message(study):
    calibration = stage_calibration(study.stage)
    assert calibration is not None
    empty = figures.plots._empty(figures._NO_RATER, 6.4, 1.6)
    for name in figures.FIGURES:
        assert figures.calibration_figure(calibration, name) != empty
    # The confusion matrix writes one count per cell: 3 × 3 cells of glyphs beyond the axes.
    assert figures.confusion_figure(calibration).count("<path") > 20


def test_a_stage_without_model_rater_gets_a_message(django_capture_on_commit_callbacks):
    plain = calibration_study.build(
        django_capture_on_commit_callbacks, slug="plain", with_model=False
    )
    svg = figures.stage_figure(plain.stage, "models-reliability")
    assert svg == figures.plots._empty("This stage has no model rater.", 5.6, 1.2)


def test_an_unknown_figure_is_refused(study):
    calibration = stage_calibration(study.stage)
    assert calibration is not None
    with pytest.raises(ValueError, match="no figure"):
        figures.calibration_figure(calibration, "nonsense")
