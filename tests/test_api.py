import importlib

import pytest

import pymc_sle

MODULES = [
    "pymc_sle",
    "pymc_sle.bump",
    "pymc_sle.cov",
    "pymc_sle.distance_matrix",
    "pymc_sle.priors",
    "pymc_sle.metrics",
    "pymc_sle.datasets",
    "pymc_sle.plotting",
    "pymc_sle.demo",
    "pymc_sle.cli",
    "pymc_sle.distances",
    "pymc_sle.baselines",
    "pymc_sle.spectral",
    "pymc_sle.inference",
    "pymc_sle.diagnostics",
]


@pytest.mark.parametrize("module_name", MODULES)
def test_every_exported_name_resolves(module_name):
    module = importlib.import_module(module_name)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{module_name}.{name}"


def test_version():
    assert pymc_sle.__version__.count(".") == 2
