"""``Dockerfile.build`` from the image recipe that ``hack/build-images`` also builds from
(``hack/cluster/localcluster/recipe.py``), so the engine-less images and the Dockerfile cannot drift."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

RECIPE = Path("hack/cluster/localcluster/recipe.py")


def generate(root: Path) -> dict[Path, bytes]:
    spec = importlib.util.spec_from_file_location("kubevirt_image_recipe", root / RECIPE)
    assert spec is not None
    assert spec.loader is not None
    recipe = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = recipe  # dataclasses look their module up while the class is made
    spec.loader.exec_module(recipe)
    return {Path("Dockerfile.build"): recipe.dockerfile().encode()}
