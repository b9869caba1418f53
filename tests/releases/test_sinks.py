"""releases.sinks: one pass feeds every sink, and every sink is closed whatever fails."""

import pytest

from releases.sinks import close_all, write_rows


class Sink:
    def __init__(self, name, *, fail_write=False, fail_close=False):
        self.name, self.fail_write, self.fail_close = name, fail_write, fail_close
        self.rows, self.closed = [], False

    def write(self, row):
        if self.fail_write:
            raise ValueError(f"{self.name} cannot write")
        self.rows.append(row)

    def close(self):
        self.closed = True
        if self.fail_close:
            raise OSError(f"{self.name} cannot close")
        return f"{self.name}: {len(self.rows)} rows"


def test_every_sink_gets_every_row_and_its_entry_in_order():
    sinks = [Sink("a"), Sink("b")]
    assert write_rows([{"x": 1}, {"x": 2}], sinks) == ["a: 2 rows", "b: 2 rows"]
    assert all(sink.closed for sink in sinks)


def test_a_failing_pass_closes_every_sink_and_its_own_error_is_raised():
    sinks = [Sink("a", fail_close=True), Sink("b", fail_write=True), Sink("c")]
    with pytest.raises(ValueError, match="b cannot write"):
        write_rows([{"x": 1}], sinks)
    assert all(sink.closed for sink in sinks)


def test_a_failing_close_closes_the_others_then_raises_the_first():
    sinks = [Sink("a"), Sink("b", fail_close=True), Sink("c", fail_close=True)]
    with pytest.raises(OSError, match="b cannot close"):
        close_all(sinks)
    assert all(sink.closed for sink in sinks)
    assert close_all([Sink("d", fail_close=True), Sink("e")], raise_failure=False) == ["e: 0 rows"]
