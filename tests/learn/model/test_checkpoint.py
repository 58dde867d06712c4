"""Checkpoints: the own zip format, Signet's SGPT v1, format detection, the model slot."""

from __future__ import annotations

import errno
import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.errors import UserError
from signet_bench.learn.model import checkpoint as ck
from signet_bench.learn.model.checkpoint import (
    CheckpointError,
    CheckpointMeta,
    ModelSlot,
    load_any,
    load_checkpoint,
    read_sgpt,
    save_checkpoint,
    write_sgpt,
)
from signet_bench.learn.model.params import (
    COSINE_WEIGHT_INIT,
    SIGNET_PARAMS,
    init_params,
    neutral_extensions,
    param_shapes,
    signet_init_params,
)
from signet_scorer.contract import N_SIGNALS

SMALL = DEFAULT_CONFIG.replace(internal_dim=8, value_dim=4, hash_buckets=64, project_slots=4)
NATIVE = 16


def small_params(seed: int = 0) -> dict[str, np.ndarray]:
    """Signet-compatible weights (our terms neutral), so they can be written as SGPT too."""
    return signet_init_params(SMALL, NATIVE, seed=seed)


def small_meta(**fields) -> CheckpointMeta:
    return CheckpointMeta.from_config(SMALL, NATIVE, **fields)


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for name, value in a.items():
        assert value.dtype == np.float64
        assert np.array_equal(value, b[name]), name


def signet_bytes(params: dict[str, np.ndarray], flags: int, dims: dict[str, int]) -> bytes:
    """An SGPT v1 file laid out by hand from the reference, independent of write_sgpt."""
    config = json.dumps(dims, separators=(",", ":")).encode()
    out = b"SGPT" + struct.pack("<III", 1, flags, len(config)) + config + struct.pack("<I", 7)
    for name in SIGNET_PARAMS:
        flat = params[name].ravel(order="C")
        out += struct.pack("<I", flat.size) + struct.pack(f"<{flat.size}d", *flat)
    return out


# --- own format ---------------------------------------------------------------------------------


def test_own_format_round_trip_is_exact(tmp_path):
    params = small_params()
    params["ln_text_gamma"] = params["ln_text_gamma"] * 1.5  # learned affines are kept
    meta = small_meta(
        feature_spec_hash="e4b0ef969e11d3d2",
        first_session_at="2026-01-02T03:04:05Z",
        last_session_at="2026-03-04T05:06:07Z",
        metrics={"ndcg@10": 0.7134512345678912, "loss": 0.1},
        is_pretrained_base=True,
        is_finetuned=True,
    )
    path = tmp_path / "model.sbm"
    save_checkpoint(path, params, meta)
    loaded, loaded_meta = load_checkpoint(path)
    assert_same(loaded, params)
    assert loaded_meta == meta
    assert loaded_meta.config().internal_dim == 8
    assert zipfile.is_zipfile(path)
    assert sorted(os.listdir(tmp_path)) == ["model.sbm"]  # no temp file left behind


def test_own_format_without_layer_norm_params_loads_identity(tmp_path):
    params = {n: a for n, a in small_params().items() if n in SIGNET_PARAMS}
    path = tmp_path / "m.sbm"
    save_checkpoint(path, params, small_meta())
    loaded, _ = load_checkpoint(path)
    assert list(loaded) == list(param_shapes(SMALL, NATIVE))
    assert np.all(loaded["ln_embedded_gamma"] == 1.0) and np.all(loaded["ln_text_beta"] == 0.0)


def test_fresh_model_round_trips_with_its_cosine_weight(tmp_path):
    params = init_params(SMALL, NATIVE)
    assert params["cosine_weight"].tolist() == [COSINE_WEIGHT_INIT]
    path = tmp_path / "m.sbm"
    save_checkpoint(path, params, small_meta())
    loaded, meta = load_checkpoint(path)
    assert_same(loaded, params)
    assert meta.format_version == ck.FORMAT_VERSION == 2


def test_version_1_file_without_the_cosine_weight_reads_it_as_zero(tmp_path):
    """A checkpoint written before the cosine term existed keeps its forward pass."""
    path = tmp_path / "old.sbm"
    write_zip(path, own_members(drop="cosine_weight"))
    loaded, meta = load_checkpoint(path)
    assert meta.format_version == 1
    assert loaded["cosine_weight"].tolist() == [0.0]
    assert list(loaded) == list(param_shapes(SMALL, NATIVE))


