"""The test tree mirrors the code tree (CONTRIBUTING.md, "Tests"): a test module in
``tests/<app>/`` (or ``tests/<app>/<package>/``) is named after the module it tests —
``test_<module>.py``, or ``test_<module>_<topic>.py`` when one module's tests are split — so a
newcomer finds a module's tests by its name. Tests of one behaviour across an app's modules
(races, permissions on every page, workers) are named for the behaviour and listed here with the
reason; the cross-app ones live at the top of ``tests/``; browser flows in ``tests/browser/``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

#: Test modules named for a behaviour that spans the app's modules, with why.
BEHAVIOURS = {
    "agreement/test_blindness.py": "what each role sees of answers across the agreement pages",
    "annotation/test_concurrency.py": "32 annotators racing next / submit on PostgreSQL",
    "annotation/test_integrity.py": "nothing lost when people, leases or counters go wrong",
    "annotation/test_permissions.py": "every page and endpoint as each role",
    "annotation/test_workers.py": "the real Celery worker resolving after commit, sweeps",
    "api/test_input_limits.py": "bad or oversized input on every endpoint: a 400, nothing written",
    "crowd/test_concurrency.py": "64 participants entering one study at once",
    "graphs/test_graphs_app.py": "the CARL-GT app end to end: import, questions, scores, demo",
    "imports/test_fuzz.py": "generated bad files through every reader and schema",
    "narratives/test_app.py": "the CausalNarratives app end to end: import, ordering, scores, demo",
    "review/causalt5k/test_real.py": "the real CausalT5k release, when ../shared is present",
    "review/meter/test_meter.py": "the METER pipeline end to end: verify, check-edit-vote, filter",
    # Several hosts (docs/deployment.md): settings, storage and processes together.
    "hosts/test_object_storage.py": "files on an S3-compatible store: uploads, releases, reads",
    "hosts/test_queues.py": "interactive and bulk work on separate Celery queues",
    "hosts/test_pgbouncer.py": "the engine through PgBouncer, session and transaction pooling",
    "hosts/test_multihost.py": "several hosts (network namespaces) under faults, end to end",
    "hosts/test_replica.py": "researchers' pages read from a real streaming replica, with fallback",
    "sso/test_sign_in.py": "the OpenID Connect sign-in flow against a local provider, end to end",
}


def _tested_module_exists(test: Path) -> bool:
    relative = test.relative_to(TESTS)
    package = ROOT.joinpath(*relative.parts[:-1])
    name = test.stem.removeprefix("test_")
    parts = name.split("_")
    # test_<module>.py or test_<module>_<topic>.py: some prefix of the name is a module.
    for end in range(len(parts), 0, -1):
        module = "_".join(parts[:end])
        if (package / f"{module}.py").exists() or (package / module / "__init__.py").exists():
            return True
    return False


def test_each_app_test_module_is_named_after_a_module_of_its_app():
    strays = [
        str(test.relative_to(ROOT))
        for test in sorted(TESTS.glob("*/**/test_*.py"))
        if test.relative_to(TESTS).parts[0] != "browser"
        and str(test.relative_to(TESTS)) not in BEHAVIOURS
        and not _tested_module_exists(test)
    ]
    assert strays == [], "name each after the module it tests, or list it in BEHAVIOURS"


def test_every_listed_behaviour_module_still_exists():
    assert [name for name in BEHAVIOURS if not (TESTS / name).exists()] == []
