"""PSD reports."""

import numpy as np
import pytest

from pymc_sle import psd_report


def test_report_of_known_spectra():
    report = psd_report(np.diag([4.0, 1.0, 0.5]))
    assert report.is_psd and report.n_negative == 0
    np.testing.assert_allclose(
        [report.min_eigenvalue, report.max_eigenvalue, report.condition_number], [0.5, 4.0, 8.0]
    )
    indefinite = psd_report(np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert indefinite.n_negative == 1 and not indefinite.is_psd
    np.testing.assert_allclose(indefinite.min_eigenvalue, -1.0)
    assert indefinite.condition_number == np.inf
    assert "indefinite (1 negative eigenvalues)" in str(indefinite)


def test_rounding_is_not_indefinite():
    v = np.ones((3, 1)) / np.sqrt(3)
    singular = v @ v.T - 1e-14 * np.eye(3)  # rank one, rounding below zero
    assert psd_report(singular).is_psd
    assert not psd_report(singular, tol=0.0).is_psd


@pytest.mark.parametrize(
    ("matrix", "tol", "message"),
    [
        (np.ones((2, 3)), 1e-10, "square and non-empty"),
        (np.ones((0, 0)), 1e-10, "square and non-empty"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), 1e-10, "finite"),
        (np.eye(2), -1.0, "`tol` must be >= 0"),
    ],
)
def test_validates(matrix, tol, message):
    with pytest.raises(ValueError, match=message):
        psd_report(matrix, tol=tol)