def test_save_refuses_wrong_shapes_and_non_finite(tmp_path):
    params = small_params()
    params["q_proj"] = np.zeros((3, 3))
    with pytest.raises(CheckpointError, match=r"'q_proj' has shape \(3, 3\), expected \(8, 8\)"):
        save_checkpoint(tmp_path / "m.sbm", params, small_meta())
    params = small_params()
    params["k_proj"][0, 0] = np.nan
    with pytest.raises(CheckpointError, match="non-finite .* 'k_proj'"):
        save_checkpoint(tmp_path / "m.sbm", params, small_meta())
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    # A full disk cannot be caused here, so fsync reports it.
    path = tmp_path / "model.sbm"
    save_checkpoint(path, small_params(seed=1), small_meta())
    before = path.read_bytes()

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    import signet_scorer.atomic

    monkeypatch.setattr(signet_scorer.atomic.os, "fsync", no_space)
    with pytest.raises(OSError, match="No space"):
        save_checkpoint(path, small_params(seed=2), small_meta())
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.sbm"]


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        save_checkpoint(tmp_path / "nope" / "m.sbm", small_params(), small_meta())


def test_own_format_truncated(tmp_path):
    path = tmp_path / "m.sbm"
    save_checkpoint(path, small_params(), small_meta())
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(CheckpointError, match=r"m\.sbm: truncated or corrupt"):
        load_checkpoint(path)


def test_own_format_flipped_byte_fails_checksum(tmp_path):
    path = tmp_path / "m.sbm"
    save_checkpoint(path, small_params(), small_meta())
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("hash_embeddings.npy")
    data[info.header_offset + 200] ^= 0xFF  # inside the stored array bytes
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path)


