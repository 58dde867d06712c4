"""The base ranker trained on a Dask cluster: LightGBM lambdarank (`lightgbm.dask`) over the
same pair exports as `pairs.train_base`, so no machine ever holds all pairs.

**Reading.** `pair_partitions` is one Dask partition per pair file, read on the worker that
trains on it (`dask.dataframe.from_map`; `read_parquet` may cut a file at row groups or fuse
small files into one partition, and a lambdarank group must not straddle two partitions nor two
files share one, since session numbers are local to a file). A session is one group: the runs
of equal `session` in a file that `write_pairs` wrote contiguous (`session_sizes`); a file whose
sessions are not contiguous, or that lacks a pair column, is refused by name. Paths must be
readable by every worker under the same name (a shared filesystem, or a URL pyarrow opens).

**Labels.** Lambdarank ranks by integer grades: a pair's label in [-0.3, 1] (the combined label
of docs/specification.md §6.3; a negative label, a superseded memory's, is grade 0) becomes
`round(10·clip(label, 0, 1))`, with linear gains (`label_gain = 0..10`) so a grade weighs what its label says.

**What comes out.** A gradient-boosted ranker over [similarity, features, signals] (`INPUT_COLUMNS`) has
no form in the linear base nor in the cross-attention scorer, so it is kept as what it is:
`ranker.txt` (LightGBM's model), `ranker.onnx` (the trees as `ai.onnx.ml` TreeEnsembleRegressor,
scored by onnxruntime with the LightGBM model's scores, `ranker_onnx`) and `ranker.json` (what it
was trained on). The scorer does not load it: it is a training and evaluation path for pooled
data larger than one machine, which the shipped base can be chosen from.

Needs the `distributed` extra (`pip install 'signet-bench[distributed]'`); without it every
entry point raises a `UserError` saying so.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
import pyarrow.parquet as pq
from onnx import TensorProto, helper

from signet_bench.errors import UserError
from signet_bench.learn.pairs import INPUT_COLUMNS, PAIR_COLUMNS

try:  # the `distributed` extra
    import dask.dataframe as dd
    import lightgbm
    import pandas as pd
    from distributed import Client, LocalCluster
except ModuleNotFoundError as exc:  # pragma: no cover - exercised with the extra hidden
    _MISSING: ModuleNotFoundError | None = exc
else:
    _MISSING = None

__all__ = [
    "GRADES",
    "DaskRanker",
    "DaskTraining",
    "pair_partitions",
    "ranker_onnx",
    "relevance_grades",
    "require_extra",
    "save_ranker",
    "session_sizes",
    "train_dask_ranker",
]

GRADES = 10  # a label's grade: round(GRADES · clip(label, 0, 1))
FILE_COLUMN = "pair_file"  # the file's index in the training list, added on reading
ONNX_ML_OPSET = 3


def require_extra() -> None:
    """Raise a `UserError` naming the missing module when the extra is not installed."""
    if _MISSING is not None:
        raise UserError(
            f"the dask engine needs the `distributed` extra (no module {_MISSING.name!r}): "
            "pip install 'signet-bench[distributed]'"
        )


@dataclass(frozen=True, slots=True)
class DaskTraining:
    """Where and how the ranker trains: `scheduler` a Dask scheduler's address
    (`tcp://host:8786`) or "local" for a `LocalCluster` of `local_workers` in-process workers."""

    scheduler: str = "local"
    local_workers: int = 2
    n_estimators: int = 100
    num_leaves: int = 15
    learning_rate: float = 0.1
    min_child_samples: int = 20
    seed: int = 0


@dataclass(frozen=True, slots=True)
class DaskRanker:
    """The trained booster and what it was trained on."""

    booster: lightgbm.Booster
    files: int
    rows: int
    sessions: int
    training: DaskTraining

    def predict(self, inputs: np.ndarray) -> np.ndarray:
        """Scores of rows of `INPUT_COLUMNS` (higher ranks first)."""
        return np.asarray(self.booster.predict(inputs), dtype=np.float64)


def relevance_grades(label: np.ndarray) -> np.ndarray:
    """Integer grades 0..GRADES of pair labels (see the module docstring)."""
    return np.rint(GRADES * np.clip(label, 0.0, 1.0)).astype(np.int32)


def session_sizes(frame: pd.DataFrame) -> pd.Series:
    """The rows of each session of a partition, in order: runs of equal (file, session)."""
    keys = frame[[FILE_COLUMN, "session"]].to_numpy()
    if len(keys) == 0:
        return pd.Series([], dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]).any(axis=1)])
    return pd.Series(np.diff(np.r_[starts, len(keys)]), dtype=np.int64)


def _read_pair_file(item: tuple[int, str]) -> pd.DataFrame:
    """One pair file as a partition (run on a worker): checked, labels graded, file index added."""
    index, path = item
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise UserError(
            f"{path}: no such file (on this worker: every worker must see it)"
        ) from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not readable as Parquet ({exc})") from None
    missing = set(PAIR_COLUMNS) - set(table.column_names)
    if missing:
        raise UserError(f"{path}: not a pair export (no column {', '.join(sorted(missing))})")
    frame = table.select(list(PAIR_COLUMNS)).to_pandas()
    bad = np.flatnonzero(~np.isfinite(frame[["label", *INPUT_COLUMNS]].to_numpy(np.float64)))
    if len(bad):
        row, col = divmod(int(bad[0]), len(INPUT_COLUMNS) + 1)
        raise UserError(f"{path}: row {row}: {['label', *INPUT_COLUMNS][col]} is not finite")
    runs = int((frame["session"].to_numpy()[1:] != frame["session"].to_numpy()[:-1]).sum()) + 1
    if len(frame) and runs != frame["session"].nunique():
        raise UserError(f"{path}: sessions are not contiguous (write pairs with write_pairs)")
    frame["grade"] = relevance_grades(frame["label"].to_numpy(np.float64))
    frame[FILE_COLUMN] = np.int32(index)
    return frame


def pair_partitions(paths: Sequence[str | Path]) -> dd.DataFrame:
    """The pair files as a Dask DataFrame, one partition per file (read lazily, by the workers)."""
    require_extra()
    if not paths:
        raise UserError("no pair files to train the ranker on")
    meta = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in PAIR_COLUMNS})
    meta = meta.astype(
        {"session": np.int64, "candidate_count": np.int32, "baseline_rank": np.int32}
    )
    meta["grade"] = pd.Series(dtype=np.int32)
    meta[FILE_COLUMN] = pd.Series(dtype=np.int32)
    items = [(i, str(p)) for i, p in enumerate(paths)]
    return dd.from_map(_read_pair_file, items, meta=meta, enforce_metadata=False)


def _client(training: DaskTraining) -> tuple[Client, LocalCluster | None]:
    """A client of the named scheduler, or of a fresh in-process LocalCluster for "local"."""
    if training.scheduler != "local":
        try:
            return Client(training.scheduler, timeout="30s"), None
        except (OSError, TimeoutError) as exc:
            raise UserError(
                f"--scheduler {training.scheduler}: no Dask scheduler ({exc})"
            ) from None
    cluster = LocalCluster(
        n_workers=training.local_workers,
        threads_per_worker=1,
        processes=False,
        dashboard_address=":0",
    )
    return Client(cluster), cluster


def _ranker_params(training: DaskTraining) -> dict:
    """LightGBM's parameters: lambdarank on the grades, with linear gains."""
    return {
        "objective": "lambdarank",
        "label_gain": list(range(GRADES + 1)),
        "n_estimators": training.n_estimators,
        "num_leaves": training.num_leaves,
        "learning_rate": training.learning_rate,
        "min_child_samples": training.min_child_samples,
        "random_state": training.seed,
        "deterministic": True,
        "verbose": -1,
    }


