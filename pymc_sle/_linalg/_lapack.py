"""LAPACK's Cholesky routines and BLAS's ``dsyrk``, callable from numba and cacheable by numba.

numba's own ``np.linalg`` has ``cholesky`` but no triangular solve and no ``potri`` (the inverse
from a Cholesky factor, 2/3 n^3 flops instead of 2 n^3 for a general inverse), so the routines are
taken from SciPy's ``cython_lapack`` table. ``dsyrk`` (``A A^T`` in half the flops of the general
product numba's ``a @ a.T`` runs) comes from ``cython_blas``. The function pointer is looked up at
run time and kept in a module-level LLVM global, never baked into the machine code, so
``cache=True`` stays valid across processes (the same technique as PyTensor's numba backend).

All routines follow LAPACK's column-major convention. For a symmetric matrix stored C-contiguous,
the column-major view is its transpose, i.e. the same matrix, and LAPACK's lower triangle is the
C upper triangle.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import get_cython_function_address, intrinsic

__all__ = [
    "blocked_cholesky",
    "blocked_cholesky_inverse",
    "blocked_gemm",
    "blocked_syrk_update",
    "blocked_trsm",
    "cholesky_inplace",
    "cholesky_inverse_inplace",
    "cholesky_solve_inplace",
    "gram_upper",
    "is_symmetric",
    "mirror_upper_inplace",
    "symmetric_sum",
]

_i32p = types.CPointer(types.int32)
_f64p = types.CPointer(types.float64)


@intrinsic(prefer_literal=True)
def _function_pointer(typingctx, get_address, function_type_ref, name_literal):
    """A callable of ``function_type_ref`` whose address comes from ``get_address()`` once."""
    function_type = function_type_ref.instance_type
    global_name = f"_pymc_sle_lapack_{name_literal.literal_value}"

    def codegen(context, builder, signature, args):
        pointer_type = ir.PointerType(ir.IntType(8))
        cached = cgutils.add_global_variable(builder.module, pointer_type, global_name)
        cached.linkage = "private"
        cached.initializer = pointer_type(None)
        cached.align = 64
        value = builder.load_atomic(cached, "acquire", 64)
        result = cgutils.alloca_once_value(builder, value)
        with builder.if_then(builder.icmp_signed("==", value, pointer_type(None)), likely=False):
            lookup = context.get_function(
                get_address, typingctx.resolve_function_type(get_address, [], {})
            )
            address = builder.inttoptr(lookup(builder, []), pointer_type)
            builder.store_atomic(address, cached, "release", 64)
            builder.store(address, result)
        proxy = cgutils.create_struct_proxy(function_type)(context, builder)
        proxy.c_addr = builder.load(result)
        return proxy._getvalue()

    return function_type(get_address, function_type_ref, name_literal), codegen


def _address_getter(name: str, table: str = "scipy.linalg.cython_lapack"):
    @numba.njit(cache=True)
    def get_address():
        with numba.objmode(address=types.intp):
            address = get_cython_function_address(table, name)
        return address

    return get_address


_dpotrf_type = types.FunctionType(types.void(_i32p, _i32p, _f64p, _i32p, _i32p))
_dpotri_type = _dpotrf_type
_dpotrs_type = types.FunctionType(
    types.void(_i32p, _i32p, _i32p, _f64p, _i32p, _f64p, _i32p, _i32p)
)
_dsyrk_type = types.FunctionType(
    types.void(_i32p, _i32p, _i32p, _i32p, _f64p, _f64p, _i32p, _f64p, _f64p, _i32p)
)
_dtrsm_type = types.FunctionType(
    types.void(_i32p, _i32p, _i32p, _i32p, _i32p, _i32p, _f64p, _f64p, _i32p, _f64p, _i32p)
)
_dgemm_type = types.FunctionType(
    types.void(
        _i32p, _i32p, _i32p, _i32p, _i32p, _f64p, _f64p, _i32p, _f64p, _i32p, _f64p, _f64p, _i32p
    )
)
_dsyrk_address = _address_getter("dsyrk", "scipy.linalg.cython_blas")
_dtrsm_address = _address_getter("dtrsm", "scipy.linalg.cython_blas")
_dgemm_address = _address_getter("dgemm", "scipy.linalg.cython_blas")
_dpotrf_address = _address_getter("dpotrf")
_dpotri_address = _address_getter("dpotri")
_dpotrs_address = _address_getter("dpotrs")


@numba.njit(cache=True)
def _int_buffer(value):
    buffer = np.empty(1, dtype=np.int32)
    buffer[0] = value
    return buffer


@numba.njit(cache=True)
def _float_buffer(value):
    buffer = np.empty(1, dtype=np.float64)
    buffer[0] = value
    return buffer


@numba.njit(cache=True)
def gram_upper(a):
    """``a @ a.T`` for C-contiguous ``a`` of shape (n, k); only the C-upper triangle is written.

    The C-order ``(n, k)`` array is BLAS's column-major ``(k, n)`` matrix ``a^T``, so
    ``dsyrk("L", "T")`` computes ``(a^T)^T a^T = a a^T`` into LAPACK's lower = C's upper triangle.
    """
    n, k = a.shape
    out = np.zeros((n, n))
    dsyrk = _function_pointer(_dsyrk_address, _dsyrk_type, "dsyrk")
    uplo, trans = _int_buffer(ord("L")), _int_buffer(ord("T"))
    n_buf, k_buf, lda = _int_buffer(n), _int_buffer(k), _int_buffer(max(k, 1))
    alpha, beta = _float_buffer(1.0), _float_buffer(0.0)
    dsyrk(uplo.ctypes, trans.ctypes, n_buf.ctypes, k_buf.ctypes, alpha.ctypes, a.ctypes,
          lda.ctypes, beta.ctypes, out.ctypes, n_buf.ctypes)  # fmt: skip
    return out


@numba.njit(cache=True)
def cholesky_inplace(a):
    """Overwrite the LAPACK-lower triangle of square ``a`` with its Cholesky factor.

    Returns LAPACK's ``info``: 0 on success, ``k > 0`` if the leading minor of order k is not
    positive definite.
    """
    dpotrf = _function_pointer(_dpotrf_address, _dpotrf_type, "dpotrf")
    uplo, n, info = _int_buffer(ord("L")), _int_buffer(a.shape[0]), _int_buffer(0)
    dpotrf(uplo.ctypes, n.ctypes, a.ctypes, n.ctypes, info.ctypes)
    return info[0]


@numba.njit(cache=True)
def cholesky_solve_inplace(factor, b):
    """Overwrite ``b`` with ``A^{-1} b`` given ``factor`` from `cholesky_inplace`.

    ``b`` is a vector of length n or a C-contiguous ``(k, n)`` array, whose rows are solved
    together (BLAS sees the column-major ``(n, k)`` matrix of right-hand sides).
    """
    dpotrs = _function_pointer(_dpotrs_address, _dpotrs_type, "dpotrs")
    uplo, n, n_rhs, info = (
        _int_buffer(ord("L")),
        _int_buffer(factor.shape[0]),
        _int_buffer(b.size // max(factor.shape[0], 1)),
        _int_buffer(0),
    )
    dpotrs(uplo.ctypes, n.ctypes, n_rhs.ctypes, factor.ctypes, n.ctypes, b.ctypes, n.ctypes,
           info.ctypes)  # fmt: skip
    return info[0]


@numba.njit(cache=True)
def cholesky_inverse_inplace(factor):
    """Overwrite ``factor`` (from `cholesky_inplace`) with the LAPACK-lower triangle of A^-1."""
    dpotri = _function_pointer(_dpotri_address, _dpotri_type, "dpotri")
    uplo, n, info = _int_buffer(ord("L")), _int_buffer(factor.shape[0]), _int_buffer(0)
    dpotri(uplo.ctypes, n.ctypes, factor.ctypes, n.ctypes, info.ctypes)
    return info[0]


_TILE = 64  # transposes go tile by tile, so the strided side of each tile stays in cache


@numba.njit(cache=True)
def mirror_upper_inplace(a):
    """Copy the C-upper triangle of square ``a`` onto its lower triangle."""
    n = a.shape[0]
    for row_start in range(0, n, _TILE):
        for col_start in range(row_start, n, _TILE):
            for i in range(row_start, min(row_start + _TILE, n)):
                for j in range(max(col_start, i + 1), min(col_start + _TILE, n)):
                    a[j, i] = a[i, j]


@numba.njit(cache=True)
def is_symmetric(a):
    """Whether square ``a`` equals its transpose exactly: a read-only pass, tile by tile, that
    stops at the first difference."""
    n = a.shape[0]
    for row_start in range(0, n, _TILE):
        for col_start in range(row_start, n, _TILE):
            for i in range(row_start, min(row_start + _TILE, n)):
                for j in range(max(col_start, i + 1), min(col_start + _TILE, n)):
                    if a[i, j] != a[j, i]:
                        return False
    return True


@numba.njit(cache=True)
def symmetric_sum(a):
    """``a + a.T`` for square ``a``."""
    n = a.shape[0]
    out = np.empty_like(a)
    for row_start in range(0, n, _TILE):
        for col_start in range(row_start, n, _TILE):
            for i in range(row_start, min(row_start + _TILE, n)):
                for j in range(max(col_start, i), min(col_start + _TILE, n)):
                    value = a[i, j] + a[j, i]
                    out[i, j] = value
                    out[j, i] = value
    return out


# Column-major blocks inside flat arrays, for the supernodal factorisation
# (``pymc_sle._linalg._supernodal``): each routine reads and writes the block that starts at
# ``offset`` of the flat float64 array, with leading dimension ``ld`` (LAPACK's column-major
# convention).


@numba.njit(cache=True)
def blocked_cholesky(a, offset, n, ld):
    """``dpotrf("L")`` on the n x n block of ``a`` at ``offset``; returns LAPACK's ``info``."""
    dpotrf = _function_pointer(_dpotrf_address, _dpotrf_type, "dpotrf")
    uplo, n_buf, ld_buf, info = (
        _int_buffer(ord("L")),
        _int_buffer(n),
        _int_buffer(ld),
        _int_buffer(0),
    )
    dpotrf(uplo.ctypes, n_buf.ctypes, a[offset:].ctypes, ld_buf.ctypes, info.ctypes)
    return info[0]


