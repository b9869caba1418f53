"""The local fake of Prolific's API (tests/crowd/test_prolific.py) for every crowd test."""

from tests.crowd.test_prolific import prolific  # noqa: F401 (a fixture)