def _fit(client: Client, frame: dd.DataFrame, training: DaskTraining) -> DaskRanker:
    """Read the files onto the workers (each keeps what it read), then train there. A bad file
    raises while reading: `lightgbm.dask` would hide the worker's error behind its own."""
    frame = client.persist(frame)
    groups = frame.map_partitions(session_sizes, meta=pd.Series(dtype=np.int64))
    rows, sessions = client.compute([frame.shape[0], groups.size], sync=True)
    ranker = lightgbm.DaskLGBMRanker(client=client, **_ranker_params(training))
    with warnings.catch_warnings():  # the sklearn default n_jobs, which Dask sets itself
        warnings.filterwarnings("ignore", "Parameter n_jobs will be ignored")
        ranker.fit(frame[list(INPUT_COLUMNS)], frame["grade"], group=groups)
    return DaskRanker(ranker.booster_, frame.npartitions, int(rows), int(sessions), training)


def train_dask_ranker(paths: Sequence[str | Path], training: DaskTraining) -> DaskRanker:
    """Train the lambdarank ranker on the pair files across the cluster's workers."""
    frame = pair_partitions(paths)
    client, cluster = _client(training)
    try:
        return _fit(client, frame, training)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _tree_nodes(tree: dict, tree_id: int, out: dict[str, list]) -> None:
    """Append one LightGBM tree (`dump_model` form) as TreeEnsembleRegressor node attributes."""
    stack, ids = [tree["tree_structure"]], {}
    nodes: list[dict] = []
    while stack:  # number the nodes depth first
        node = stack.pop()
        ids[id(node)] = len(nodes)
        nodes.append(node)
        if "split_index" in node:
            stack += [node["right_child"], node["left_child"]]
    for nid, node in enumerate(nodes):
        out["nodes_treeids"].append(tree_id)
        out["nodes_nodeids"].append(nid)
        if "split_index" not in node:
            out["nodes_modes"].append("LEAF")
            out["nodes_featureids"].append(0)
            out["nodes_values"].append(0.0)
            out["nodes_truenodeids"].append(0)
            out["nodes_falsenodeids"].append(0)
            out["nodes_missing_value_tracks_true"].append(0)
            out["target_treeids"].append(tree_id)
            out["target_nodeids"].append(nid)
            out["target_ids"].append(0)
            out["target_weights"].append(float(node["leaf_value"]))
            continue
        if node["decision_type"] != "<=":
            raise UserError(f"tree {tree_id}: a {node['decision_type']} split has no ONNX form")
        out["nodes_modes"].append("BRANCH_LEQ")
        out["nodes_featureids"].append(int(node["split_feature"]))
        out["nodes_values"].append(float(node["threshold"]))
        out["nodes_truenodeids"].append(ids[id(node["left_child"])])
        out["nodes_falsenodeids"].append(ids[id(node["right_child"])])
        nan_left = node["missing_type"] == "NaN" and node["default_left"]
        out["nodes_missing_value_tracks_true"].append(int(nan_left))