@numba.njit(cache=True)
def blocked_cholesky_inverse(a, offset, n, ld):
    """``dpotri("L")``: the lower triangle of the n x n block becomes ``(L L^T)^{-1}``."""
    dpotri = _function_pointer(_dpotri_address, _dpotri_type, "dpotri")
    uplo, n_buf, ld_buf, info = (
        _int_buffer(ord("L")),
        _int_buffer(n),
        _int_buffer(ld),
        _int_buffer(0),
    )
    dpotri(uplo.ctypes, n_buf.ctypes, a[offset:].ctypes, ld_buf.ctypes, info.ctypes)
    return info[0]


@numba.njit(cache=True)
def blocked_trsm(side, trans, m, n, a, a_offset, lda, b, b_offset, ldb):
    """``dtrsm``: the m x n block ``B`` becomes ``B L^-op`` (``side="R"``) or ``L^-op B``
    (``"L"``), with ``L`` the lower-triangular, non-unit block of ``a`` and op given by
    ``trans`` ("N" or "T")."""
    dtrsm = _function_pointer(_dtrsm_address, _dtrsm_type, "dtrsm")
    side_buf, uplo, trans_buf, diag = (
        _int_buffer(ord(side)),
        _int_buffer(ord("L")),
        _int_buffer(ord(trans)),
        _int_buffer(ord("N")),
    )
    m_buf, n_buf, lda_buf, ldb_buf = (
        _int_buffer(m),
        _int_buffer(n),
        _int_buffer(lda),
        _int_buffer(ldb),
    )
    alpha = _float_buffer(1.0)
    dtrsm(
        side_buf.ctypes,
        uplo.ctypes,
        trans_buf.ctypes,
        diag.ctypes,
        m_buf.ctypes,
        n_buf.ctypes,
        alpha.ctypes,
        a[a_offset:].ctypes,
        lda_buf.ctypes,
        b[b_offset:].ctypes,
        ldb_buf.ctypes,
    )


