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


def test_server_torch_threads():
    from explorer.device import server_torch_threads

    assert server_torch_threads(3) == 3
    assert server_torch_threads(None, cores=2) == 2 and server_torch_threads(None, cores=4) == 4
    assert server_torch_threads(None, cores=16) == 8


def test_single_thread_numpy_blas_in_a_fresh_process():
    """numpy's BLAS pool drops to one thread; torch's own thread count is untouched."""
    import json
    import subprocess
    import sys

    code = ("import json, numpy, torch; from threadpoolctl import threadpool_info; "
            "from explorer.device import single_thread_numpy_blas; t = torch.get_num_threads(); "
            "single_thread_numpy_blas(); "
            "print(json.dumps([[i['user_api'] for i in threadpool_info() if i['user_api'] == 'blas' "
            "and i['num_threads'] != 1], t == torch.get_num_threads()]))")
    from tests.hang import SUBPROCESS_S

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=SUBPROCESS_S)  # a hang guard only: a fresh process importing torch
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[], True]
