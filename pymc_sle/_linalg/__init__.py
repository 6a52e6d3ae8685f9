"""The library's linear algebra with no Gaussian process in it, tested on its own.

- ``_lapack`` -- LAPACK's Cholesky routines and BLAS's ``dsyrk``, callable from numba;
- ``_euclidean`` -- squared Euclidean distances without cancellation;
- ``_spectrum`` -- the eigenvalues of a symmetric matrix and a vector's coordinates in its
  eigenbasis, without the eigenvectors;
- ``_supernodal_analysis`` and ``_supernodal`` -- the symbolic analysis of a sparse symmetric
  pattern, then the supernodal Cholesky factorisation, solves, the log determinant and the
  selected inverse (Takahashi recursions) on it.

Each module is imported where it is needed (``from pymc_sle._linalg._lapack import ...``), so
a module that needs distances only does not load the LAPACK bindings.
"""
