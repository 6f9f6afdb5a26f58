"""``kubevirt_api.core.v1`` loads its topic modules on demand, and still exports every name they define."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from kubevirt_api.core import v1
from kubevirt_api.core.v1._exports import EXPORTS

TOPICS = sorted(set(EXPORTS.values()))


@pytest.mark.parametrize("topic", TOPICS)
def test_every_name_of_a_topic_module_is_the_same_object_from_the_package(topic: str) -> None:
    module = importlib.import_module(f"kubevirt_api.core.v1.{topic}")
    assert module.__all__
    for name in module.__all__:
        assert getattr(v1, name) is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchType"):
        v1.NoSuchType  # noqa: B018
    with pytest.raises(ImportError):
        exec("from kubevirt_api.core.v1 import NoSuchType")


def test_the_vmi_type_does_not_load_the_other_kinds() -> None:
    script = (
        "import sys\n"
        "from kubevirt_api.core.v1 import VirtualMachineInstance\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('kubevirt_api.core.v1.'))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "kubevirt_api.core.v1.vmi" in loaded
    assert not {"kubevirt_api.core.v1.kubevirt", "kubevirt_api.core.v1.vm"} & set(loaded)


def test_dir_lists_the_exported_names() -> None:
    assert set(EXPORTS) <= set(dir(v1))
