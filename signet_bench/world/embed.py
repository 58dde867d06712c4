"""Text embeddings: one interface, an offline default, an optional local Ollama provider.

`wordllama` (the default) loads the 256-d WordLlama L2 model from the weights that ship inside the
installed `wordllama` package; nothing is ever downloaded. `ollama` talks to an Ollama server on
this machine (`/api/embed`). Other modules add providers with `register_embedder`.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from signet_bench.errors import UserError

__all__ = [
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "OllamaEmbedder",
    "WordLlamaEmbedder",
    "available_embedders",
    "get_embedder",
    "l2_normalize",
    "register_embedder",
]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row of unit length (zero rows for empty text)."""
        ...


class EmbedderError(UserError):
    """An embedder that cannot be chosen or that answered with something unusable."""


class EmbedderUnavailable(EmbedderError):
    """The embedding provider cannot be reached or lacks the model."""


def l2_normalize(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as float32; all-zero rows stay zero."""
    m = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    out = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
    return out.astype(np.float32)


def _is_empty(text: str | None) -> bool:
    return text is None or not text.strip()


# --- WordLlama (offline default) ----------------------------------------------------------------


@functools.cache
def _wordllama_model(dim: int) -> Any:
    """The WordLlama L2 model from the installed package's own weights (loaded once)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    # here: only the wordllama embedder loads it (start-up time)
    import wordllama

    package_dir = Path(wordllama.__file__).parent
    try:
        return wordllama.WordLlama.load(
            config="l2_supercat", cache_dir=package_dir, disable_download=True, dim=dim
        )
    except (FileNotFoundError, ValueError) as exc:
        raise EmbedderUnavailable(
            f"WordLlama weights for dim {dim} are not in {package_dir} ({exc}); "
            "reinstall the pinned wordllama wheel"
        ) from None


class WordLlamaEmbedder:
    """WordLlama L2 (256-d) from the wheel's weights: fast, offline, the default."""

    name = "wordllama-l2-256"
    dim = 256

    def __init__(self, batch_size: int = 64) -> None:
        self._batch_size = batch_size
        self._model = _wordllama_model(self.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 256) float32 unit rows; empty text gives a zero row."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        idx = [i for i, t in enumerate(texts) if not _is_empty(t)]
        if idx:
            raw = self._model.embed(
                [texts[i] for i in idx], norm=False, return_np=True, batch_size=self._batch_size
            )
            out[idx] = l2_normalize(np.asarray(raw).reshape(len(idx), self.dim))
        return out


# --- Ollama (optional, local) -------------------------------------------------------------------

_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class OllamaEmbedder:
    """Embeddings from a local Ollama server (`POST /api/embed`); localhost only."""

    def __init__(
        self,
        model: str = "nomic-embed-text",
        host: str = "http://127.0.0.1:11434",
        dim: int = 768,
        *,
        batch_size: int = 32,
        timeout_s: float = 60.0,
    ) -> None:
        url = urllib.parse.urlsplit(host)
        if url.scheme != "http" or url.hostname not in _LOCAL_HOSTS:
            raise EmbedderError(
                f"Ollama host {host!r}: only a local server is used "
                "(http://127.0.0.1:PORT or http://localhost:PORT)"
            )
        self.model = model
        self.host = host.rstrip("/")
        self.dim = int(dim)
        self.name = f"ollama-{model}"
        self._batch_size = batch_size
        self._timeout_s = timeout_s
        # No proxies: an http_proxy in the environment must not route localhost traffic away.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _unavailable(self, why: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"no Ollama server at {self.host} ({why}): start it with `ollama serve` and "
            f"`ollama pull {self.model}`, or use the default offline embedder (wordllama)"
        )

    def _post_embed(self, texts: list[str]) -> list[Any]:
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        req = urllib.request.Request(
            f"{self.host}/api/embed",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with self._opener.open(req, timeout=self._timeout_s) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            detail = _error_text(exc)
            if exc.code == 404:
                raise EmbedderUnavailable(
                    f"Ollama at {self.host} has no model {self.model!r} ({detail}): "
                    f"run `ollama pull {self.model}`, or use the default offline embedder "
                    "(wordllama)"
                ) from None
            raise EmbedderError(
                f"Ollama at {self.host} refused the request (HTTP {exc.code}: {detail})"
            ) from None
        except urllib.error.URLError as exc:
            raise self._unavailable(str(exc.reason)) from None
        except (TimeoutError, ConnectionError) as exc:
            raise self._unavailable(str(exc) or type(exc).__name__) from None
        except http.client.HTTPException as exc:
            raise EmbedderError(f"Ollama at {self.host} sent a broken reply ({exc!r})") from None
        try:
            doc = json.loads(payload)
            rows = doc["embeddings"]
        except (ValueError, KeyError, TypeError):
            raise EmbedderError(
                f"Ollama at {self.host} answered without an 'embeddings' list"
            ) from None
        if not isinstance(rows, list) or len(rows) != len(texts):
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            raise EmbedderError(
                f"Ollama at {self.host} returned {got} embeddings for {len(texts)} texts"
            )
        return rows

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit rows; empty text gives a zero row without a request."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        idx = [i for i, t in enumerate(texts) if not _is_empty(t)]
        for start in range(0, len(idx), self._batch_size):
            chunk = idx[start : start + self._batch_size]
            rows = self._post_embed([texts[i] for i in chunk])
            lengths = {len(r) if isinstance(r, list) else -1 for r in rows}
            if lengths != {self.dim}:
                shown = ", ".join(str(n) for n in sorted(lengths))
                raise EmbedderError(
                    f"Ollama model {self.model!r} returned vectors of length {shown}, "
                    f"expected {self.dim}: pass dim=<its size>"
                )
            try:
                mat = np.asarray(rows, dtype=np.float64)
            except (TypeError, ValueError):
                raise EmbedderError(f"Ollama model {self.model!r} returned non-numbers") from None
            if not np.all(np.isfinite(mat)):
                raise EmbedderError(f"Ollama model {self.model!r} returned NaN or inf")
            out[chunk] = l2_normalize(mat)
        return out


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read()
    except OSError:
        return exc.reason or ""
    try:
        doc = json.loads(raw)
        if isinstance(doc, dict) and isinstance(doc.get("error"), str):
            return doc["error"]
    except ValueError:
        pass
    text = raw.decode("utf-8", "replace").strip()
    return text[:200] or str(exc.reason)


# --- registry -----------------------------------------------------------------------------------

EmbedderFactory = Callable[..., Embedder]

_REGISTRY: dict[str, EmbedderFactory] = {
    "wordllama": WordLlamaEmbedder,
    "ollama": OllamaEmbedder,
}


def register_embedder(name: str, factory: EmbedderFactory, *, replace: bool = False) -> None:
    """Make `get_embedder(name)` call `factory(**options)`; re-registering needs replace=True."""
    if not name or name != name.strip():
        raise ValueError(f"embedder name {name!r} must be non-empty without surrounding spaces")
    if name in _REGISTRY and not replace and _REGISTRY[name] is not factory:
        raise ValueError(f"an embedder named {name!r} is already registered")
    _REGISTRY[name] = factory


def available_embedders() -> list[str]:
    """Registered embedder names, sorted."""
    return sorted(_REGISTRY)


def get_embedder(name: str, **options: Any) -> Embedder:
    """A new embedder by registered name; options go to its factory (e.g. host= for ollama)."""
    factory = _REGISTRY.get(name)
    if factory is None:
        raise EmbedderError(
            f"unknown embedder {name!r}; choose one of: {', '.join(available_embedders())}"
        )
    return factory(**options)
