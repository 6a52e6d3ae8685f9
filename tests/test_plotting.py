"""Figures: the mesh-field renderer colours one polygon per face and validates its inputs."""

import matplotlib
import numpy as np
import pytest

from pymc_sle.plotting import plot_mesh_field

matplotlib.use("Agg")
import matplotlib.pyplot as plt

trimesh = pytest.importorskip("trimesh")


@pytest.fixture
def sphere():
    mesh = trimesh.creation.icosphere(2)
    return np.asarray(mesh.vertices), np.asarray(mesh.faces)


def test_plot_mesh_field_colours_every_face(sphere):
    vertices, faces = sphere
    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    values = vertices[:, 2]
    assert plot_mesh_field(ax, vertices, faces, values, limits=(-1.0, 1.0)) is ax
    (collection,) = ax.collections
    colours = collection.get_facecolor()
    assert colours.shape == (faces.shape[0], 4)
    # A face at the top (z ~ 1) and one at the bottom get the ends of the colour map.
    top, bottom = np.argmax(values[faces].mean(1)), np.argmin(values[faces].mean(1))
    assert not np.allclose(colours[top], colours[bottom])
    assert len(fig.axes) == 2  # the colour bar
    plt.close(fig)


@pytest.mark.parametrize(
    ("vertices_shape", "values_shape", "message"),
    [((10, 2), (10,), r"`vertices` must have shape \(V, 3\)"),
     ((10, 3), (9,), r"`values` must have one entry per vertex \(10\)")],
)  # fmt: skip
def test_plot_mesh_field_validates(vertices_shape, values_shape, message):
    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    with pytest.raises(ValueError, match=message):
        plot_mesh_field(ax, np.zeros(vertices_shape), np.zeros((1, 3), int), np.zeros(values_shape))
    plt.close(fig)
