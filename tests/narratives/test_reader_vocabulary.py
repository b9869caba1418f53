"""CausalNarratives' vocabulary at import (narratives/reader.py ``NARRATIVE_SCHEMA``), through
the Import page (``narratives:import``): a graph's direction outside forward / reverse, an id
outside its alphabet, an edge naming no node, a cycle and a chain whose sentences do not match
its nodes refuse the file naming file, line, field and what to fix, with nothing written; the
page itself (GET) has the form, the column table and the sample."""

from __future__ import annotations

import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Item
from studio.services import project_from_template
from tests.factories import make_user

pytestmark = pytest.mark.django_db

GRAPH = {"id": "g1", "nodes": ["x", "y", "z"], "edges": [["x", "z"], ["y", "z"]],
         "sentences": ["x and y both cause z."]}  # fmt: skip


@pytest.fixture
def project(client):
    admin = make_user("story-admin", is_staff=True)
    project = project_from_template(
        workflow="causal_narratives", slug="story", name="Story", creator=admin
    )
    client.force_login(admin)
    return project


def upload(client, project, *lines):
    text = "".join(json.dumps(line) + "\n" for line in lines)
    response = client.post(
        reverse("narratives:import", args=[project.slug]),
        {"file": SimpleUploadedFile("n.jsonl", text.encode())},
    )
    return response, html.unescape(response.content.decode())


@pytest.mark.parametrize(
    "line, words",
    [
        ({**GRAPH, "id": "g2", "direction": "sideways"},
         "n.jsonl:2: direction must be forward or reverse (got 'sideways')"),
        ({**GRAPH, "id": "g 2!"}, "n.jsonl:2: id 'g 2!': letters, digits, . _ - only"),
        ({**GRAPH, "id": "g2", "edges": [["x", "w"]]}, "n.jsonl:2: edges[0] names 'w', not a node"),
        ({**GRAPH, "id": "g2", "edges": [["x", "y"], ["y", "x"]]}, "n.jsonl:2: "),
        ({"nodes": ["a", "b", "c"], "sentences": ["a caused b."]},
         "n.jsonl:2: 1 sentences for 3 nodes (a chain of n nodes has n − 1 sentences"),
    ],
)  # fmt: skip
def test_a_line_outside_the_vocabulary_is_refused_with_file_line_and_fix(
    client, project, line, words
):
    response, page = upload(client, project, GRAPH, line)
    assert response.status_code == 400
    assert "n.jsonl: nothing was imported." in page
    start = page.index('id="import-error"')
    assert words in page[start : page.index("</div>", start)]
    assert not Item.objects.filter(project=project).exists()


def test_the_import_page_offers_the_form_the_columns_and_a_sample(client, project):
    url = reverse("narratives:import", args=[project.slug])
    page = html.unescape(client.get(url).content.decode())
    assert 'name="file"' in page and "<code>direction</code>" in page
    assert "<code>forward</code>" in page and "<code>reverse</code>" in page
    sample = reverse("imports:schema_sample", args=[project.slug, "narratives.narrative", "jsonl"])
    assert f'href="{sample}"' in page
    response, _ = upload(client, project, GRAPH, {**GRAPH, "id": "g2", "direction": "reverse"})
    assert response.status_code == 302
    assert Item.objects.filter(project=project).count() == 2
