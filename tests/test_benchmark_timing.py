"""The benchmark rows of one workload are timed taking turns, and each gets exactly the
samples it is owed. The calls here only record who ran when: nothing is timed."""

from __future__ import annotations

from benchmarks.timing import Contender, Timing, TimingSettings, measure_in_turns


def _settings(samples: int) -> TimingSettings:
    # min_sample_s=0: one call per sample, so the log has one entry per sample.
    return TimingSettings(
        budget_s=0.0, min_samples=samples, max_samples=samples, min_sample_s=0.0, settle_s=0.0
    )


def _recording(name: str, log: list[str], fail_after: int | None = None) -> Contender:
    def call():
        if fail_after is not None and log.count(name) >= fail_after:
            raise RuntimeError(f"{name} broke")
        log.append(name)

    return Contender(call, sync=lambda result: None, finish=lambda: log.append(f"{name} done"))


def _blocks(log: list[str]) -> list[str]:
    """The log's calls with repeats folded: who ran, block by block."""
    calls = [entry for entry in log if not entry.endswith("done")]
    return [name for index, name in enumerate(calls) if index == 0 or calls[index - 1] != name]


def test_rows_take_turns_in_rotating_order_and_get_exactly_their_samples():
    log: list[str] = []
    timings = measure_in_turns(
        [_recording(name, log) for name in "abc"], _settings(7), single_call_samples=True
    )
    assert [len(timing.samples_s) for timing in timings] == [7, 7, 7]
    assert all(isinstance(timing, Timing) for timing in timings)
    # Three rounds, each row's block after the other's, the first row rotating.
    assert _blocks(log) == [*"abc", *"bca", *"cab"]
    # Each block is followed by its row's finish.
    assert log.count("a done") == log.count("b done") == log.count("c done") == 3


def test_a_row_that_breaks_while_timed_fails_alone():
    log: list[str] = []
    outcomes = measure_in_turns(
        [_recording("a", log), _recording("b", log, fail_after=4), _recording("c", log)],
        _settings(9),
        single_call_samples=True,
    )
    assert isinstance(outcomes[1], RuntimeError) and "b broke" in str(outcomes[1])
    assert [len(outcomes[index].samples_s) for index in (0, 2)] == [9, 9]
    # Once broken, b is not called again: its 3 samples of round 0 and 1 of round 1 ran.
    assert log.count("b") == 4


def test_one_sample_is_taken_once():
    log: list[str] = []
    timings = measure_in_turns([_recording("a", log)], _settings(1), single_call_samples=True)
    assert len(timings[0].samples_s) == 1 and log.count("a") == 1


def test_each_block_warms_up_untimed_after_its_settle_and_single_calls_do_not():
    """Every block of a row that is not single-call runs untimed calls for ``warmup_s``
    before its samples (the module doc: the threads spread again after the settle); the
    count of calls shows them. Single-call rows (new compiles, new processes) never warm up."""
    warm = TimingSettings(
        budget_s=0.0, min_samples=3, max_samples=3, min_sample_s=0.0, settle_s=0.0, warmup_s=0.02
    )
    log: list[str] = []
    timings = measure_in_turns([_recording("a", log)], warm)
    assert len(timings[0].samples_s) == 3
    # One calibration call, three samples, and the warm-up's calls (at least one a block).
    assert log.count("a") >= 1 + 3 + 3
    log.clear()
    measure_in_turns([_recording("a", log)], warm, single_call_samples=True)
    assert log.count("a") == 3
