"""Synthetic small-angle X-ray scattering (SAXS) images of multi-domain lamellar thin films."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SAXSData", "coarsen", "saxs_images"]


@dataclass(frozen=True)
class SAXSData:
    """Simulated SAXS images, their structural parameters and the regression target.

    Attributes
    ----------
    images : numpy.ndarray of shape (n, size, size)
        Photon counts per detector pixel (non-negative integers stored as float).
    y : numpy.ndarray of shape (n,)
        Effective Young's modulus along the measurement axis, in GPa (the GP output).
    modulus : numpy.ndarray of shape (n,)
        The noise-free modulus (``y`` without its measurement noise).
    sigma_coupling : numpy.ndarray of shape (n,)
        Inter-harmonic coupling disorder of each sample, in radians.
    q_star : numpy.ndarray of shape (n,)
        Fundamental scattering vector, in units of the detector half-width.
    n_domains : numpy.ndarray of int, shape (n,)
        Number of lamellar domains in each sample.
    """

    images: np.ndarray
    y: np.ndarray
    modulus: np.ndarray
    sigma_coupling: np.ndarray
    q_star: np.ndarray
    n_domains: np.ndarray


def _arc(q_norm, azimuth, q_centre, angle, radial_width, azimuthal_width):
    """A Gaussian arc at radius ``q_centre`` and azimuth ``angle`` plus its Friedel mate."""
    radial = np.exp(-0.5 * ((q_norm - q_centre) / radial_width) ** 2)
    offset = np.angle(np.exp(1j * (azimuth - angle)))  # wrapped to (-pi, pi]
    mate = np.angle(np.exp(1j * (azimuth - angle - np.pi)))
    angular = np.exp(-0.5 * (offset / azimuthal_width) ** 2) + np.exp(
        -0.5 * (mate / azimuthal_width) ** 2
    )
    return radial * angular


def _domain_modulus(tilt, mismatch, e_normal, e_in_plane, coherence_scale):
    """Young's modulus of one lamellar domain along the measurement axis (see saxs_images)."""
    c2, s2 = np.cos(tilt) ** 2, np.sin(tilt) ** 2
    compliance = c2**2 / e_normal + s2**2 / e_in_plane + 2.0 * c2 * s2 / (e_normal + e_in_plane)
    return np.exp(-0.5 * (mismatch / coherence_scale) ** 2) / compliance


