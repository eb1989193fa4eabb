"""With an LLM configured, recall also searches its rewrite of the query; a failing LLM costs nothing."""

from __future__ import annotations

from hindsight.mcp_edge.domain import LayerName, RecallQuery
from hindsight.mcp_edge.engine import open_engine
from hindsight.runtime.llm import LLMSettings
from hindsight.runtime.records import Turn
from tests.integration.mesh import LayerAddresses
from tests.llm_test_server import Reply, openai_test_server


async def test_the_llm_rewrite_finds_what_the_words_of_the_query_do_not(mesh_layers: LayerAddresses) -> None:
    async with openai_test_server() as llm:
        llm_settings = LLMSettings(api_base=llm.base_url, model="rewriter", max_retries=0)
        async with open_engine(mesh_layers.edge_settings(), llm_settings) as engine:
            await engine.retain(
                "rw-bank", [Turn(id="z1", session_id="s", text="Codename Zephyr was picked in March.")]
            )
            llm.script(Reply(content={"query": "Zephyr codename"}))
            query = RecallQuery(bank_id="rw-bank", query="xyzzy plugh", top_k=3)
            found = await engine.recall(query)
            assert "Zephyr codename" in found.analysis.rewrites
            assert found.memories and found.memories[0].id == "z1" and not found.partial
            keyword = next(o for o in found.outcomes if o.layer is LayerName.EPISODIC)
            assert [c.id for c in keyword.candidates] == ["z1"]  # only the rewrite shares a word with it
            sent = llm.requests[-1].body
            assert sent["model"] == "rewriter" and "xyzzy plugh" in sent["messages"][-1]["content"]

            llm.script(Reply(status=500, content="overloaded"))
            degraded = await engine.recall(query)
            assert degraded.analysis.rewrites == ("xyzzy plugh",) and not degraded.partial
            keyword = next(o for o in degraded.outcomes if o.layer is LayerName.EPISODIC)
            assert keyword.ok and keyword.candidates == ()
            llm.script(Reply(hang=True))
            slow = await engine.recall(query)
            assert slow.analysis.rewrites == ("xyzzy plugh",) and not slow.partial
