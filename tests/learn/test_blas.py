import os
import subprocess
import sys

from signet_bench.cli import _trains, build_parser
from signet_bench.learn.blas import blas_env, configure


def test_one_thread_unless_training_or_set_by_the_user():
    assert blas_env(all_cores=False, env={}) == {"OPENBLAS_NUM_THREADS": "1"}
    assert blas_env(all_cores=True, env={}) == {}
    assert blas_env(all_cores=False, env={"OPENBLAS_NUM_THREADS": "2"}) == {}


def test_configure_is_a_no_op_once_numpy_is_loaded():
    import numpy  # noqa: F401

    assert configure(all_cores=False) == {}


def test_configure_sets_the_count_before_numpy_loads():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    code = (
        "import os; from signet_bench.learn.blas import configure; configure(all_cores={}); "
        "import numpy; print(os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))"
    )
    for all_cores, expected in ((False, "1"), (True, "unset")):
        out = subprocess.run(
            [sys.executable, "-c", code.format(all_cores)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == expected


def test_training_commands_get_every_core():
    parse = build_parser().parse_args
    assert _trains(parse(["bench", "train"]))
    assert _trains(parse(["bench", "quality"]))
    assert _trains(parse(["train", "--db", "a.db", "--out", "out"]))
    assert not _trains(parse(["bench", "loop"]))
    assert not _trains(parse(["demo"]))
