"""Settings of the edge."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.runtime.settings import env


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
    rrf_k: int = env(
        "HINDSIGHT_RRF_K", 60, "The k of reciprocal rank fusion: larger flattens rank differences."
    )
    mcp_host: str = env("HINDSIGHT_MCP_HOST", "127.0.0.1", "Address MCP streamable HTTP binds.")
    mcp_port: int = env("HINDSIGHT_MCP_PORT", 8765, "Port of MCP streamable HTTP; 0 disables HTTP.")
    mcp_path: str = env("HINDSIGHT_MCP_PATH", "/mcp", "Path of the MCP endpoint.")
    default_bank: str = env("HINDSIGHT_BANK", "default", "Bank used by MCP tools when a call names none.")
