"""Release archives for the evaluation's tests: a zip laid out as releases.services.build
writes one (every file under ``<slug>-v<N>/``), from a {name: text} mapping, and the same as
a published ``Release`` row."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

from llm.evaluation.files import ReleaseFiles


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def write_zip(path: Path, files: dict[str, str], prefix: str = "demo-v1") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(f"{prefix}/{name}", text)
    return path


def release_files(tmp_path: Path, files: dict[str, str]) -> ReleaseFiles:
    return ReleaseFiles.of_path(write_zip(tmp_path / "release.zip", files))


def published_release(project, files: dict[str, str], tmp_path: Path, version: int = 1):
    """A published Release of ``project`` whose archive holds ``files``."""
    from django.core.files import File
    from django.utils import timezone

    from releases.models import Release

    path = write_zip(
        tmp_path / f"{project.slug}-v{version}.zip", files, f"{project.slug}-v{version}"
    )
    release = Release.objects.create(
        project=project,
        version=version,
        status=Release.Status.PUBLISHED,
        published_at=timezone.now(),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    with path.open("rb") as handle:
        release.archive.save(path.name, File(handle), save=True)
    return release


# -- one small release per workflow, in its layout's files, and the gold texts it holds -------


def carlgt_files() -> dict[str, str]:
    return {
        "carlgt_files.csv": (
            "task,graph_id,graph_size,questions_file,answers_file,human_file,source_file,lines,note\n"
            "d_separation,1,large,carlgt_d_separation_1_questions.txt,"
            "carlgt_d_separation_1_answers.txt,carlgt_d_separation_1_human.txt,graph/1,3,\n"
            "counterfactual,100,small,carlgt_counterfactual_100_questions.txt,"
            "carlgt_counterfactual_100_answers.txt,carlgt_counterfactual_100_human.txt,t,2,\n"
        ),
        "carlgt_d_separation_1_questions.txt": (
            "Are V0 and V1 d-seperated?\nAre V0 and V2 d-seperated given V1?\nAre V3 and V4 d-seperated?\n"
        ),
        "carlgt_d_separation_1_answers.txt": "no\nyes\nyes\n",
        "carlgt_d_separation_1_human.txt": "no\nno\ntie\n",
        "carlgt_counterfactual_100_questions.txt": "What is V1 if V0 were 1?\nWhat is V2?\n",
        "carlgt_counterfactual_100_answers.txt": "-0.25\n3.5\n",
        "carlgt_counterfactual_100_human.txt": "0.25\nNA\n",
    }


def narratives_files() -> dict[str, str]:
    record = {
        "nodes": ["rain", "flood", "damage"],
        "sentences": ["Floods cause damage.", "Rain brings floods."],
        "id": "real_world_reverse-size3-l1",
        "direction": "reverse",
        "source": "real_world",
        "human_answers": [
            {"rater": "R0001", "order": ["rain", "flood", "damage"], "exact": True},
            {"rater": "R0002", "order": ["flood", "rain", "damage"], "exact": False},
        ],
    }
    graph = {
        "nodes": ["a", "b", "c"],
        "edges": [["a", "b"], ["a", "c"]],
        "sentences": ["A made B.", "A made C."],
        "id": "graph-1",
        "direction": "",
        "source": "synthetic",
        "human_answers": [{"rater": "R0003", "edges": [["a", "b"]]}],
    }
    return {
        "causalnarratives_real_world_reverse_size=3.jsonl": jsonl([record]),
        "causalnarratives_graphs_size=3.jsonl": jsonl([graph]),
        "causalnarratives_scores.csv": "structure\n",
    }


def meter_files() -> dict[str, str]:
    entry = {
        "id": "esl-0001",
        "source": "ESL",
        "context": "The pipes froze overnight, so the kitchen flooded.",
        "cause": "CAUSE-SECRET pipes froze",
        "effect": "EFFECT-SECRET kitchen flooded",
        "questions": [
            {
                "level": 1,
                "type": "causal discovery",
                "question": "Why did the kitchen flood?",
                "options": ["Opt zero", "Opt one", "Opt two", "Opt three", "Opt four"],
                "answer": 2,
                "distractor_categories": [
                    "unfounded",
                    "reversal",
                    None,
                    "irrelevant",
                    "contradictory",
                ],
            },
            {
                "level": 2,
                "type": "intervention",
                "question": "What if the pipes were insulated?",
                "options": ["P0", "P1", "P2", "P3", "P4"],
                "answer": 0,
                "distractor_categories": [
                    None,
                    "reversal",
                    "unfounded",
                    "irrelevant",
                    "contradictory",
                ],
            },
        ],
        "revision": 1,
        "evidence": {},
    }
    annotations = [
        {"external_id": "esl-0001/entry", "stage": "baseline", "rater": "R0001",
         "payload": {"answers": {"L1": 2, "L2": 1, "L3": 0}}},
        {"external_id": "esl-0001/entry", "stage": "baseline", "rater": "R0002",
         "payload": {"answers": {"L1": 2, "L2": 0}}},
        {"external_id": "esl-0001/entry", "stage": "verify", "rater": "R0003",
         "payload": {"value": "yes"}},
    ]  # fmt: skip
    return {"meter.jsonl": jsonl([entry]), "annotations.jsonl": jsonl(annotations)}


def causalt5k_files() -> dict[str, str]:
    def case(case_id, label, tier=2, level="L2", trap="T3", **extra):
        return {
            "case_id": case_id,
            "tier": tier,
            "pearl_level": level,
            "domain": "D1",
            "domain_name": "Daily life",
            "scenario": f"Scenario of {case_id.lower()}.",
            "claim": f"Claim of {case_id.lower()}.",
            "variables": {"X": {"name": "output", "role": "exposure"}},
            "label": label,
            "trap": trap,
            "trap_name": "Collider Bias",
            "rationale": "GOLD-RATIONALE",
            "key_insight": "GOLD-INSIGHT",
            "refusal_template": "GOLD-REFUSAL",
            **extra,
        }

    cases = [
        case("C-1", "NO", pressure_variants={"neutral": "Neutral of c-1. Is the claim justified?",
             "social": "My boss says yes. Scenario of c-1.", "epistemic": "A study proved it. c-1."}),
        case("C-2", "YES", pressure_variants={"neutral": "Neutral of c-2.",
             "social": "Social of c-2.", "epistemic": "Epistemic of c-2."}),
        case("C-3", "AMBIGUOUS", level="L1", trap="T7"),
        case("C-4", "VALID", tier=3, level="L3", trap="T9"),
        case("C-5", "CONDITIONAL", tier=3, level="L3", trap="T9"),
    ]  # fmt: skip
    items = [
        {"external_id": "answer/q-aaaa", "payload": {"handle": "q-aaaa", "case_id": "C-1"}},
        {"external_id": "C-1", "payload": {"case_id": "C-1"}},
    ]
    annotations = [
        {"external_id": "answer/q-aaaa", "rater": "R0001", "payload": {"label": "NO"}},
        {"external_id": "answer/q-aaaa", "rater": "R0002", "payload": {"label": "YES"}},
        {"external_id": "C-1", "rater": "R0003", "payload": {"scores": {"x": 4}}},
    ]
    return {
        "causalt5k_cases.jsonl": jsonl(cases),
        "items.jsonl": jsonl(items),
        "annotations.jsonl": jsonl(annotations),
    }


def explica_files() -> dict[str, str]:
    return {
        "explica_ordered_pairs.csv": (
            "pair_id,order,first_sentence,second_sentence,subset,origin,mean_so,mean_because,"
            "mean_then,mean_after,preferred_connective,tied_connectives,relation,connective_order,label\n"
            "1,AB,The man turned up the music.,He wanted to listen.,s,o,2.5,7.25,3,4,because,,causal,anti-iconic,GOLD-LABEL-1\n"
            "1,BA,He wanted to listen.,The man turned up the music.,s,o,6.5,2,5,3,so,,causal,iconic,GOLD-LABEL-2\n"
            '2,AB,It rained.,The street was wet.,s,o,6,6,2,2,,"so,because",causal,iconic,GOLD-LABEL-3\n'
            "3,AB,A cat sat.,Stocks fell.,s,o,1,1,1,1,,,unrelated,,GOLD-LABEL-4\n"
        ),
    }


def _sample(files, gold):
    def build(tmp_path):
        return release_files(tmp_path, files()), gold

    return build


#: kind -> build(tmp_path) -> (ReleaseFiles, texts only the gold holds)
SAMPLES = {
    "carlgt": _sample(carlgt_files, ["-0.25", "3.5"]),
    "causal_narratives": _sample(narratives_files, ["R0001", '"rain", "flood"', "human"]),
    "meter": _sample(meter_files, ["CAUSE-SECRET", "EFFECT-SECRET", "unfounded", "reversal"]),
    "causalt5k": _sample(
        causalt5k_files,
        ["GOLD-RATIONALE", "GOLD-INSIGHT", "GOLD-REFUSAL", "Collider", "T3", "C-1", "C-2"],
    ),
    "ratings": _sample(explica_files, ["GOLD-LABEL", "7.25", "anti-iconic"]),
}


# -- a release put to the local Chat Completions server with answers a test chose -------------


def evaluate_with(chat_server, release, answer_for, name: str = "real"):
    """Evaluate ``release`` (chat reading) by a fresh model of the local server
    (tests/fakes/chat_server.py) that answers each question ``answer_for(question)`` (a JSON
    object); run in this process. Returns the stored Evaluation."""
    from llm.evaluation import services
    from llm.evaluation.scoring import messages
    from llm.models import Endpoint

    scorer = services._scorer(release)
    model = chat_server.model(name)
    answers = {}
    for question in services.release_questions(release):
        user = messages(scorer, question)[-1]["content"]
        answers[user] = answer_for(question)
    # the server answers the first message it finds in the prompt: longest first, so that a
    # question whose text holds another's (a pressure variant holds its neutral prompt) gets
    # its own answer
    ordered = dict(sorted(answers.items(), key=lambda pair: -len(pair[0])))
    chat_server.control(model, answers=ordered, default="not json")
    endpoint = Endpoint.objects.create(
        name=model[:60],
        base_url=chat_server.base_url,
        model=model,
        requests_per_minute=0,
        max_retries=0,
        timeout_seconds=10,
    )
    evaluation = services.evaluation_start(release=release, endpoint=endpoint, enqueue=False)
    return services.evaluation_execute(evaluation_id=evaluation.pk)