def write_zip(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def own_members(meta_changes: dict | None = None, drop: str | None = None) -> dict[str, bytes]:
    import io

    doc = {"format": ck.FORMAT_NAME, "format_version": 1, "config": small_meta().dims}
    doc.update(meta_changes or {})
    members = {"meta.json": json.dumps(doc).encode()}
    for name, arr in small_params().items():
        if name != drop:
            buf = io.BytesIO()
            np.save(buf, arr)
            members[f"{name}.npy"] = buf.getvalue()
    return members


@pytest.mark.parametrize(
    ("meta_changes", "drop", "message"),
    [
        ({"format_version": 3}, None, "newer signet-bench .format version 3"),
        ({"format": "other"}, None, "not a signet-bench checkpoint"),
        ({"config": {"native_dim": 16}}, None, "config lacks internal_dim"),
        (None, "v_proj", "missing parameter 'v_proj'"),
    ],
)
def test_own_format_bad_contents(tmp_path, meta_changes, drop, message):
    path = tmp_path / "m.sbm"
    write_zip(path, own_members(meta_changes, drop))
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


def test_own_format_rejects_wrong_shape_and_pickled_arrays(tmp_path):
    import io

    members = own_members()
    buf = io.BytesIO()
    np.save(buf, np.zeros((2, 2)))
    members["q_proj.npy"] = buf.getvalue()
    path = tmp_path / "a.sbm"
    write_zip(path, members)
    with pytest.raises(CheckpointError, match="'q_proj' has shape"):
        load_checkpoint(path)

    members = own_members()
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    members["q_proj.npy"] = buf.getvalue()
    write_zip(path, members)
    with pytest.raises(CheckpointError, match="'q_proj' is corrupt"):
        load_checkpoint(path)


def test_missing_meta_and_not_json(tmp_path):
    path = tmp_path / "m.sbm"
    members = own_members()
    del members["meta.json"]
    write_zip(path, members)
    with pytest.raises(CheckpointError, match="no meta.json"):
        load_checkpoint(path)
    members["meta.json"] = b"{not json"
    write_zip(path, members)
    with pytest.raises(CheckpointError, match="meta.json is not valid JSON"):
        load_checkpoint(path)


# --- SGPT v1 ------------------------------------------------------------------------------------


def test_sgpt_round_trip_is_exact(tmp_path):
    params = small_params()
    path = tmp_path / "model.bin"
    write_sgpt(path, params, flags=0)
    loaded, meta = read_sgpt(path)
    assert_same(loaded, params)
    assert meta.source_format == "sgpt" and meta.format_version == 1
    assert meta.dims == small_meta().dims
    assert meta.feature_spec_hash is None
    assert sorted(os.listdir(tmp_path)) == ["model.bin"]


@pytest.mark.parametrize("flags", [0, 1, 2, 3])
def test_sgpt_flags_round_trip(tmp_path, flags):
    path = tmp_path / "model.bin"
    write_sgpt(path, small_params(), flags=flags)
    _, meta = read_sgpt(path)
    assert meta.is_pretrained_base == bool(flags & 1)
    assert meta.is_finetuned == bool(flags & 2)
    assert meta.flags == flags
    assert struct.unpack_from("<I", path.read_bytes(), 8)[0] == flags


def test_sgpt_layout_matches_reference(tmp_path):
    params = small_params()
    path = tmp_path / "model.bin"
    write_sgpt(path, params, flags=2)
    dims = small_meta().dims
    assert list(dims) == [
        "native_dim",
        "internal_dim",
        "value_dim",
        "extra_features",
        "hash_buckets",
        "project_slots",
    ]
    assert path.read_bytes() == signet_bytes(params, 2, dims)


def test_sgpt_written_by_hand_reads_with_identity_layer_norm(tmp_path):
    params = small_params(seed=5)
    path = tmp_path / "model.bin"
    path.write_bytes(signet_bytes(params, 1, small_meta().dims))
    loaded, meta = read_sgpt(path)
    for name in SIGNET_PARAMS:
        assert np.array_equal(loaded[name], params[name])
    assert np.all(loaded["ln_embedded_gamma"] == 1.0) and np.all(loaded["ln_text_beta"] == 0.0)
    assert meta.is_pretrained_base and not meta.is_finetuned


def test_sgpt_reads_older_extra_feature_count(tmp_path):
    # Early Signet builds used 12 extra features; the file's config decides the shapes.
    cfg = SMALL.replace(extra_features=12)
    params = signet_init_params(cfg, NATIVE)
    path = tmp_path / "model.bin"
    path.write_bytes(signet_bytes(params, 0, CheckpointMeta.from_config(cfg, NATIVE).dims))
    loaded, meta = read_sgpt(path)
    assert meta.extra_features == 12
    assert loaded["gate_proj"].shape == (1, 4 + 12 + 8 + 1)


def test_sgpt_default_dims_size(tmp_path):
    params = signet_init_params(DEFAULT_CONFIG, 768)
    path = tmp_path / "model.bin"
    write_sgpt(path, params)
    size = path.stat().st_size
    values = 49152 + 4096 + 4096 + 2048 + 114 + 1048576 + 2048
    config_len = struct.unpack_from("<I", path.read_bytes(), 12)[0]
    assert size == 4 + 4 + 4 + 4 + config_len + 4 + 7 * 4 + 8 * values
    assert abs(size - 8.9e6) < 0.05e6
    loaded, _ = read_sgpt(path)
    assert_same(loaded, params)


def test_sgpt_truncated_in_hash_embeddings_names_the_parameter(tmp_path):
    params = signet_init_params(DEFAULT_CONFIG, 768)
    path = tmp_path / "model.bin"
    write_sgpt(path, params)
    data = path.read_bytes()
    # Keep everything before hash_embeddings' values plus 1200 values and a few stray bytes.
    values_before = sum(params[n].size for n in SIGNET_PARAMS[:5])
    config_len = struct.unpack_from("<I", data, 12)[0]
    start = 16 + config_len + 4 + 6 * 4 + 8 * values_before
    path.write_bytes(data[: start + 8 * 1200 + 3])
    with pytest.raises(CheckpointError) as exc:
        read_sgpt(path)
    assert str(exc.value) == (
        f"{path}: truncated in parameter 'hash_embeddings' "
        "(expected 1048576 values, file ends after 1200)"
    )
    assert isinstance(exc.value, UserError)


def sgpt_with(tmp_path, mutate) -> os.PathLike:
    params = small_params()
    data = bytearray(signet_bytes(params, 0, small_meta().dims))
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(mutate(data)))
    return path


def config_len(data: bytes) -> int:
    return struct.unpack_from("<I", data, 12)[0]


