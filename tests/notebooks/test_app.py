"""Serving the notebooks: arguments with the demo as default, and a safe `marimo run`."""

from __future__ import annotations

import pytest

from signet_bench.app.launch import is_loopback, notebook_args, run_command
from signet_bench.errors import UserError


def test_notebook_args_default_to_the_store_s_workbench(demo):
    args = notebook_args({"db": str(demo.store), "labeler": "ana"})
    assert args.db == demo.store and args.workbench == demo.workbench
    assert args.bench_dir == demo.bench_dir and args.labeler == "ana"


def test_notebook_args_name_a_missing_store(tmp_path, monkeypatch):
    with pytest.raises(UserError, match="no such store"):
        notebook_args({"db": str(tmp_path / "none.db")})
    monkeypatch.setenv("SIGNET_BENCH_DEMO_DIR", str(tmp_path))
    with pytest.raises(UserError, match="signet-bench demo"):
        notebook_args({})


def test_run_command_binds_loopback_and_passes_the_store(demo):
    cmd = run_command("dashboard", demo.store, workbench=demo.workbench)
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--") + 1 :] == [
        "--db",
        str(demo.store),
        "--workbench",
        str(demo.workbench),
    ]
    assert "--token" not in cmd


def test_other_addresses_need_a_password(demo, tmp_path):
    with pytest.raises(UserError, match="token-password-file"):
        run_command("dashboard", demo.store, host="0.0.0.0")
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    cmd = run_command("all", demo.store, host="0.0.0.0", token_password_file=secret)
    assert cmd[cmd.index("--token-password-file") + 1] == str(secret) and "--token" in cmd
    assert is_loopback("localhost") and is_loopback("::1") and not is_loopback("10.0.0.2")
