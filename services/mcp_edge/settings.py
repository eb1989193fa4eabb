"""Settings of the edge."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.mcp_edge.consensus import ConsensusSettings
from hindsight.mcp_edge.domain import CONTEXT_ORDERS, LayerName
from hindsight.mcp_edge.endpoint import check_mcp_http
from hindsight.mcp_edge.fusion import Adjustments
from hindsight.runtime import timeexpr
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
    token_refresh_seconds: float = env(
        "HINDSIGHT_TOKEN_REFRESH_SECONDS",
        0.25,
        "How often the edge reads what changed in the managed-token registry (a revocation holds within it).",
    )
    token_stale_seconds: float = env(
        "HINDSIGHT_TOKEN_STALE_SECONDS",
        5.0,
        "After this long without an answer from the token registry, managed tokens are refused "
        "(UNAVAILABLE).",
    )
    token_touch_seconds: float = env(
        "HINDSIGHT_TOKEN_TOUCH_SECONDS",
        10.0,
        "How often the last use of managed tokens is written, in one batch.",
    )
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
        "Inference service (host:port) that reranks recall and measures meaning when the semantic layer "
        "gives none (HINDSIGHT_MEANING_TEXTS); empty: neither.",
    )
    meaning_texts: int = env(
        "HINDSIGHT_MEANING_TEXTS",
        40,
        "When the semantic layer gives no cosines (down, late, not asked, bank not indexed yet): how many of "
        "the best fused memories the inference layer embeds so that relevance still reads meaning; 0: none.",
    )
    meaning_model: str = env(
        "HINDSIGHT_SEMANTIC_MODEL",
        "",
        "Embedding model of the semantic layer, which the edge asks for when it measures meaning itself.",
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
    ask_unweighted: bool = env(
        "HINDSIGHT_ASK_UNWEIGHTED",
        False,
        "Score fusion: ask a layer on recall even when its list weighs 0 and nothing else reads it (working "
        "memory at the default weights; episodic memory at weight 0 while the entity channel is off). Off: "
        "such a layer is not asked, unless the recall asks only such layers.",
    )
    session_boost: float = env(
        "HINDSIGHT_SESSION_BOOST",
        0.45,
        "Score fusion: share of the session's best three scores added to each of its turns (0: off; 0.45 "
        "was chosen leave-one-namespace-out on the dev files, docs/retrieval.md).",
    )
    signal_weights: str = env(
        "HINDSIGHT_SIGNAL_WEIGHTS",
        "vector=0.5,keyword=0.5,tags=0.2",
        "Weight of each signal in fusion: vector (semantic layer), keyword (episodic, working and lesson "
        "search) and tags (a record's tags matching the recall's tags or the query's words); each layer's "
        "list weighs its layer weight times its signal weight.",
    )
    entity_weight: float = env(
        "HINDSIGHT_ENTITY_WEIGHT",
        0.6,
        "Score fusion: weight of the entity channel, the keyword hits about an entity the query names "
        "(spoken by it or naming it, from the semantic layer's entity pages); 0: off.",
    )
    entity_pool: int = env(
        "HINDSIGHT_ENTITY_POOL",
        30,
        "Keyword hits the entity channel picks from (episodic memory is asked for this many when it is "
        "more than HINDSIGHT_CANDIDATES_PER_LAYER; its own list keeps that many): 60 finds more, for a few "
        "ms per recall (docs/retrieval.md).",
    )
    recency_half_life_days: float = env(
        "HINDSIGHT_RECENCY_HALF_LIFE_DAYS", 30.0, "Half-life, in days, of the recency factor."
    )
    recency_weight: float = env(
        "HINDSIGHT_RECENCY_WEIGHT",
        0.0,
        "Share of a score that decays with age (0: no recency factor, 1: all of it).",
    )
    importance_weight: float = env(
        "HINDSIGHT_IMPORTANCE_WEIGHT", 0.3, "A score is multiplied by 1 + this x the record's importance."
    )
    confidence_weight: float = env(
        "HINDSIGHT_CONFIDENCE_WEIGHT",
        0.5,
        "A score is multiplied by 1 - this x (1 - confidence): low-confidence lessons and facts weigh less.",
    )
    trust_weight: float = env(
        "HINDSIGHT_TRUST_WEIGHT", 0.2, "A score is multiplied by 1 - this x (1 - trust level; high 1, low 0)."
    )
    query_time: str = env(
        "HINDSIGHT_QUERY_TIME",
        "boost",
        "What a time expression in a query does ('last Tuesday', '上周三'): 'boost' memories in its range, "
        "'filter' to its range, or 'off'. An explicit time range always wins.",
    )
    time_boost: float = env(
        "HINDSIGHT_TIME_BOOST",
        0.5,
        "With query time 'boost': memories in the query's time range gain this share of the best score.",
    )
    time_zone: str = env(
        "HINDSIGHT_TIME_ZONE",
        "UTC",
        "IANA time zone a query's time words are read in (which day 'yesterday' is); a recall's "
        "`time_zone` overrides it.",
    )
    query_rewrites: int = env(
        "HINDSIGHT_QUERY_REWRITES",
        2,
        "Rewrites searched besides the query (without its time words; names and content words alone).",
    )
    rewrite_weight: float = env(
        "HINDSIGHT_REWRITE_WEIGHT", 0.8, "How much a rewrite's hits count against the original query's."
    )
    rewrites_by_meaning: bool = env(
        "HINDSIGHT_REWRITES_BY_MEANING",
        False,
        "Search the rule rewrites by meaning too (the semantic layer), not only by keyword (episodic, "
        "working and reflect's lesson search). A rule rewrite is the query less its time and function "
        "words: close to the query's own vector, so by meaning it mostly finds the same memories again, "
        "at the cost of one more embedding and vector search each. An LLM rewrite is searched everywhere.",
    )
    llm_rewrite: bool = env(
        "HINDSIGHT_LLM_REWRITE",
        True,
        "Ask the configured LLM (LLM_API_BASE) for one more rewrite; off when no LLM is configured.",
    )
    layer_share: float = env(
        "HINDSIGHT_LAYER_SHARE",
        0.8,
        "Share of the recall deadline the layers get; the rest is kept for rerank and assembly.",
    )
    lessons_first: bool = env(
        "HINDSIGHT_LESSONS_FIRST",
        True,
        "Put lessons above the relevance floor ahead of other memories, before the cut to top_k.",
    )
    max_lessons: int = env(
        "HINDSIGHT_MAX_LESSONS", 3, "Most lessons placed first in a recall's answer (0: none placed first)."
    )
    drawn_after_sources: bool = env(
        "HINDSIGHT_DRAWN_AFTER_SOURCES",
        True,
        "A memory drawn from turns that all rank above it (a fact of a turn already in the answer) waits "
        "until the end of the fused list, so that it does not take the place of other evidence in top_k.",
    )
    recall_validity: bool = env(
        "HINDSIGHT_RECALL_VALIDITY",
        True,
        "Recall resolves validity in time: semantic memory's history is searched too, and memories that "
        "stopped holding (superseded, invalidated) rank below those that hold, marked outdated "
        "(docs/retrieval.md). as_of works either way.",
    )
    look_alike_yield: float = env(
        "HINDSIGHT_LOOK_ALIKE_YIELD",
        0.9,
        "For a request about the current state, a question, hypothetical, called-off plan, story about "
        "another time, someone else's value or a memory without the kind of value asked for yields its "
        "place in the head to a later assertion whose relevance is at least this share of its own (0..1; "
        "above 1: off; docs/retrieval.md, Corrections).",
    )
    relevance_floor: float = env(
        "HINDSIGHT_RELEVANCE_FLOOR",
        0.5,
        "Calibrated relevance (0..1) a memory needs to enter a recall's answer; a request with nothing "
        "above it gets nothing (a recall's min_score raises it).",
    )
    relevance_support: float = env(
        "HINDSIGHT_RELEVANCE_SUPPORT",
        0.5,
        "Below the floor: once a memory clears the floor, others down to this relevance stay as its context "
        "(at or above the floor, the default: every memory clears the floor on its own; a recall's "
        "min_score raises it).",
    )
    context_tokens: int = env(
        "HINDSIGHT_CONTEXT_TOKENS", 2000, "Default token budget of the context a recall assembles."
    )
    context_order: str = env(
        "HINDSIGHT_CONTEXT_ORDER",
        "score",
        "Order within each section of the context: score, importance, time_asc, time_desc or mix.",
    )
    record_access: bool = env(
        "HINDSIGHT_RECORD_ACCESS",
        True,
        "Tell episodic memory which records each recall returned (hit counts), off the request path.",
    )
    unverified_weight: float = env(
        "HINDSIGHT_UNVERIFIED_WEIGHT",
        0.5,
        "Score multiplier of a recalled memory from a tool or outside source (or derived only from such "
        "turns) that no trusted memory of the recall corroborates (flag unverified_source; 1: flag only).",
    )
    dissent_weight: float = env(
        "HINDSIGHT_DISSENT_WEIGHT",
        0.3,
        "Score multiplier of a recalled memory that contradicts what the other memories of the recall "
        "agree on (flag contradicts_consensus; 1: flag only).",
    )
    consensus_margin: float = env(
        "HINDSIGHT_CONSENSUS_MARGIN",
        2.0,
        "A memory contradicts the consensus when the others' support (distinct sources and sessions, "
        "weighed by trust) is at least this many times its own.",
    )
    consensus_pool: int = env(
        "HINDSIGHT_CONSENSUS_POOL",
        50,
        "How many of the best fused candidates the recall-time checks compare (and may down-weight).",
    )
    warnings_limit: int = env(
        "HINDSIGHT_WARNINGS_LIMIT",
        3,
        "Most held-back records (quarantined or rejected) a recall returns as warnings for its query "
        "(0: no warnings).",
    )
    admin_token: str = env(
        "HINDSIGHT_ADMIN_TOKEN",
        "",
        "Token that unlocks the debug listing of a bank's memories; empty: the listing is refused.",
    )
    mcp_host: str = env("HINDSIGHT_MCP_HOST", "127.0.0.1", "Address MCP streamable HTTP binds.")
    mcp_port: int = env("HINDSIGHT_MCP_PORT", 8765, "Port of MCP streamable HTTP; 0 disables HTTP.")
    mcp_path: str = env("HINDSIGHT_MCP_PATH", "/mcp", "Path of the MCP endpoint.")
    mcp_public_url: str = env(
        "HINDSIGHT_MCP_PUBLIC_URL",
        "",
        "URL clients reach the MCP endpoint at: the OAuth resource its tokens are for, and a Host and Origin "
        "it accepts; default http://HINDSIGHT_MCP_HOST:HINDSIGHT_MCP_PORT/HINDSIGHT_MCP_PATH (localhost when "
        "binding every interface).",
    )
    mcp_allowed_hosts: tuple[str, ...] = env(
        "HINDSIGHT_MCP_ALLOWED_HOSTS",
        (),
        "More Host header values MCP HTTP accepts, comma-separated (name:port, or name:* for any port); "
        "the public URL's host and the loopback names at the bound port are always accepted (DNS rebinding).",
    )
    mcp_allowed_origins: tuple[str, ...] = env(
        "HINDSIGHT_MCP_ALLOWED_ORIGINS",
        (),
        "More Origin header values MCP HTTP accepts, comma-separated (scheme://name:port); the public URL's "
        "origin and the loopback origins at the bound port are always accepted; a request without Origin "
        "is not a browser page's and passes.",
    )
    mcp_jwks: str = env(
        "HINDSIGHT_MCP_JWKS",
        "",
        "Public keys that sign JWT bearer tokens on MCP HTTP: a JWKS file (re-read when it changes) or an "
        "https URL (fetched with a short timeout, cached, fetched again for an unknown key id; http only on "
        "loopback); empty: only the static tokens.",
    )
    mcp_jwt_issuer: str = env(
        "HINDSIGHT_MCP_JWT_ISSUER",
        "",
        "Issuer a JWT must name (iss), and the authorization server the resource metadata points clients to; "
        "empty: iss is not checked and the metadata names the edge's own origin.",
    )
    mcp_jwt_audience: str = env(
        "HINDSIGHT_MCP_JWT_AUDIENCE",
        "",
        "Audience a JWT must name (aud); empty: the public URL, as the MCP authorization spec asks.",
    )
    mcp_jwt_banks_claim: str = env(
        "HINDSIGHT_MCP_JWT_BANKS_CLAIM",
        "hindsight_banks",
        "JWT claim that lists the banks a token grants ('*': every bank); a JWT without it grants none.",
    )
    mcp_jwt_admin_claim: str = env(
        "HINDSIGHT_MCP_JWT_ADMIN_CLAIM",
        "hindsight_admin",
        "JWT claim that, when true, makes the caller an operator (every bank and the admin-only operations).",
    )
    mcp_scopes: tuple[str, ...] = env(
        "HINDSIGHT_MCP_SCOPES",
        (),
        "OAuth scopes every MCP HTTP token must carry, comma-separated, published in the resource metadata "
        "(a JWT's scope or scp claim; static tokens carry them all); empty: none required.",
    )
    default_bank: str = env("HINDSIGHT_BANK", "default", "Bank used by MCP tools when a call names none.")
    defences: bool = env(
        "HINDSIGHT_DEFENCES",
        True,
        "Master switch of the poisoning defences ('on' or 'off'): off turns off write-time screening, "
        "quarantine, write rate limits, consensus flags, warnings and trust down-weighting "
        "(docs/security.md).",
    )
    secret_policy: str = env(
        "HINDSIGHT_SECRET_POLICY",
        "redact",
        "What a retained turn holding a secret (API key, private key, JWT, bearer token, password, "
        "connection string with a password, card number) gets: 'redact' (stored with the secret replaced), "
        "'refuse' (the retain fails naming the field, nothing stored) or 'quarantine' (held for review).",
    )
    secret_policy_banks: tuple[str, ...] = env(
        "HINDSIGHT_SECRET_POLICY_BANKS",
        (),
        "Per-bank secret policies overriding HINDSIGHT_SECRET_POLICY, comma-separated bank=policy pairs "
        "(e.g. 'payments=refuse,lab=quarantine').",
    )
    instruction_policy: str = env(
        "HINDSIGHT_INSTRUCTION_POLICY",
        "quarantine",
        "What a retained turn holding an instruction aimed at the agent gets: 'quarantine' (held for "
        "review, kept out of recall and reflection) or 'flag' (stored, reported in the retain's answer).",
    )
    write_rate_bank: float = env(
        "HINDSIGHT_WRITE_RATE_BANK",
        2000.0,
        "Turns per second one bank may retain, sustained (a token bucket; 0: no limit).",
    )
    write_burst_bank: int = env(
        "HINDSIGHT_WRITE_BURST_BANK",
        100_000,
        "Turns one bank may retain at once before the sustained rate applies (the bucket's size).",
    )
    write_rate_untrusted: float = env(
        "HINDSIGHT_WRITE_RATE_UNTRUSTED",
        20.0,
        "Turns per second one bank may retain from each untrusted source (tool, external), sustained "
        "(0: no limit).",
    )
    write_burst_untrusted: int = env(
        "HINDSIGHT_WRITE_BURST_UNTRUSTED",
        1000,
        "Turns one bank may retain at once from each untrusted source before its sustained rate applies.",
    )

    def __post_init__(self) -> None:
        if self.fusion not in {"score", "rrf"}:
            raise SettingsError("HINDSIGHT_FUSION must be 'score' or 'rrf'")
        if self.session_boost < 0:
            raise SettingsError("HINDSIGHT_SESSION_BOOST must not be negative")
        if self.look_alike_yield < 0:
            raise SettingsError("HINDSIGHT_LOOK_ALIKE_YIELD must not be negative")
        if self.query_time not in {"boost", "filter", "off"}:
            raise SettingsError("HINDSIGHT_QUERY_TIME must be 'boost', 'filter' or 'off'")
        if self.context_order not in CONTEXT_ORDERS:
            raise SettingsError(f"HINDSIGHT_CONTEXT_ORDER must be one of {', '.join(CONTEXT_ORDERS)}")
        if not (0 <= self.relevance_support <= 1 and 0 <= self.relevance_floor <= 1) or self.max_lessons < 0:
            raise SettingsError(
                "HINDSIGHT_RELEVANCE_SUPPORT and HINDSIGHT_RELEVANCE_FLOOR must be within 0..1, "
                "HINDSIGHT_MAX_LESSONS must not be negative"
            )
        if self.meaning_texts < 0:
            raise SettingsError("HINDSIGHT_MEANING_TEXTS must not be negative")
        if not 0 < self.layer_share <= 1:
            raise SettingsError("HINDSIGHT_LAYER_SHARE must be in (0, 1]")
        if not 0 < self.token_refresh_seconds < self.token_stale_seconds or self.token_touch_seconds <= 0:
            raise SettingsError(
                "HINDSIGHT_TOKEN_REFRESH_SECONDS must be positive and below HINDSIGHT_TOKEN_STALE_SECONDS, "
                "HINDSIGHT_TOKEN_TOUCH_SECONDS positive"
            )
        if self.query_rewrites < 0 or self.context_tokens < 1 or self.recency_half_life_days <= 0:
            raise SettingsError(
                "HINDSIGHT_QUERY_REWRITES must not be negative, HINDSIGHT_CONTEXT_TOKENS and "
                "HINDSIGHT_RECENCY_HALF_LIFE_DAYS must be positive"
            )
        for name in ("recency_weight", "confidence_weight", "trust_weight"):
            if not 0 <= getattr(self, name) <= 1:
                raise SettingsError(f"HINDSIGHT_{name.upper()} must be between 0 and 1")
        if self.entity_weight < 0 or self.entity_pool < 1:
            raise SettingsError(
                "HINDSIGHT_ENTITY_WEIGHT must not be negative and HINDSIGHT_ENTITY_POOL must be positive"
            )
        if self.importance_weight < 0 or self.time_boost < 0 or self.rewrite_weight < 0:
            raise SettingsError("importance weight, time boost and rewrite weight must not be negative")
        self.layer_weights()
        self.signals()
        self.consensus()
        try:
            timeexpr.time_zone(self.time_zone)
        except timeexpr.UnknownTimeZone as exc:
            raise SettingsError(f"HINDSIGHT_TIME_ZONE: {exc}") from None
        check_mcp_http(self)
        self.secret_policies()
        if self.instruction_policy not in {"quarantine", "flag"}:
            raise SettingsError("HINDSIGHT_INSTRUCTION_POLICY must be 'quarantine' or 'flag'")
        if (
            min(self.write_rate_bank, self.write_rate_untrusted) < 0
            or min(self.write_burst_bank, self.write_burst_untrusted) < 1
        ):
            raise SettingsError(
                "HINDSIGHT_WRITE_RATE_* must not be negative and HINDSIGHT_WRITE_BURST_* must be positive"
            )

    def secret_policies(self) -> tuple[str, dict[str, str]]:
        """The default secret policy and the per-bank ones, checked (a typo is refused, never ignored)."""
        allowed = ("redact", "refuse", "quarantine")
        if self.secret_policy not in allowed:
            raise SettingsError(f"HINDSIGHT_SECRET_POLICY must be one of {', '.join(allowed)}")
        banks: dict[str, str] = {}
        for pair in self.secret_policy_banks:
            bank, _, policy = pair.partition("=")
            if not bank.strip() or policy.strip() not in allowed:
                raise SettingsError(
                    f"HINDSIGHT_SECRET_POLICY_BANKS: {pair!r} is not bank=policy ({', '.join(allowed)})"
                )
            banks[bank.strip()] = policy.strip()
        return self.secret_policy, banks

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

    def signals(self) -> dict[str, float]:
        """``signal_weights`` parsed: vector, keyword and tags (a signal left out weighs 0)."""
        weights = dict.fromkeys(SIGNALS, 0.0)
        for pair in filter(None, (item.strip() for item in self.signal_weights.split(","))):
            name, _, value = pair.partition("=")
            if name.strip() not in weights:
                raise SettingsError(f"HINDSIGHT_SIGNAL_WEIGHTS: unknown signal {name.strip()!r}")
            try:
                weights[name.strip()] = float(value)
            except ValueError:
                raise SettingsError(f"HINDSIGHT_SIGNAL_WEIGHTS: {pair!r} is not signal=weight") from None
        return weights

    def list_weights(self) -> dict[LayerName, float]:
        """Weight of each layer's list in fusion: its layer weight times its signal's weight."""
        signals, layers = self.signals(), self.layer_weights()
        return {layer: layers[layer] * signals[LAYER_SIGNAL[layer]] for layer in LayerName}

    def consensus(self) -> ConsensusSettings:
        """The recall-time checks' weights, checked (weights in 0..1, a margin of at least 1)."""
        if not (0 <= self.unverified_weight <= 1 and 0 <= self.dissent_weight <= 1):
            raise SettingsError(
                "HINDSIGHT_UNVERIFIED_WEIGHT and HINDSIGHT_DISSENT_WEIGHT must be between 0 and 1"
            )
        if self.consensus_margin < 1 or self.consensus_pool < 1 or self.warnings_limit < 0:
            raise SettingsError(
                "HINDSIGHT_CONSENSUS_MARGIN must be at least 1, HINDSIGHT_CONSENSUS_POOL positive and "
                "HINDSIGHT_WARNINGS_LIMIT not negative"
            )
        return ConsensusSettings(self.unverified_weight, self.dissent_weight, self.consensus_margin)

    def adjustments(self) -> Adjustments:
        """The score factors applied after fusion."""
        return Adjustments(
            recency_half_life_days=self.recency_half_life_days,
            recency_weight=self.recency_weight,
            importance_weight=self.importance_weight,
            confidence_weight=self.confidence_weight,
            trust_weight=self.trust_weight,
            time_boost=self.time_boost if self.query_time == "boost" else 0.0,
        )


SIGNALS = ("vector", "keyword", "tags")
"""The signals fusion weighs."""
LAYER_SIGNAL = {
    LayerName.WORKING: "keyword",
    LayerName.EPISODIC: "keyword",
    LayerName.SEMANTIC: "vector",
    LayerName.REFLECT: "keyword",
}
"""Which signal each layer's search is."""
