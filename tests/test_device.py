import pytest
import torch

from explorer.device import available_devices, describe_devices, pick_device


def test_auto_picks_the_best_available():
    assert pick_device().type == available_devices()[0]
    assert pick_device("auto") == pick_device(None)
    assert available_devices()[-1] == "cpu"


def test_explicit_cpu_and_unavailable_devices():
    assert pick_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="not available"):
            pick_device("cuda")
    with pytest.raises(ValueError, match="unknown device"):
        pick_device("tpu-9000")
    assert describe_devices().startswith("found: ")
