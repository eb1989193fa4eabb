"""Settings of the edge."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.mcp_edge.domain import LayerName
from hindsight.runtime.settings import SettingsError, env


@dataclass(frozen=True)
class EdgeSettings:
    """Where the layers are, how long recall may take, and where MCP listens."""

    working_addr: str = env(
        "HINDSIGHT_WORKING_ADDR", "127.0.0.1:50052", "Working memory service (host:port)."
    )
    episodic_addr: str = env("HINDSIGHT_EPISODIC_ADDR", "127.0.0.1:50053", "Episodic memory service.")
    semantic_addr: str = env("HINDSIGHT_SEMANTIC_ADDR", "127.0.0.1:50054", "Semantic memory service.")
    reflect_addr: str = env("HINDSIGHT_REFLECT_ADDR", "127.0.0.1:50055", "Reflect service.")
    internal_token: str = env("HINDSIGHT_INTERNAL_TOKEN", "", "Token the edge presents to the layers.")
    recall_timeout: float = env(
        "HINDSIGHT_RECALL_TIMEOUT", 2.0, "One deadline, in seconds, for every layer a recall asks."
    )
    write_timeout: float = env("HINDSIGHT_WRITE_TIMEOUT", 30.0, "Deadline, in seconds, of each layer write.")
    candidates_per_layer: int = env(
        "HINDSIGHT_CANDIDATES_PER_LAYER", 30, "How many candidates each layer contributes before fusion."
    )
    inference_addr: str = env(
        "HINDSIGHT_INFERENCE_ADDR",
        "",
        "Inference service (host:port) that reranks recall; empty: no reranking.",
    )
    rerank_head: int = env(
        "HINDSIGHT_RERANK_HEAD", 0, "How many of the best fused candidates the reranker reorders; 0: none."
    )
    rerank_blend: float = env(
        "HINDSIGHT_RERANK_BLEND",
        0.5,
        "1: the head takes the reranker's order; below 1 its rank is blended with the fused rank.",
    )
    reranker: str = env(
        "HINDSIGHT_EDGE_RERANKER", "", "Reranker the edge asks the inference service for; empty: its default."
    )
    rrf_k: int = env(
        "HINDSIGHT_RRF_K", 60, "The k of reciprocal rank fusion: larger flattens rank differences."
    )
    fusion: str = env(
        "HINDSIGHT_FUSION",
        "score",
        "How layer lists are fused: 'score' (weighted normalised scores + session support) or 'rrf'.",
    )
    fusion_weights: str = env(
        "HINDSIGHT_FUSION_WEIGHTS",
        "working=0,episodic=1,semantic=1,reflect=1",
        "Weight of each layer in score fusion, as layer=weight pairs (a layer left out weighs 1); working "
        "memory's turns are also in episodic memory, ranked better there (docs/retrieval.md).",
    )
    session_boost: float = env(
        "HINDSIGHT_SESSION_BOOST",
        0.3,
        "Score fusion: share of the session's best three scores added to each of its turns (0: off).",
    )
    mcp_host: str = env("HINDSIGHT_MCP_HOST", "127.0.0.1", "Address MCP streamable HTTP binds.")
    mcp_port: int = env("HINDSIGHT_MCP_PORT", 8765, "Port of MCP streamable HTTP; 0 disables HTTP.")
    mcp_path: str = env("HINDSIGHT_MCP_PATH", "/mcp", "Path of the MCP endpoint.")
    default_bank: str = env("HINDSIGHT_BANK", "default", "Bank used by MCP tools when a call names none.")

    def __post_init__(self) -> None:
        if self.fusion not in {"score", "rrf"}:
            raise SettingsError("HINDSIGHT_FUSION must be 'score' or 'rrf'")
        if self.session_boost < 0:
            raise SettingsError("HINDSIGHT_SESSION_BOOST must not be negative")
        self.layer_weights()

    def layer_weights(self) -> dict[LayerName, float]:
        """``fusion_weights`` parsed; unknown layer names are refused, so a typo never goes unnoticed."""
        weights = dict.fromkeys(LayerName, 1.0)
        for pair in filter(None, (item.strip() for item in self.fusion_weights.split(","))):
            name, _, value = pair.partition("=")
            try:
                weights[LayerName(name.strip())] = float(value)
            except ValueError:
                raise SettingsError(f"HINDSIGHT_FUSION_WEIGHTS: {pair!r} is not layer=weight") from None
        return weights