def set_u32(data: bytearray, offset: int, value: int) -> bytearray:
    struct.pack_into("<I", data, offset, value)
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: b"", "empty file"),
        (lambda d: b"SGP", r"not an SGPT checkpoint \(starts with b'SGP'"),
        (lambda d: b"XGPT" + d[4:], r"not an SGPT checkpoint \(starts with b'XGPT'"),
        (lambda d: set_u32(d, 4, 2), "unsupported SGPT version 2"),
        (lambda d: d[:6], "truncated in the version field"),
        (lambda d: d[:20], "truncated in the config JSON"),
        (lambda d: d[:16] + b"x" + d[17:], "config JSON is not valid"),
        (
            lambda d: set_u32(d, 16 + config_len(d), 6),
            "holds 6 parameters, expected 7",
        ),
        (
            lambda d: set_u32(d, 16 + config_len(d) + 4, 100),
            r"parameter 'down_proj' has 100 values, expected 128 \(8x16 for the config\)",
        ),
        (lambda d: d[: 16 + config_len(d) + 2], "truncated in the parameter count"),
        (
            lambda d: d[: 16 + config_len(d) + 4 + 4 + 8 * 128],
            "truncated in the length of parameter 'q_proj'",
        ),
        (lambda d: d + b"\x00" * 5, "5 unexpected bytes after the last parameter"),
    ],
)
def test_sgpt_corrupt_files(tmp_path, mutate, message):
    path = sgpt_with(tmp_path, mutate)
    with pytest.raises(CheckpointError, match=message) as exc:
        read_sgpt(path)
    assert str(exc.value).startswith(f"{path}: ")


def test_sgpt_config_missing_key_and_bad_value(tmp_path):
    for dims, message in [
        ({"native_dim": 16}, "config lacks internal_dim"),
        ({**small_meta().dims, "value_dim": 0}, "positive whole numbers, got value_dim=0"),
    ]:
        path = tmp_path / "model.bin"
        config = json.dumps(dims).encode()
        path.write_bytes(b"SGPT" + struct.pack("<III", 1, 0, len(config)) + config)
        with pytest.raises(CheckpointError, match=message):
            read_sgpt(path)


def test_sgpt_non_finite_values_rejected(tmp_path):
    params = small_params()
    params["gate_proj"][0, 3] = np.inf
    path = tmp_path / "model.bin"
    path.write_bytes(signet_bytes(params, 0, small_meta().dims))
    with pytest.raises(CheckpointError, match="non-finite .* 'gate_proj'"):
        read_sgpt(path)


def test_write_sgpt_refuses_learned_layer_norm(tmp_path):
    params = small_params()
    params["ln_embedded_beta"] = params["ln_embedded_beta"] + 0.5
    with pytest.raises(CheckpointError, match="layer-norm affine parameters are not the identity"):
        write_sgpt(tmp_path / "model.bin", params)
    assert os.listdir(tmp_path) == []


def test_write_sgpt_refuses_a_cosine_weight(tmp_path):
    """A fresh model starts at cosine, which Signet's format cannot hold."""
    with pytest.raises(CheckpointError, match="cosine weight or the signal weights are not"):
        write_sgpt(tmp_path / "model.bin", init_params(SMALL, NATIVE))
    params = small_params()
    params["cosine_weight"] = np.array([0.25])
    with pytest.raises(CheckpointError, match="SGPT has no place for them"):
        write_sgpt(tmp_path / "model.bin", params)
    assert os.listdir(tmp_path) == []


def test_write_sgpt_refuses_a_signal_weight(tmp_path):
    """A lexical (or any signal) weight is a term Signet's forward pass does not have."""
    params = small_params()
    params["signal_weights"] = np.array([0.0, 0.0, 0.5])
    with pytest.raises(CheckpointError, match="signal weights are not zero"):
        write_sgpt(tmp_path / "model.bin", params)
    assert os.listdir(tmp_path) == []


def test_file_without_the_signal_weights_reads_them_as_zero(tmp_path):
    """A checkpoint written before the signals existed keeps its forward pass."""
    path = tmp_path / "old.sbm"
    write_zip(path, own_members(drop="signal_weights"))
    loaded, _ = load_checkpoint(path)
    assert loaded["signal_weights"].tolist() == [0.0] * N_SIGNALS
    assert list(loaded) == list(param_shapes(SMALL, NATIVE))


def test_file_of_fewer_signals_reads_the_new_ones_as_zero(tmp_path):
    """A checkpoint written before the last signals were appended keeps its own weights for
    the first ones and weighs the new ones 0 (its forward pass unchanged)."""
    members = own_members()
    old = members["signal_weights.npy"]
    weights = np.lib.format.read_array(io.BytesIO(old))[: N_SIGNALS - 1] + 0.5
    buf = io.BytesIO()
    np.lib.format.write_array(buf, weights)
    path = tmp_path / "older.sbm"
    write_zip(path, {**members, "signal_weights.npy": buf.getvalue()})
    loaded, _ = load_checkpoint(path)
    assert loaded["signal_weights"].tolist() == [*weights.tolist(), 0.0]


