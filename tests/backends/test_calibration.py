"""The threshold from which a product unit runs on all threads, whose product (numbax's
packed one or BLAS's) runs it and whether a small one runs in column chunks, measured per
machine and read by the compiled code at run time (backends/cpu/calibration.py): the
arithmetic, the record in the disk cache and when it is written, the case where nothing
can be measured, and the same source and values whatever the cells hold."""

import json

import numpy as np
import pytest

import numbax
from numbax.backends.cpu import calibration, contraction, packed_gemm, threads
from numbax.config import config

FLOPS = 2 * 256 * 256 * 128  # calibration.SHAPE


@pytest.fixture
def fresh_threshold(monkeypatch, tmp_path):
    """An empty cache directory, nothing settled yet in this process, and the threshold
    this process had put back afterwards."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(calibration, "_settled", False)
    monkeypatch.setattr(calibration.CELL, "value", calibration.DEFAULT)
    monkeypatch.setattr(calibration.PRODUCTS_CELL, "value", calibration.PACKED_DEFAULT)
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
        # float32's packed product beat BLAS's, float64's did not; float64's small
        # products ran faster in column chunks, float32's did not.
        packed = {"s": (3e-4, 4e-4), "d": (9e-4, 6e-4)}
        small = {"s": (5e-5, 4e-5), "d": (4e-5, 6e-5)}
        return calibration.Measurement(134e-6, 125e-6, packed, small)

    monkeypatch.setattr(calibration, "measure", measure)
    calibration.ensure_measured()
    calibration.ensure_measured()  # once per process
    float32_only, float64_only = calibration.PACKED_BITS["s"], calibration.SMALL_BITS["d"]
    assert calibration.CELL.value == 1 << 24 and measured == [1]
    assert calibration.PRODUCTS_CELL.value == float32_only | float64_only
    (record,) = fresh_threshold.glob("machine-*.json")
    saved = json.loads(record.read_text())
    assert saved["parallel_flops"] == 1 << 24 and saved["packed_products"] == float32_only
    assert saved["small_products"] == float64_only
    assert saved["serial_us"] == 134.0 and saved["split_us"] == 125.0
    assert saved["products_us"] == {"s": [300.0, 400.0], "d": [900.0, 600.0]}
    assert saved["small_us"] == {"s": [50.0, 40.0], "d": [40.0, 60.0]}
    # A later process reads the record as ``gemm`` loads, and measures nothing.
    monkeypatch.setattr(calibration, "_settled", False)
    calibration.CELL.value = calibration.DEFAULT
    calibration.PRODUCTS_CELL.value = calibration.PACKED_DEFAULT
    calibration.load()
    calibration.ensure_measured()
    assert calibration.CELL.value == 1 << 24 and measured == [1]
    assert calibration.PRODUCTS_CELL.value == float32_only | float64_only
    # A record without the packed bits or the small products' (an earlier numbax's), or
    # with bits of neither, is measured again.
    for key, value in (("packed_products", None), ("small_products", None), ("small_products", 3)):
        written = dict(saved)
        if value is None:
            del written[key]
        else:
            written[key] = value
        record.write_text(json.dumps(written))
        monkeypatch.setattr(calibration, "_settled", False)
        calibration.load()
        calibration.ensure_measured()
    assert measured == [1, 1, 1, 1]
    # A damaged record is measured again.
    record.write_text("{not json")
    monkeypatch.setattr(calibration, "_settled", False)
    calibration.load()
    calibration.ensure_measured()
    assert measured == [1, 1, 1, 1, 1]


def test_a_split_slower_than_one_thread_serves_this_process_only(fresh_threshold, monkeypatch):
    """The other core was busy (a tiered first call's interpreter beside its compile): the
    threshold is used here and not recorded, so the next process measures again."""
    monkeypatch.setattr(calibration, "measure", lambda: calibration.Measurement(130e-6, 400e-6))
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
    measured = calibration.measure()
    assert 0 < measured.serial_s < 1 and 0 < measured.split_s < 1
    if packed_gemm.available():
        assert set(measured.products) == {"s", "d"}
        assert all(0 < t < 1 for times in measured.products.values() for t in times)
    else:
        assert measured.products == {}
    assert set(measured.small) == {"s", "d"}
    assert all(0 < t < 1 for times in measured.small.values() for t in times)
    # Measuring leaves the cells as they were.
    assert calibration.CELL.value == calibration.DEFAULT
    assert calibration.PRODUCTS_CELL.value == calibration.PACKED_DEFAULT
    calibration.ensure_measured()
    assert calibration.LEAST <= calibration.CELL.value <= calibration.MOST


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_source_is_the_same_whatever_the_cells(fresh_threshold, monkeypatch, dtype):
    """A 256 x 512 @ 512 x 256 product (2^26 flops) calls ``blocked_gemm``, which splits it
    or not, and multiplies by numbax's packed product or BLAS's, by the cells at run time:
    the same source, the same values every way."""
    monkeypatch.setattr(calibration, "measure", lambda: None)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 512)).astype(dtype)
    b = rng.standard_normal((512, 256)).astype(dtype)
    expected = a.astype(np.float64) @ b
    product = numbax.jit(lambda a, b: a @ b, tiered=False)
    sources = set()
    for threshold in (calibration.NEVER, 0):
        for packed in (0, calibration.PACKED_DEFAULT):
            calibration.CELL.value, calibration.PRODUCTS_CELL.value = threshold, packed
            np.testing.assert_allclose(product(a, b), expected, rtol=1e-4, atol=1e-3)
            sources.add(product.lower(a, b).source())
    (source,) = sources
    assert "blocked_gemm" in source and str(calibration.DEFAULT) not in source
    small = numbax.jit(lambda a, b: a @ b, tiered=False)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    assert 2 * 8 * 16 * 16 < contraction.SPLITTABLE_FLOPS
    assert "blocked_gemm" not in small.lower(x, x.T.copy()).source()
