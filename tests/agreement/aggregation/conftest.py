"""The stage fits of these tests draw 10 bootstrap replicates instead of the service's 40: the
intervals' behaviour is the same, the machine's time is not."""

import pytest


@pytest.fixture(autouse=True)
def _fewer_bootstrap_replicates(monkeypatch):
    monkeypatch.setattr("agreement.aggregation.services.BOOTSTRAP_REPLICATES", 10)
