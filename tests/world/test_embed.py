"""Embedders: the offline WordLlama default, the local Ollama client, the registry."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from signet_bench.errors import UserError
from signet_bench.world.embed import (
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    OllamaEmbedder,
    WordLlamaEmbedder,
    available_embedders,
    get_embedder,
    l2_normalize,
    register_embedder,
)

# --- WordLlama ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def test_wordllama_loads_offline_from_the_package(wordllama):
    import os

    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert isinstance(wordllama, Embedder)
    assert (wordllama.name, wordllama.dim) == ("wordllama-l2-256", 256)


def test_wordllama_shape_dtype_unit_norm_and_empty_rows(wordllama):
    v = wordllama.embed(["the database migration failed", "", "   ", "dark mode in the terminal"])
    assert v.shape == (4, 256) and v.dtype == np.float32
    norms = np.linalg.norm(v, axis=1)
    assert np.allclose(norms[[0, 3]], 1.0, atol=1e-5)
    assert np.all(v[[1, 2]] == 0.0)
    assert wordllama.embed([]).shape == (0, 256)


def test_wordllama_similar_sentences_are_closer(wordllama):
    a, b, c = wordllama.embed(
        [
            "The Postgres database migration failed with a lock timeout",
            "A database schema migration on Postgres timed out waiting for a lock",
            "My cat likes to sleep in the sun on the balcony",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.1


def test_wordllama_is_deterministic(wordllama):
    texts = ["prefer tabs over spaces", "deploy on fridays is forbidden"]
    assert np.array_equal(wordllama.embed(texts), wordllama.embed(texts))


def test_l2_normalize_keeps_zero_rows():
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


# --- Ollama -------------------------------------------------------------------------------------


class FakeOllama(BaseHTTPRequestHandler):
    """Speaks Ollama's POST /api/embed: {"model", "input": [...]} -> {"model", "embeddings"}."""

    known_models = frozenset({"nomic-embed-text"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})
        if self.path != "/api/embed":
            return self._reply(404, {"error": "not found"})
        if body["model"] not in self.known_models:
            msg = f'model "{body["model"]}" not found, try pulling it first'
            return self._reply(404, {"error": msg})
        dim = self.server.dim
        rows = []
        for text in body["input"]:
            rng = np.random.default_rng(sum(text.encode()))
            rows.append((rng.normal(size=dim) * 3.0).tolist())  # deliberately not unit length
        self._reply(200, {"model": body["model"], "embeddings": rows})

    def _reply(self, code: int, doc: dict) -> None:
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def ollama_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOllama)
    server.requests = []
    server.dim = 768
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def host_of(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_ollama_happy_path(ollama_server):
    emb = OllamaEmbedder(host=host_of(ollama_server), batch_size=2)
    assert isinstance(emb, Embedder)
    assert (emb.name, emb.dim) == ("ollama-nomic-embed-text", 768)
    texts = ["alpha", "", "beta", "gamma", None]
    v = emb.embed(texts)
    assert v.shape == (5, 768) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[[0, 2, 3]], axis=1), 1.0, atol=1e-5)
    assert np.all(v[[1, 4]] == 0.0)
    reqs = ollama_server.requests
    assert [r["input"] for r in reqs] == [["alpha", "beta"], ["gamma"]]  # empties never sent
    assert all(r["path"] == "/api/embed" and r["model"] == "nomic-embed-text" for r in reqs)
    expected = np.random.default_rng(sum(b"beta")).normal(size=768)
    assert np.allclose(v[2], expected / np.linalg.norm(expected), atol=1e-6)


def test_ollama_only_empty_texts_needs_no_server():
    emb = OllamaEmbedder(host="http://127.0.0.1:9")
    assert np.all(emb.embed(["", " "]) == 0.0)


def test_ollama_unreachable_port_is_a_clear_error():
    # A bound socket that does not listen: connecting to it is refused, for real.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        emb = OllamaEmbedder(host=f"http://127.0.0.1:{port}")
        with pytest.raises(EmbedderUnavailable) as exc:
            emb.embed(["hello"])
    msg = str(exc.value)
    assert f"no Ollama server at http://127.0.0.1:{port}" in msg
    assert "ollama serve" in msg and "ollama pull nomic-embed-text" in msg
    assert "offline embedder" in msg
    assert isinstance(exc.value, UserError)


def test_ollama_missing_model(ollama_server):
    emb = OllamaEmbedder(model="mxbai-embed-large", host=host_of(ollama_server), dim=1024)
    with pytest.raises(EmbedderUnavailable, match="ollama pull mxbai-embed-large"):
        emb.embed(["hello"])


def test_ollama_wrong_dim(ollama_server):
    ollama_server.dim = 384
    emb = OllamaEmbedder(host=host_of(ollama_server))
    with pytest.raises(EmbedderError, match="length 384, expected 768"):
        emb.embed(["hello"])


def test_ollama_refuses_remote_hosts():
    for host in ("http://10.0.0.5:11434", "https://localhost:11434", "http://example.com"):
        with pytest.raises(EmbedderError, match="only a local server"):
            OllamaEmbedder(host=host)


# --- registry -----------------------------------------------------------------------------------


def test_registry_builtins_and_unknown_name():
    assert {"wordllama", "ollama"} <= set(available_embedders())
    assert isinstance(get_embedder("wordllama"), WordLlamaEmbedder)
    with pytest.raises(
        UserError, match="unknown embedder 'bert'; choose one of: .*ollama.*wordllama"
    ):
        get_embedder("bert")


def test_get_embedder_passes_options(ollama_server):
    emb = get_embedder("ollama", host=host_of(ollama_server))
    assert emb.embed(["x"]).shape == (1, 768)


class Constant:
    name = "constant-2"
    dim = 2

    def embed(self, texts):
        return l2_normalize(np.ones((len(texts), 2)))


def test_register_embedder():
    register_embedder("test-constant", Constant)
    register_embedder("test-constant", Constant)  # same factory again is fine
    assert "test-constant" in available_embedders()
    assert get_embedder("test-constant").embed(["a"]).shape == (1, 2)
    with pytest.raises(ValueError, match="already registered"):
        register_embedder("test-constant", lambda: Constant())
    register_embedder("test-constant", lambda: Constant(), replace=True)
