"""A web worker's warm-up (rungwise/warmup.py): once it ran, serving the researchers' pages
compiles none of the repository's templates (the first request of a fresh worker no longer
pays for them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.template import base, engines
from django.urls import reverse

from annotation.models import Role
from rungwise import warmup
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


def _forget_compiled_templates() -> None:
    """Empty every template cache, as in a worker that has just started."""
    for engine in engines.all():
        for loader in engine.engine.template_loaders:
            loader.reset()


@pytest.fixture
def compiled(monkeypatch) -> list[str]:
    """The names of the repository's templates compiled from here on."""
    names: list[str] = []
    original = base.Template.compile_nodelist
    repository = Path(settings.BASE_DIR).resolve()

    def compile_nodelist(self):
        origin = getattr(self.origin, "name", None)
        if origin and Path(str(origin)).resolve().is_relative_to(repository):
            names.append(self.origin.template_name)
        return original(self)

    monkeypatch.setattr(base.Template, "compile_nodelist", compile_nodelist)
    return names


def _pages(project) -> list[str]:
    slug = project.slug
    return [
        reverse("annotation:project", args=[slug]),
        reverse("studio:items", args=[slug]),
        reverse("studio:setup", args=[slug]),
        reverse("imports:imports", args=[slug]),
        reverse("releases:releases", args=[slug]),
    ]


def test_after_the_warm_up_no_page_compiles_a_template(client, compiled):
    project = make_project()
    make_verify_stage(project)
    make_items(project, 3)
    client.force_login(make_member(project, Role.ADMIN))

    _forget_compiled_templates()
    for url in _pages(project):
        assert client.get(url).status_code == 200, url
    assert "base.html" in compiled  # without the warm-up, the pages compile their templates

    _forget_compiled_templates()
    assert warmup.templates_compile() >= len(set(compiled))
    compiled.clear()
    for url in _pages(project):
        assert client.get(url).status_code == 200, url
    assert compiled == []


def test_nothing_is_warmed_while_developing(settings, compiled):
    _forget_compiled_templates()
    settings.DEBUG = True
    warmup.warm_up()
    assert compiled == []
    settings.DEBUG = False
    warmup.warm_up()
    assert "base.html" in compiled


def test_after_the_warm_up_a_reverse_fills_no_resolver(settings, monkeypatch):
    from django.urls import clear_url_caches, resolvers

    clear_url_caches()  # as in a worker that has just started
    populated: list[object] = []
    original = resolvers.URLResolver._populate

    def _populate(self):
        populated.append(self)
        return original(self)

    monkeypatch.setattr(resolvers.URLResolver, "_populate", _populate)
    settings.DEBUG = False
    warmup.warm_up()
    assert populated  # the warm-up did the filling
    populated.clear()
    reverse("annotation:project", args=["some-project"])
    assert populated == []
