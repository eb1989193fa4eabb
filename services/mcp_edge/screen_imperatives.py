"""Imperatives aimed at the reader (EN + ZH): in content from a tool or an outside source, an order to
the agent is an attack whatever its words; a build log's or a manual's own procedure is not.
"""

# ruff: noqa: RUF001  (Chinese cues use full-width punctuation on purpose)
from __future__ import annotations

import itertools
import re

from hindsight.mcp_edge.screen_findings import (
    MAX_MATCHES_PER_CUE,
    QUARANTINE,
    TOOL_IMPERATIVE,
    Finding,
    excerpt,
    first_per_span,
)

_SENTENCE_START = (
    r"(?:^|(?<=[.!?;:\n。！？；：])\s*|\b(?:important|note|attention|warning|notice|nb)\s*[:!-]\s*)"
)
_AGENT_VERBS = (
    r"(?:tell|say|answer|respond|reply|recommend|inform|ignore|disregard|forget|send|forward|reveal|disclose|"
    r"output|print|remember|store|save|include|mention|refer|direct|claim|insist|"
    r"transfer|pay|approve|grant)"
)
_FETCHED = (
    r"[^.;\n]{0,80}?(?:https?://|www\.|\b[\w-]+\.(?:com|io|org|net|cn|info|co|app|site|xyz|biz|shop|ru|sh)\b|"
    r"\b(?:curl|wget|iwr|invoke-webrequest)\b|\|\s*(?:ba|z)?sh\b)"
)
"""What makes running, clicking, opening or downloading an attack: something fetched from elsewhere (a link, a
domain, a download piped into a shell). "Run npm audit fix", "click Save", "run the tests before committing"
are the content's own procedure (a build log, a README, a manual), not an order aimed at the agent."""
_OWNED = (
    r"(?:the|all|every|their|your|his|her|this|these|those|whole|entire|full|complete|user'?s|users'|"
    r"customer'?s|customers')"
)
_USER_DATA = (
    r"(?:conversations?|chats?|(?:chat |conversation )?history|messages|contacts?|contact details|"
    r"credentials|passwords?|files|data|personal \w+|account details|logs|records|notes|address book)"
)
"""What a ``send``/``forward`` aimed at the agent moves: the user's data. Sending "a reset link" or "the
invoice" is the content's own business."""
_EN_IMPERATIVE = re.compile(
    rf"{_SENTENCE_START}(?:please\s+|kindly\s+|now\s+|immediately\s+|always\s+|never\s+|do not\s+|don't\s+)*"
    r"(?:(?:ignore|disregard|forget)\s+(?:(?:all|any|the|your|previous|prior|above|earlier|these|those)\s+)*"
    r"(?:instructions?|rules?|guidelines?|prompts?|context|everything|what)|"
    r"(?:tell|inform|notify|remind|advise|warn)\s+(?:the\s+|all\s+|any\s+|every\s+)?"
    r"(?:users?|customers?|them|everyone|people|readers?|visitors?)\b|"
    r"(?:say|answer|respond|reply|claim|state|insist)\s+(?:that|with|only|:|\"|“)|"
    r"(?:recommend|suggest)\s+\w+|"
    r"(?:reveal|disclose|leak|output|print|transfer|wire|pay)\s+\w+|"
    rf"(?:send|forward|email|copy|upload)\s+(?:{_OWNED}\s+)*{_USER_DATA}\b|"
    r"(?:send|forward|email|copy|upload)\s+[^.;\n]{0,60}?\bto\s+(?:[\w.+-]+@[\w-]+\.\w+|https?://)|"
    r"(?:remember|memori[sz]e|store|save|note)\s+(?:that|this|the following|to\s+\w+|:)|"
    rf"(?:click|download|execute|run|navigate to|open|install)\s+{_FETCHED}|"
    r"visit\s+(?:https?://|www\.)\S+)|"
    rf"\byou\s+(?:must|should|need to|have to|are (?:required|instructed|supposed) to|will now|shall)\s+"
    rf"(?:always\s+|now\s+|never\s+|also\s+)?(?:{_AGENT_VERBS}\b|"
    rf"(?:visit|click|run|execute|open|download|install)\s+{_FETCHED})",
    re.MULTILINE | re.IGNORECASE,
)
_EN_HEADER = re.compile(
    r"\b(?:IMPORTANT|ATTENTION|INSTRUCTIONS?|NOTE TO (?:THE )?(?:AI|ASSISTANT|AGENT|MODEL))\s*[:!]"
)
_ZH_IGNORE_RULES = (
    r"(?:忽略|无视)(?:掉)?[^。！？!?\n，,]{0,12}?(?:指令|指示|规则|提示|设定|要求|命令|约束|限制|说明|内容|对话|记忆|"
    r"一切|信息)"
)
"""Ignoring aimed at the agent: its instructions, what came before. Ignoring "the old calendar invite" or
"section C" is the content's own business."""
_ZH_IMPERATIVE = re.compile(
    r"(?:^|(?<=[。！？；：.!?;:\n]))\s*(?:重要|注意|提示|警告)?[：:]?\s*"
    r"(?:请|务必|必须|一定要|记得|记住|立即|马上|你(?:必须|应该|需要|要|得)|请你)+\s*"
    r"(?:立即|马上|务必|一定)?(?:把[^。！？!?\n]{0,20}?)?"
    r"(?:告诉|推荐|建议|通知|发送|转发|分享|透露|泄露|输出|打印|记住|保存|更新|删除|转账|汇款|"
    r"支付|联系|批准|说|称|相信|(?:访问|点击|打开|下载|执行|运行|安装)"
    r"[^。！？!?；;\n]{0,80}?(?:https?://|www\.|[\w-]+\.(?:com|io|org|net|cn|info|co|app|site|xyz|biz|shop|ru|sh)\b|"
    r"\b(?:curl|wget)\b|链接|网址|网站)|"
    rf"{_ZH_IGNORE_RULES}|(?:回答|回复)(?:说|称|[:：“\"「]))|"
    rf"(?:^|(?<=[。！？；.!?;\n]))\s*(?:{_ZH_IGNORE_RULES}|告诉用户|转告|透露|泄露|转账|汇款)"
)


def tool_imperatives(text: str) -> list[Finding]:
    """Imperatives aimed at the reader (EN + ZH): in content from a tool or an outside source, an attack."""
    found = []
    for pattern in (_EN_IMPERATIVE, _EN_HEADER, _ZH_IMPERATIVE):
        for match in itertools.islice(pattern.finditer(text), MAX_MATCHES_PER_CUE):
            words = match.group(0).strip()
            if not words:
                continue
            found.append(
                Finding(
                    TOOL_IMPERATIVE,
                    f"an imperative to the reader in untrusted content: “{excerpt(words)}”",
                    QUARANTINE,
                    match.span(),
                )
            )
    return first_per_span(found)[:5]
