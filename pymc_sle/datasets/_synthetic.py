"""Synthetic regression problems, presented the way the SLE kernel consumes them: indices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_sle.distances._matrix import DistanceMatrix

__all__ = ["IndexedRegressionData", "one_dimensional", "one_dimensional_truth"]


@dataclass(frozen=True)
class IndexedRegressionData:
    """A regression problem whose inputs are rows of a distance matrix.

    Attributes
    ----------
    distances : DistanceMatrix of shape (n_train + n_test, n_train + n_test)
        Distances between all points; rows and columns follow the same order.
    train, test : numpy.ndarray of int
        Row indices of the training and test points. Use ``train[:, None]`` as a GP's ``X`` and
        ``train`` as the SLE ``landmarks``.
    y_train, y_test : numpy.ndarray
        Noisy observations.
    f_test : numpy.ndarray
        Noise-free latent function at the test points.
    coordinates : numpy.ndarray of shape (n_train + n_test, d)
        Euclidean coordinates of all points, for plotting and Euclidean baselines.
    noise_sd : float
        Standard deviation of the observation noise.
    """

    distances: DistanceMatrix
    train: np.ndarray
    test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    f_test: np.ndarray
    coordinates: np.ndarray
    noise_sd: float


def one_dimensional_truth(x):
    r"""The latent function of the 1-D benchmark on :math:`[0, 1]`.

    .. math:: f(x) = \sin(3\pi x) + \tfrac12 \sin(7\pi x)\, e^{-2x}

    The paper's Figure 1 does not state its function; this one has the same character: smooth,
    unit scale, two length scales, a damped fast component.
    """
    x = np.asarray(x, dtype=float)
    return np.sin(3.0 * np.pi * x) + 0.5 * np.sin(7.0 * np.pi * x) * np.exp(-2.0 * x)


def one_dimensional(
    n_train: int = 50, n_test: int = 200, noise_sd: float = 0.1, seed: int = 0
) -> IndexedRegressionData:
    """The 1-D benchmark (the paper's Figure 1 setting).

    Training inputs are uniform on ``[0, 1]``; test inputs a regular grid on ``[0, 1]``; both
    observed with Gaussian noise of standard deviation ``noise_sd``. Distances are ``|x - x'|``.

    Parameters
    ----------
    n_train, n_test : int
        Numbers of training and test points (at least 2 each).
    noise_sd : float
        Observation noise standard deviation (> 0).
    seed : int
        Seed of the random inputs and noise.

    Examples
    --------
    >>> from pymc_sle.datasets import one_dimensional
    >>> data = one_dimensional(n_train=10, n_test=5, seed=1)
    >>> data.distances.shape, data.train.shape, data.test.tolist()
    ((15, 15), (10,), [10, 11, 12, 13, 14])
    """
    for name, value in (("n_train", n_train), ("n_test", n_test)):
        if not isinstance(value, int | np.integer) or value < 2:
            raise ValueError(f"`{name}` must be an integer >= 2, but got {value!r}")
    if not np.isfinite(noise_sd) or noise_sd <= 0:
        raise ValueError(f"`noise_sd` must be > 0, but got {noise_sd!r}")
    rng = np.random.default_rng(seed)
    x_train = np.sort(rng.uniform(0.0, 1.0, n_train))
    x_test = np.linspace(0.0, 1.0, n_test)
    x = np.concatenate([x_train, x_test])
    f = one_dimensional_truth(x)
    y = f + noise_sd * rng.standard_normal(x.size)
    train = np.arange(n_train)
    test = np.arange(n_train, n_train + n_test)
    return IndexedRegressionData(
        distances=DistanceMatrix(
            np.abs(x[:, None] - x[None, :]), metadata={"metric": "euclidean", "dataset": "1d"}
        ),
        train=train,
        test=test,
        y_train=y[train],
        y_test=y[test],
        f_test=f[test],
        coordinates=x[:, None],
        noise_sd=float(noise_sd),
    )
