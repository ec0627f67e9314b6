"""The threshold from which a product runs on all threads, measured per machine
(backends/cpu/calibration.py): the arithmetic, the record in the disk cache, the case
where nothing can be measured, and the generated code following it."""

import json

import numpy as np
import pytest

import numbax
from numbax.backends.cpu import calibration, contraction
from numbax.config import config

FLOPS = 2 * 256 * 256 * 128  # calibration.SHAPE


@pytest.fixture
def fresh_threshold(monkeypatch, tmp_path):
    """An empty cache directory and no threshold measured yet in this process."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(contraction, "PARALLEL_FLOPS", None)
    calibration._threshold.cache_clear()
    yield tmp_path
    calibration._threshold.cache_clear()


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


def test_measured_once_then_read_from_the_cache(fresh_threshold, monkeypatch):
    measured = []

    def measure():
        measured.append(1)
        return 134e-6, 125e-6

    monkeypatch.setattr(calibration, "measure", measure)
    assert calibration.parallel_flops() == 1 << 24
    (record,) = fresh_threshold.glob("machine-*.json")
    saved = json.loads(record.read_text())
    assert saved["parallel_flops"] == 1 << 24
    assert saved["serial_us"] == 134.0 and saved["split_us"] == 125.0
    calibration._threshold.cache_clear()  # a later process: reads, does not measure
    assert calibration.parallel_flops() == 1 << 24
    assert measured == [1]
    record.write_text("{not json")  # a damaged record is measured again
    calibration._threshold.cache_clear()
    assert calibration.parallel_flops() == 1 << 24
    assert measured == [1, 1]


def test_one_thread_measures_nothing_and_writes_nothing(fresh_threshold, monkeypatch):
    monkeypatch.setattr(calibration.threads, "affinity_cpus", lambda: 1)
    assert calibration.measure() is None
    assert calibration.parallel_flops() == calibration.DEFAULT
    assert not list(fresh_threshold.glob("machine-*.json"))


def test_a_real_measurement(fresh_threshold):
    if calibration.threads.affinity_cpus() < 2:
        pytest.skip("one CPU: a split product cannot be measured")
    serial_s, split_s = calibration.measure()
    assert 0 < serial_s < 1 and 0 < split_s < 1
    assert calibration.LEAST <= calibration.parallel_flops() <= calibration.MOST


@pytest.mark.parametrize("threshold", [1 << 22, 1 << 26])
def test_the_generated_product_follows_the_threshold(fresh_threshold, monkeypatch, threshold):
    """A 64 x 256 @ 256 x 512 product (2^24 flops) is split into blocks below it, one
    ``gemm`` call at or above; the same value either way."""
    monkeypatch.setattr(calibration, "measure", lambda: None)
    monkeypatch.setattr(calibration, "DEFAULT", threshold)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 256), dtype=np.float32)
    b = rng.standard_normal((256, 512), dtype=np.float32)
    product = numbax.jit(lambda a, b: a @ b, tiered=False)
    np.testing.assert_allclose(product(a, b), a @ b, rtol=1e-4, atol=1e-4)
    source = product.lower(a, b).source()
    assert ("blocked_gemm" in source) == (threshold <= 1 << 24)