def saxs_images(
    n_images: int = 500,
    size: int = 64,
    *,
    counts: float = 2.0e4,
    y_noise_sd: float = 0.05,
    seed: int = 0,
) -> SAXSData:
    r"""Simulate SAXS patterns of oriented multi-domain lamellar films (the paper's Section 5.3).

    **Sample.** Each film is a mixture of :math:`K \in \{2,\dots,5\}` lamellar domains with
    Dirichlet(2) volume fractions :math:`w_k`. Domain *k*'s lamellar normal is tilted by
    :math:`\theta_k \sim N(0, s_\theta^2)` from the measurement axis (the detector's x axis), with
    a sample-level mosaic spread :math:`s_\theta \sim U(5°, 35°)`. The period sets the fundamental
    scattering vector :math:`q^* \sim U(0.28, 0.40)` (detector half-width = 1).

    **Scattering.** A domain scatters a fundamental arc at :math:`|q| = q^*`, centred on its
    normal (and on the Friedel mate at :math:`\theta_k + \pi`), and a second-harmonic arc at
    :math:`2q^*` with relative intensity 0.35, centred on :math:`\theta_k + \delta_k`. The
    harmonic's misalignment :math:`\delta_k \sim N(0, \sigma_\text{coup}^2)` is the
    inter-harmonic coupling disorder: with :math:`\sigma_\text{coup} = 0` the two arcs of a domain
    are collinear. :math:`\sigma_\text{coup} \sim U(0, 0.6)` rad per sample. Arcs are Gaussian in
    :math:`|q|` (width :math:`0.03 + 0.05\,q^*`) and in azimuth (width 0.12 rad, the domains'
    internal mosaicity). An isotropic background :math:`0.01\,(|q| + 0.05)^{-2} + 0.02` stands
    for diffuse and parasitic scattering, and a beam stop blanks :math:`|q| < 0.12`. The pattern
    is normalised to ``counts`` expected photons and Poisson counting noise is drawn, as on a
    photon-counting detector.

    **Output.** Each domain is a transversely isotropic laminate with modulus
    :math:`E_n = 1.5` GPa across the layers and :math:`E_t = 6` GPa along them; its modulus along
    the measurement axis follows the rotated compliance
    :math:`1/E(\theta) = \cos^4\theta / E_n + \sin^4\theta / E_t + 2\cos^2\theta\sin^2\theta /
    (E_n + E_t)`. Harmonic decoherence marks defective layer stacking, which softens the domain
    by :math:`\exp(-\delta_k^2 / (2 \cdot 0.25^2))`. The film's modulus is the volume-weighted
    (Voigt) average, and ``y`` adds Gaussian measurement noise of sd ``y_noise_sd``. So ``y``
    falls as :math:`\sigma_\text{coup}` grows, and everything it depends on -- tilts, fractions
    and harmonic offsets -- is visible in the image, blurred by the arcs' widths and the noise.

    Parameters
    ----------
    n_images : int, default 500
        Number of images (>= 1).
    size : int, default 64
        Detector side in pixels (>= 8).
    counts : float, default 2e4
        Expected photons per image (> 0).
    y_noise_sd : float, default 0.05
        Measurement noise on the modulus, GPa (>= 0).
    seed : int, default 0
        Everything is deterministic given the seed.

    Returns
    -------
    SAXSData

    Examples
    --------
    >>> from pymc_sle.datasets import saxs_images
    >>> data = saxs_images(n_images=3, size=16, seed=1)
    >>> data.images.shape, data.y.shape
    ((3, 16, 16), (3,))
    """
    if not isinstance(n_images, int | np.integer) or n_images < 1:
        raise ValueError(f"`n_images` must be an integer >= 1, but got {n_images!r}")
    if not isinstance(size, int | np.integer) or size < 8:
        raise ValueError(f"`size` must be an integer >= 8, but got {size!r}")
    if not np.isfinite(counts) or counts <= 0:
        raise ValueError(f"`counts` must be > 0, but got {counts!r}")
    if not np.isfinite(y_noise_sd) or y_noise_sd < 0:
        raise ValueError(f"`y_noise_sd` must be >= 0, but got {y_noise_sd!r}")
    rng = np.random.default_rng(seed)
    axis = (np.arange(size) + 0.5) / size * 2.0 - 1.0
    qx, qy = np.meshgrid(axis, -axis)
    q_norm = np.hypot(qx, qy)
    azimuth = np.arctan2(qy, qx)
    background = 0.01 / (q_norm + 0.05) ** 2 + 0.02
    beam_stop = q_norm < 0.12

    images = np.empty((n_images, size, size))
    modulus = np.empty(n_images)
    sigma_coupling = rng.uniform(0.0, 0.6, n_images)
    q_star = rng.uniform(0.28, 0.40, n_images)
    n_domains = rng.integers(2, 6, n_images)
    for i in range(n_images):
        k = int(n_domains[i])
        fractions = rng.dirichlet(np.full(k, 2.0))
        tilts = rng.normal(0.0, np.deg2rad(rng.uniform(5.0, 35.0)), k)
        mismatch = rng.normal(0.0, sigma_coupling[i], k)
        radial_width = 0.03 + 0.05 * q_star[i]
        pattern = background.copy()
        for w, tilt, delta in zip(fractions, tilts, mismatch, strict=True):
            pattern += w * _arc(q_norm, azimuth, q_star[i], tilt, radial_width, 0.12)
            pattern += (
                0.35 * w * _arc(q_norm, azimuth, 2 * q_star[i], tilt + delta, radial_width, 0.12)
            )
        pattern[beam_stop] = 0.0
        images[i] = rng.poisson(pattern * (counts / pattern.sum()))
        modulus[i] = fractions @ _domain_modulus(tilts, mismatch, 1.5, 6.0, 0.25)
    y = modulus + y_noise_sd * rng.standard_normal(n_images)
    return SAXSData(images, y, modulus, sigma_coupling, q_star, n_domains)


def coarsen(images, factor: int) -> np.ndarray:
    r"""Sum ``factor x factor`` pixel blocks: the same photons on a detector with larger pixels.

    Coarse-graining moves every fine pixel's mass to its block centre, at most
    :math:`(f - 1)/\sqrt2` fine pixels away, so by the triangle inequality a W2 distance changes
    by at most :math:`\sqrt2\,(f - 1)` fine pixels:
    ``|f * W2(coarse) - W2(fine)| <= sqrt(2) * (f - 1)`` with ``f = factor``.

    Parameters
    ----------
    images : array_like of shape (n, height, width)
        Height and width must be multiples of ``factor``.
    factor : int
        Block side (>= 1).
    """
    images = np.asarray(images, dtype=float)
    if not isinstance(factor, int | np.integer) or factor < 1:
        raise ValueError(f"`factor` must be an integer >= 1, but got {factor!r}")
    if images.ndim != 3 or images.shape[1] % factor or images.shape[2] % factor:
        raise ValueError(
            f"`images` must have shape (n, height, width) with height and width multiples of "
            f"factor={factor}, but has shape {images.shape}"
        )
    n, h, w = images.shape
    return images.reshape(n, h // factor, factor, w // factor, factor).sum(axis=(2, 4))