@numba.njit(cache=True)
def blocked_syrk_update(n, k, a, a_offset, lda, c, c_offset, ldc):
    """``dsyrk("L", "N")``: the lower triangle of the n x n block ``C`` becomes ``C - A A^T``
    for the n x k block ``A``."""
    dsyrk = _function_pointer(_dsyrk_address, _dsyrk_type, "dsyrk")
    uplo, trans = _int_buffer(ord("L")), _int_buffer(ord("N"))
    n_buf, k_buf, lda_buf, ldc_buf = (
        _int_buffer(n),
        _int_buffer(k),
        _int_buffer(lda),
        _int_buffer(ldc),
    )
    alpha, beta = _float_buffer(-1.0), _float_buffer(1.0)
    dsyrk(
        uplo.ctypes,
        trans.ctypes,
        n_buf.ctypes,
        k_buf.ctypes,
        alpha.ctypes,
        a[a_offset:].ctypes,
        lda_buf.ctypes,
        beta.ctypes,
        c[c_offset:].ctypes,
        ldc_buf.ctypes,
    )


@numba.njit(cache=True)
def blocked_gemm(
    trans_a, m, n, k, alpha, a, a_offset, lda, b, b_offset, ldb, beta, c, c_offset, ldc
):
    """``dgemm``: the m x n block ``C`` becomes ``alpha op(A) B + beta C``, op given by
    ``trans_a`` ("N" or "T")."""
    dgemm = _function_pointer(_dgemm_address, _dgemm_type, "dgemm")
    ta, tb = _int_buffer(ord(trans_a)), _int_buffer(ord("N"))
    m_buf, n_buf, k_buf = _int_buffer(m), _int_buffer(n), _int_buffer(k)
    lda_buf, ldb_buf, ldc_buf = _int_buffer(lda), _int_buffer(ldb), _int_buffer(ldc)
    alpha_buf, beta_buf = _float_buffer(alpha), _float_buffer(beta)
    dgemm(
        ta.ctypes,
        tb.ctypes,
        m_buf.ctypes,
        n_buf.ctypes,
        k_buf.ctypes,
        alpha_buf.ctypes,
        a[a_offset:].ctypes,
        lda_buf.ctypes,
        b[b_offset:].ctypes,
        ldb_buf.ctypes,
        beta_buf.ctypes,
        c[c_offset:].ctypes,
        ldc_buf.ctypes,
    )
