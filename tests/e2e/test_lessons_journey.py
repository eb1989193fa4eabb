"""A past mistake, asked about again in new words (English and Chinese), brings its lesson first.

Through the official MCP client against ``hindsight up``: a bank of everyday facts and failed episodes,
a reflection, then requests for a similar task that share almost no words with the episode (another
site, another verb), and an unrelated request that must not bring a lesson.
"""

from __future__ import annotations

from pathlib import Path

from hindsight.runtime.embedded import free_port
from tests.e2e.test_edge_tools_end_to_end import _call
from tests.e2e.test_up_end_to_end import _start, _stop, agent_client, home

__all__ = ["home"]

BANK = "journey-lessons"
FACTS = (
    "I'm allergic to penicillin.",
    "I prefer dark mode on every screen.",
    "My standing desk is by the window.",
    "I play badminton every Tuesday evening.",
    "My sister's birthday is on March 3rd.",
    "我每天坐八点十分的地铁上班。",
    "我最喜欢吃泰国菜。",
    "牙医预约在下周四下午三点。",
)
EPISODES = (
    {
        "situation": "The HTTPS certificate of the online shop expired",
        "action": "nobody renewed it because the reminder went to a former colleague",
        "outcome": "the shop was offline for three hours with browser security errors",
        "lesson": "Track certificate expiry in monitoring, alert the on-call channel, renew weeks ahead",
        "task_type": "certificate renewal",
        "tools": ["certbot"],
    },
    {
        "situation": "Booked a non-refundable hotel for a family trip",
        "action": "picked the cheapest rate without reading the cancellation terms",
        "outcome": "the dates changed and the money was lost",
        "lesson": "Book refundable rooms while plans may still change",
        "task_type": "hotel booking",
    },
    {
        "situation": "给生产环境的订单表加了一个非空字段",
        "action": "白天高峰期直接执行了迁移脚本",
        "outcome": "表被锁了二十分钟，下单接口全部超时",
        "lesson": "大表结构变更要分批执行、避开高峰，并先在生产数据副本上演练",
        "task_type": "数据库迁移",
    },
)


async def test_a_similar_task_in_new_words_gets_its_lesson_first(home: Path) -> None:
    mesh = await _start(home, free_port())
    try:
        async with agent_client(mesh, home) as client:
            for fact in FACTS:
                await _call(client, "retain", {"text": fact, "bank": BANK, "session_id": "everyday"})
            for index, episode in enumerate(EPISODES):
                arguments = {**episode, "success": False, "session_id": f"task-{index}", "bank": BANK}
                await _call(client, "write_episode", arguments)
            reflected = await _call(client, "reflect", {"bank": BANK})
            assert reflected["lessons"]

            for query, words in (
                ("I need to renew the TLS cert on the payments gateway next week", "certificate expiry"),
                ("下周要改一下会员表的结构，上线前有什么要注意的？", "分批执行"),
            ):
                found = await _call(client, "recall", {"query": query, "top_k": 3, "bank": BANK})
                first = found["memories"][0]
                assert first["kind"] == "lesson" and words in first["text"], (query, found["memories"])
                assert found["context"].startswith("## Lessons from past work"), found["context"]
                assert words in found["context"].split("\n\n")[0]

            unrelated = await _call(
                client,
                "recall",
                {"query": "Which films won best picture in the nineties?", "top_k": 3, "bank": BANK},
            )
            assert not [m for m in unrelated["memories"] if m["kind"] == "lesson"], unrelated["memories"]
            assert all(0.0 <= m["score"] <= 1.0 for m in unrelated["memories"])
    finally:
        exit_code = await _stop(mesh)
    assert exit_code == 0, "".join(mesh.output)
