"""Corpus cases for NumPy coverage: polynomials, signals, covariance and histograms
(registered into ``corpus.CASES``)."""

from __future__ import annotations

import numpy as np
from corpus import POSITIVE, REDUCTION_SCALE, case, f32, f64, i64


@case(
    "signals",
    [(f64(7), f64(3)), (f32(5), f32(5)), (f64(2), f64(4)), (f64(1), f64(1))],
    tags=["grad"],
    tolerance=REDUCTION_SCALE,
)
def signals(a, v):
    return (
        np.convolve(a, v),
        np.correlate(a, v, "same"),
        np.polyval(v, a),
        np.polymul(a, v),
        np.polyadd(a, v) - np.polysub(v, a),
        np.polyder(a, 1),
        np.polyint(v),
        np.vander(a, 3),
        np.trapezoid(a * a, dx=0.5),
        np.ediff1d(a, to_begin=v[:1]),
    )


@case(
    "covariance",
    [(f64(3, 6),), (f32(2, 5),), (f64(4, 4),)],
    tags=["grad", "reduction"],
    tolerance=REDUCTION_SCALE,
)
def covariance(m):
    weights = np.arange(1.0, m.shape[1] + 1)
    return np.cov(m), np.cov(m, aweights=weights), np.corrcoef(m), np.i0(m)


@case(
    "histograms",
    [(f64(20, 2), f64(20, values=POSITIVE)), (i64(9, 2), f64(9)), (f32(0, 2), f32(0))],
)
def histograms(sample, weights):
    return (
        np.histogram2d(sample[:, 0], sample[:, 1], bins=3),
        np.histogramdd(sample, bins=(2, 3), weights=weights, density=True),
        np.histogram_bin_edges(sample[:, 0], 4),
        np.unwrap(sample[:, 0] * 3.0),
    )