def ranker_onnx(booster: lightgbm.Booster) -> onnx.ModelProto:
    """The booster's trees as one ONNX TreeEnsembleRegressor: `inputs` (n, len(INPUT_COLUMNS)) double in
    `INPUT_COLUMNS` order -> `scores` (n, 1) float, the sum of the trees' leaves (LightGBM's raw
    score; thresholds and leaves as doubles, so the comparisons are LightGBM's own). Inputs must
    be finite, as the pair files' are: LightGBM's NaN rules are not carried over."""
    dump = booster.dump_model()
    keys = [
        "nodes_treeids",
        "nodes_nodeids",
        "nodes_modes",
        "nodes_featureids",
        "nodes_values",
        "nodes_truenodeids",
        "nodes_falsenodeids",
        "nodes_missing_value_tracks_true",
        "target_treeids",
        "target_nodeids",
        "target_ids",
        "target_weights",
    ]
    attrs: dict[str, list] = {k: [] for k in keys}
    for tree_id, tree in enumerate(dump["tree_info"]):
        _tree_nodes(tree, tree_id, attrs)
    as_tensor = {
        "nodes_values_as_tensor": np.asarray(attrs.pop("nodes_values"), dtype=np.float64),
        "target_weights_as_tensor": np.asarray(attrs.pop("target_weights"), dtype=np.float64),
        "base_values_as_tensor": np.zeros(1, dtype=np.float64),
    }
    node = helper.make_node(
        "TreeEnsembleRegressor",
        ["inputs"],
        ["scores"],
        domain="ai.onnx.ml",
        n_targets=1,
        aggregate_function="SUM",
        post_transform="NONE",
        **attrs,
        **{k: onnx.numpy_helper.from_array(v, k) for k, v in as_tensor.items()},
    )
    graph = helper.make_graph(
        [node],
        "signet_bench_pair_ranker",
        [helper.make_tensor_value_info("inputs", TensorProto.DOUBLE, ["n", len(INPUT_COLUMNS)])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", 1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", ONNX_ML_OPSET)], ir_version=8
    )
    helper.set_model_props(model, {"inputs": ",".join(INPUT_COLUMNS)})
    onnx.checker.check_model(model)
    return model


def save_ranker(ranker: DaskRanker, out_dir: str | Path) -> dict[str, Path]:
    """`ranker.txt`, `ranker.onnx` and `ranker.json` under `out_dir`; their paths by kind."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {k: out / f"ranker.{k}" for k in ("txt", "onnx", "json")}
    ranker.booster.save_model(str(paths["txt"]))
    paths["onnx"].write_bytes(ranker_onnx(ranker.booster).SerializeToString())
    meta = {
        "objective": "lambdarank",
        "inputs": list(INPUT_COLUMNS),
        "grades": GRADES,
        "files": ranker.files,
        "rows": ranker.rows,
        "sessions": ranker.sessions,
        "training": asdict(ranker.training),
    }
    paths["json"].write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return paths
