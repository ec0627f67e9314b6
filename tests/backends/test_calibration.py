"""The threshold from which a product unit runs on all threads, measured per machine and
read by the compiled code at run time (backends/cpu/calibration.py): the arithmetic, the
record in the disk cache and when it is written, the case where nothing can be measured,
and the same source whatever the threshold."""

import json

import numpy as np
import pytest

import numbax
from numbax.backends.cpu import calibration, contraction, threads
from numbax.config import config

FLOPS = 2 * 256 * 256 * 128  # calibration.SHAPE


@pytest.fixture
def fresh_threshold(monkeypatch, tmp_path):
    """An empty cache directory, nothing settled yet in this process, and the threshold
    this process had put back afterwards."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(calibration, "_settled", False)
    monkeypatch.setattr(calibration.CELL, "value", calibration.DEFAULT)
    return tmp_path


@pytest.mark.parametrize(
    "serial_us, split_us, expected",
    [
        (131.0, 95.0, 1 << 23),  # waking costs 29.5 us: 2 * 29.5e-6 * 128 GFLOP/s = 7.6 M
        (134.0, 125.0, 1 << 24),  # 58 us: 14.5 M
        (50.0, 26.0, calibration.LEAST),  # a fast core, 1 us: 0.67 M
        (130.0, 65.0, calibration.LEAST),  # no cost measured at all
        (130.0, 400.0, calibration.MOST),  # the split far slower: a busy machine
    ],
)
def test_threshold_is_the_break_even_as_a_power_of_two(serial_us, split_us, expected):
    threshold = calibration.threshold_of(serial_us * 1e-6, split_us * 1e-6)
    assert threshold == expected
    wake_s = split_us * 1e-6 - serial_us * 1e-6 / 2
    break_even = 2 * wake_s * FLOPS / (serial_us * 1e-6)
    if calibration.LEAST < threshold < calibration.MOST:
        assert threshold / np.sqrt(2) <= break_even <= threshold * np.sqrt(2)


def test_measured_once_recorded_then_read(fresh_threshold, monkeypatch):
    measured = []

    def measure():
        measured.append(1)
        return 134e-6, 125e-6

    monkeypatch.setattr(calibration, "measure", measure)
    calibration.ensure_measured()
    calibration.ensure_measured()  # once per process
    assert calibration.CELL.value == 1 << 24 and measured == [1]
    (record,) = fresh_threshold.glob("machine-*.json")
    saved = json.loads(record.read_text())
    assert saved["parallel_flops"] == 1 << 24
    assert saved["serial_us"] == 134.0 and saved["split_us"] == 125.0
    # A later process reads the record as ``gemm`` loads, and measures nothing.
    monkeypatch.setattr(calibration, "_settled", False)
    calibration.CELL.value = calibration.DEFAULT
    calibration.load()
    calibration.ensure_measured()
    assert calibration.CELL.value == 1 << 24 and measured == [1]
    # A damaged record is measured again.
    record.write_text("{not json")
    monkeypatch.setattr(calibration, "_settled", False)
    calibration.load()
    calibration.ensure_measured()
    assert measured == [1, 1]


def test_a_split_slower_than_one_thread_serves_this_process_only(fresh_threshold, monkeypatch):
    """The other core was busy (a tiered first call's interpreter beside its compile): the
    threshold is used here and not recorded, so the next process measures again."""
    monkeypatch.setattr(calibration, "measure", lambda: (130e-6, 400e-6))
    calibration.ensure_measured()
    assert calibration.CELL.value == calibration.MOST
    assert not list(fresh_threshold.glob("machine-*.json"))


def test_one_thread_measures_nothing_and_writes_nothing(fresh_threshold, monkeypatch):
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 1)
    assert calibration.measure() is None
    calibration.ensure_measured()
    assert calibration.CELL.value == calibration.DEFAULT
    assert not list(fresh_threshold.glob("machine-*.json"))


def test_a_real_measurement(fresh_threshold):
    if threads.affinity_cpus() < 2:
        pytest.skip("one CPU: a split product cannot be measured")
    serial_s, split_s = calibration.measure()
    assert 0 < serial_s < 1 and 0 < split_s < 1
    assert calibration.CELL.value == calibration.DEFAULT  # measuring leaves the cell as it was
    calibration.ensure_measured()
    assert calibration.LEAST <= calibration.CELL.value <= calibration.MOST


def test_the_source_is_the_same_whatever_the_threshold(fresh_threshold, monkeypatch):
    """A 256 x 512 @ 512 x 256 product (2^26 flops) calls ``blocked_gemm``, which splits it
    or not by the cell at run time: the same source, the same values either way."""
    monkeypatch.setattr(calibration, "measure", lambda: None)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    product = numbax.jit(lambda a, b: a @ b, tiered=False)
    sources = set()
    for threshold in (calibration.NEVER, 0):
        calibration.CELL.value = threshold
        np.testing.assert_allclose(product(a, b), a @ b, rtol=1e-4, atol=1e-3)
        sources.add(product.lower(a, b).source())
    (source,) = sources
    assert "blocked_gemm" in source and str(calibration.DEFAULT) not in source
    small = numbax.jit(lambda a, b: a @ b, tiered=False)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    assert 2 * 8 * 16 * 16 < contraction.SPLITTABLE_FLOPS
    assert "blocked_gemm" not in small.lower(x, x.T.copy()).source()