def test_sgpt_import_has_every_term_of_ours_neutral(tmp_path):
    path = tmp_path / "model.bin"
    write_sgpt(path, small_params(seed=4))
    loaded, _ = read_sgpt(path)
    for name, value in neutral_extensions(SMALL).items():
        assert np.array_equal(loaded[name], value), name
    assert loaded["cosine_weight"].tolist() == [0.0]
    assert loaded["signal_weights"].tolist() == [0.0] * N_SIGNALS


def test_write_sgpt_refuses_missing_or_inconsistent_params(tmp_path):
    params = small_params()
    del params["project_embeddings"]
    with pytest.raises(CheckpointError, match="missing parameter 'project_embeddings'"):
        write_sgpt(tmp_path / "model.bin", params)
    params = small_params()
    params["k_proj"] = np.zeros((8, 7))
    with pytest.raises(CheckpointError, match="'k_proj' has shape"):
        write_sgpt(tmp_path / "model.bin", params)
    with pytest.raises(CheckpointError, match="do not fit in a u32"):
        write_sgpt(tmp_path / "model.bin", small_params(), flags=2**32)


def test_missing_file(tmp_path):
    for reader in (read_sgpt, load_checkpoint, load_any):
        with pytest.raises(CheckpointError, match="no such file"):
            reader(tmp_path / "absent.bin")


# --- detection and the model slot -------------------------------------------------------------


def test_load_any_detects_the_format(tmp_path):
    params = small_params()
    save_checkpoint(tmp_path / "own.sbm", params, small_meta(is_finetuned=True))
    write_sgpt(tmp_path / "model.bin", params, flags=1)
    p1, m1 = load_any(tmp_path / "own.sbm")
    p2, m2 = load_any(tmp_path / "model.bin")
    assert m1.source_format == "signet-bench" and m1.is_finetuned
    assert m2.source_format == "sgpt" and m2.is_pretrained_base
    assert_same(p1, p2)
    (tmp_path / "junk").write_bytes(b"hello world")
    with pytest.raises(CheckpointError, match=r"not a model checkpoint \(starts with b'hell'"):
        load_any(tmp_path / "junk")
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty file"):
        load_any(tmp_path / "empty")


def test_sgpt_to_own_format_and_back(tmp_path):
    params = small_params(seed=9)
    write_sgpt(tmp_path / "a.bin", params, flags=3)
    p, meta = read_sgpt(tmp_path / "a.bin")
    save_checkpoint(tmp_path / "b.sbm", p, meta)
    p2, meta2 = load_checkpoint(tmp_path / "b.sbm")
    write_sgpt(tmp_path / "c.bin", p2, meta2.flags)
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "c.bin").read_bytes()


def test_slot_keeps_previous_model_when_load_fails(tmp_path):
    good_a, good_b = tmp_path / "a.bin", tmp_path / "b.sbm"
    write_sgpt(good_a, small_params(seed=1))
    save_checkpoint(good_b, small_params(seed=2), small_meta(metrics={"ndcg@10": 0.5}))
    broken = tmp_path / "broken.bin"
    broken.write_bytes(good_a.read_bytes()[:-100])

    slot = ModelSlot()
    assert slot.current is None and slot.generation == 0
    slot.load(good_a)
    before = slot.current
    assert before is not None and before[1].source_format == "sgpt"

    with pytest.raises(CheckpointError, match="truncated in parameter 'project_embeddings'"):
        slot.load(broken)
    assert slot.current is before
    assert slot.generation == 1

    meta = slot.load(good_b)
    assert meta.metrics == {"ndcg@10": 0.5}
    assert slot.current is not before and slot.generation == 2
    assert_same(slot.current[0], small_params(seed=2))


def test_slot_refuses_a_model_of_another_native_dim(tmp_path):
    slot = ModelSlot(small_params(), small_meta(), native_dim=NATIVE)
    before = slot.current
    other = tmp_path / "other.bin"
    write_sgpt(other, signet_init_params(SMALL, 32))
    with pytest.raises(CheckpointError, match="native_dim 32 does not match the serving dim 16"):
        slot.load(other)
    assert slot.current is before


def test_slot_set_checks_shapes():
    slot = ModelSlot()
    params = small_params()
    params["v_proj"] = np.zeros((1, 1))
    with pytest.raises(CheckpointError, match="'v_proj' has shape"):
        slot.set(params, small_meta())
    assert slot.current is None
