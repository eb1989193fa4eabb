"""Instruction cues (EN + ZH): families of an imperative, an addressee and scope words, never a list of attack
phrasings. A family is *strong* when ordinary conversation almost never produces it (overriding earlier
instructions, a forged ``system:`` line, a rule for what to answer whoever asks) and *weak* when a user
may well say it as a preference ("always answer in French"); see :func:`instruction_cues`.
"""

# ruff: noqa: RUF001  (Chinese cues use full-width punctuation on purpose)
from __future__ import annotations

import itertools
import re

from hindsight.mcp_edge.screen_findings import (
    FLAG,
    INSTRUCTION,
    MAX_MATCHES_PER_CUE,
    QUARANTINE,
    Cue,
    Finding,
    excerpt,
    first_per_span,
)

_I = re.IGNORECASE | re.MULTILINE


_STRONG_QUALIFIERS = re.compile(
    r"\b(previous|prior|above|earlier|preceding|former|original|system|your|all|any)\b|"
    r"之前|以前|先前|此前|上面|上述|前面|原来|原有|所有|全部|一切|系统|你的|任何",
    re.IGNORECASE,
)

_OWN = re.compile(r"\b(?:my|our)\b", re.IGNORECASE)
"""A first-person owner of the overridden instructions: the speaker revising their own words."""
_REVISES_OWN = "revises the speaker's own earlier instructions"
"""Weak: a user changing their mind ("ignore my earlier request for metric units"); from a tool or an
outside source, which has no earlier instructions of its own to revise, it is held like any weak cue."""
_EN_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|circumvent|discard|abandon)\s+"
    r"(?P<q>(?:(?:all|any|every|the|your|my|our|of|these|those|previous|prior|above|earlier|preceding|former|"
    r"original|existing|system|safety|other|current)\s+){1,4})"
    r"(?:instructions?|directions?|rules?|guidelines?|prompts?|directives?|commands?|guardrails?|"
    r"polic(?:y|ies)|constraints?|restrictions?|programming|context|messages?|memor(?:y|ies))\b",
    _I,
)
_ZH_OVERRIDE = re.compile(
    r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|别理会|不用理会|跳过|推翻|抛开|作废)(?:掉)?"
    r"(?P<q>(?:你|之前|以前|先前|此前|上面|上述|前面|原来|原有|所有|全部|一切|系统|任何|的){1,6})"
    r"(?:(?:关于|有关)[^，。！？,\n]{1,60}?的(?:所有|全部|一切|任何)?)?"
    r"(?:指令|指示|规则|提示词?|设定|要求|命令|约束|限制|说明|对话|记忆)"
)
_ROLE_MARKER = re.compile(
    r"(?:^|\n)\s*(?:\[|<\|?|【|#+\s*)?\s*(?:system|developer|system prompt|系统|系统提示|系统指令|系统消息)"
    r"\s*(?:\]|\|?>|】)?\s*[:：]|<\|im_start\|>|\[/?INST\]|\bbegin (?:system|new) (?:prompt|instructions)\b|"
    r"(?:^|\n)\s*(?:new|updated|revised) instructions?\s*[:：]|(?:^|\n)\s*新的?(?:指令|指示)\s*[:：]",
    _I,
)
_ASKERS_EN = (
    r"(?:someone|anyone|somebody|anybody|a user|the user|users|any user|people|others|a customer|customers|"
    r"the customer|a visitor|visitors|whoever|a person|they)"
)
_ANSWER_VERBS_EN = (
    r"(?:say|answer|respond|reply|tell|claim|state|recommend|suggest|direct|insist|report|ask|forward|send|"
    r"add|include|advise|sign|copy|mention|deny|redirect|link|share|email|give|provide|warn|quietly|"
    r"always|never|do not|don't|point (?:them|him|her|people) to|refer (?:them|him|her|people) to)"
)
_EN_RULE = re.compile(
    rf"\b(?:when|whenever|if|every time|each time|any ?time)\s+(?:(?:{_ASKERS_EN}\s+(?:ever\s+)?"
    rf"(?:asks?|inquires?|wants? to know|questions?)|(?:you are|you're|you get|you're ever|you are ever)\s+"
    rf"asked|asked)\b)[^.?!\n]{{0,160}}?(?:,|;|:|\bthen\b)\s*(?:then\s+)?(?:you\s+(?:should|must|will|shall|"
    rf"need to|have to)\s+)?(?:always\s+|only\s+|just\s+)?{_ANSWER_VERBS_EN}\b",
    _I,
)
_EN_WHOEVER = re.compile(
    rf"\b(?:no matter who|whoever|regardless of who|whoever it is that)\s+asks?\b[^.?!\n]{{0,80}}?"
    rf"\b{_ANSWER_VERBS_EN}\b|\b{_ANSWER_VERBS_EN}\b[^.?!\n]{{0,80}}?\b(?:no matter who|whoever|regardless "
    rf"of who)\s+(?:asks?|is asking)\b",
    _I,
)
_EN_ADDRESS = re.compile(
    r"\b(?:tell|inform|notify|advise|convince|remind|assure|warn|persuade)\s+(?:the|any|every|all|each)\s+"
    r"(?:users?|customers?|callers?|visitors?|readers?)\b|"
    r"\b(?:dear|attention|note to|message to|instructions? (?:to|for)|reminder (?:to|for))\s+(?:the\s+)?"
    r"(?:ai|assistant|agent|model|llm|chatbot|bot|language model)\b|"
    r"\b(?:the|this)\s+(?:ai|assistant|agent|model|llm|chatbot|language model)\s+"
    r"(?:must|should|shall|needs? to|has to|is (?:required|instructed|supposed) to)\s+(?:always\s+|now\s+)?"
    r"(?:say|answer|respond|reply|tell|recommend|claim|state|ignore|forget|output|include|mention|refer)\b|"
    r"\byou\s+(?:must|should|shall|need to|have to|are (?:required|instructed|supposed) to)\s+"
    r"(?:always\s+|now\s+)?(?:tell|inform|answer|say to|respond to|reply to|recommend to)\s+"
    r"(?:the|any|every|all)\s+(?:users?|customers?)\b",
    _I,
)
_ZH_ASKERS = r"(?:有人|任何人|别人|其他人|其它人|用户|客户|谁|大家|对方|人家|提问者|访客)"
_ZH_ANSWER = (
    r"(?:回答|回复|答复|说|答|告诉|推荐|建议|声称|表示|称|介绍|让用户|要求用户|把|发送|转发|附上|提供|开通|取消|"
    r"先让|悄悄|直接)"
)
_ZH_RULE = re.compile(
    rf"(?:当|如果|若|要是|假如|每当|一旦|只要|凡是)?{_ZH_ASKERS}(?:再|以后|今后)?"
    rf"(?:问|询问|问到|问起|提到|提起|咨询|打听)(?!我)[^。！？!?\n]{{0,60}}?[，,、：:]?\s*"
    rf"(?:你)?(?:就|都|则|便|请|一律|务必|必须|要|应该|统一)+(?:要|先)?{_ZH_ANSWER}"
)
_ZH_WHOEVER = re.compile(r"(?:无论|不管|不论)(?:是)?(?:谁|任何人|什么人|哪个人|哪位)(?:来)?(?:问|询问)")
_ZH_ADDRESS = re.compile(
    rf"(?:告诉|通知|提醒|劝|说服|转告|忽悠)(?:所有|每个|每位|任何|全部)?(?:的)?(?:用户|客户|使用者|提问者|访客)|"
    rf"(?:助手|AI|人工智能|模型|智能体|机器人|大模型)(?:你)?(?:必须|应该|应当|务必|需要|要|请)"
    rf"(?:始终|一直|总是|永远)?{_ZH_ANSWER}|"
    rf"(?:给|致)(?:AI|助手|模型|智能体|机器人)的(?:说明|提示|指令|留言|话)",
    re.IGNORECASE,
)
_SCOPE_EN = (
    r"(?:from now on|from this point (?:on|forward)|henceforth|going forward|hereafter|in (?:all )?future "
    r"(?:conversations|answers|responses|sessions|chats)|for all future|always|never again|every time|"
    r"permanently|forever)"
)
_EN_PERSIST = re.compile(
    rf"\b{_SCOPE_EN}\b[^.?!\n]{{0,60}}?\b(?:answer|respond|reply|say|tell|recommend|suggest|state|claim|"
    rf"refer|output|mention|include|address|call)\b|"
    rf"\b(?:remember|memori[sz]e|keep in mind|store|save|note)\s+(?:this|that|the following|it)?\s*[:,]?"
    rf"[^.?!\n]{{0,40}}?\b(?:from now on|for (?:all )?future|forever|permanently|henceforth)\b",
    _I,
)
_ZH_PERSIST = re.compile(
    r"(?:以后|今后|从现在起|从现在开始|从今以后|从今往后|此后|往后|将来|永远|每次|每当|下次|始终)"
    r"[^。！？!?\n]{0,20}?(?:都|一律|总是|始终|必须|务必|要|请|就)[^。！？!?\n]{0,10}?"
    r"(?:回答|回复|说|告诉|推荐|建议|声称|称|答|提到|介绍)|"
    r"记住[^。！？!?\n]{0,6}?(?:以后|今后|从现在起|永远|每次|下次)|"
    r"(?:以后|今后|从现在起|往后|下次)[^。！？!?\n]{0,6}?(?:别|不要|不许|不准)(?:再)?(?:说|提|回答|讲)"
)


_AI_READER_EN = (
    r"(?:ai|automated|artificial|llm|language|virtual)?\s*(?:assistants?|agents?|models?|llms?|"
    r"bots?|chatbots?)"
)
_EN_AI_READER = re.compile(
    r"\bif you(?:'re| are) (?:an? )?(?:ai|artificial intelligence|llm|large language model|language model|"
    r"assistant|agent|chatbot|bot|automated system)\b|"
    rf"\b(?:notes?|messages?|instructions?|reminders?|notice|memo)\s+(?:for|to)\s+(?:the\s+|all\s+|"
    rf"any\s+)?{_AI_READER_EN}\b|"
    rf"\b(?:for|to)\s+(?:the\s+)?(?:ai|automated|llm)\s+(?:assistants?|agents?|models?|systems?)\b|"
    rf"\b{_AI_READER_EN}\s+(?:that (?:is|are)\s+)?(?:reading|processing|summari[sz]ing|parsing|seeing|"
    rf"handling|"
    r"browsing|indexing) (?:this|these|the following)\b|"
    r"<!--\s*(?:assistant|ai|agent|system|model|llm|instruction|note)\b|"
    r"\b(?:notes?|messages?|reminders?|instructions?)\s+(?:for|to)\s+"
    r"(?:whoever|anyone|the next (?:person|reader|agent|assistant))\s+(?:who\s+)?"
    r"(?:reads|reading|sees|processes|opens|handles)\s+this\b",
    _I,
)
_ZH_AI_READER = re.compile(
    r"(?:致|给|对|告)(?:所有|各位)?(?:AI|人工智能|自动)?(?:助手|模型|智能体|机器人|大模型)|"
    r"如果你是(?:一个|一名)?(?:正在[^，。,]{0,12})?(?:AI|人工智能|语言模型|大模型|助手|智能体|模型|机器人)|"
    r"(?:读取|处理|阅读|总结|浏览|解析)(?:这条|此|本|该|这个)[^，。,]{0,8}的(?:AI|助手|智能体|模型|机器人)|"
    r"仅供(?:自动)?(?:AI|助手|模型|智能体|机器人)(?:阅读|参考|使用)|"
    r"<!--\s*(?:助手|AI|系统|模型|智能体)",
    re.IGNORECASE,
)
_EN_CONCEAL = re.compile(
    r"\b(?:do not|don't|never|without)\s+(?:ever\s+)?(?:mention|tell|reveal|show|disclose|inform|telling|"
    r"mentioning|informing|notifying|asking)\s+(?:(?:this|these|the|any|about)\s+)?(?:(?:note|notes|"
    r"instructions?|"
    r"message|rule|change|policy|earlier|previous|prior|other)\s*)+(?:statements?|records?|answers?|notes?|"
    r"versions?)?\s*(?:to (?:the )?users?)?|"
    r"\b(?:do not|don't|never)\s+(?:let|tell|inform)\s+(?:the )?users?\s+(?:know|about|that)\b|"
    r"\bwithout (?:asking|telling|informing|notifying) (?:the )?users?\b|\bwithout asking (?:first|them)\b",
    _I,
)
_ZH_CONCEAL = re.compile(
    r"(?:不要|别|切勿|不得|不可|千万别)(?:向|对|跟|给)?(?:用户|对方|客户)?(?:提起|透露|提到|说起|说明|展示|告知)"
    r"(?:这条|此|本|该|之前|以前|先前|其他|任何)|"
    r"不经(?:用户)?(?:确认|同意|允许|询问)|瞒着用户|不让用户知道|"
    r"(?:不要|别|切勿|不得|千万别)(?:告诉|通知|让)(?:用户|对方|客户)(?:知道)?"
)
_EN_INPUT_TRIGGER = re.compile(
    r"\b(?:whenever|when|if|every time)\s+(?:a|the|any)\s+(?:message|request|query|question|prompt|input|"
    r"text)\s+"
    r"(?:contains|includes|mentions|has)\b|"
    r"\b(?:a|any|every) (?:request|message|query|question|prompt) (?:mentioning|containing|including|"
    r"with the words?|that (?:mentions|contains|includes))\b[^.?!\n]{1,60}?\b(?:is|are|gets?|must|should)\b|"
    r"\bwhen (?:answering|replying to|responding to) (?:any |all )?(?:questions?|requests?|queries) "
    r"(?:about|on|regarding)\b|"
    rf"\bfor (?:any |all |every )?(?:requests?|questions?|queries|messages|inquiries|tasks) (?:tagged|marked|"
    rf"labell?ed|flagged|containing|mentioning|with|about|on|"
    rf"regarding|"
    rf"concerning|related to) [^,.;:\n]{{1,80}}[,:;]\s*(?:always\s+|just\s+|simply\s+)?{_ANSWER_VERBS_EN}\b",
    _I,
)
_ZH_INPUT_TRIGGER = re.compile(
    r"(?:只要|如果|若|一旦|每当)(?:消息|请求|问题|提问|输入|对话)(?:里|中)?(?:出现|包含|含有|提到)|"
    r"(?:带有|含有|包含|提到)[^，。！？,\n]{1,30}的(?:请求|消息|提问|问题)(?:已|都|一律|会|将)|"
    r"(?:消息|请求|问题|提问|输入|对话)(?:里|中)(?:出现|包含|含有|提到|带着|带有|有)[^，。！？,\n]{1,20}?(?:时|的时候)|"
    r"凡是(?:关于|涉及)[^，。,]{1,60}的(?:请求|问题|提问|咨询)[，,]?(?:都|一律)"
)
_BRACKET_MARKER = re.compile(
    r"[\[【(（]\s*(?:system|system note|system message|admin|sudo|系统|系统消息|系统提示|管理员)\s*[\]】)）]",
    _I,
)
_EN_MEMORY_DIRECTIVE = re.compile(
    r"\b(?:keep (?:that|this|it) in mind|keep in mind|please note|note to self|just so you know|"
    r"for future reference|remember|bear in mind|"
    r"don't forget|make a note)\s*(?:that\b|this\b|[,:;-])|\bkeep (?:that|this|it) in mind\b",
    _I,
)
_ZH_MEMORY_DIRECTIVE = re.compile(
    r"(?:请记住|记住|要记得|请注意|给自己的备注|备注一下|以后记得|请永久记住|永久记住)"
)
_EN_ANSWER_SET = re.compile(
    r"\b(?:the|your)\s+(?:right|correct|real|true|proper|only|accurate|official)\s+(?:answer|reply|response|"
    r"way to (?:answer|handle|respond|reply)|thing to say)\b|"
    r"\b(?:answer|reply|respond)\s+(?:with|only with)\s+[\"“']|\bI should (?:tell|say|answer|recommend|"
    r"forward|"
    r"send|ask|advise|add|sign|copy|quietly)\b|"
    r"\bthe (?:\w+ )?(?:answer|reply|response) (?:about|to|for|on|regarding) [^.?!\n,;]{1,80}? (?:is|was|"
    r"should be)\b|"
    r"\bthe only (?:reliable|trusted|trustworthy|official|correct|safe|valid) (?:place|source|site|"
    r"website|way|answer)\b",
    _I,
)
_ZH_ANSWER_SET = re.compile(
    r"正确(?:的)?(?:答案|回答|回复|处理方式|做法|说法)|(?:回答|回复)[^，。,]{0,20}(?:时|的时候)?应该|(?:回答|回复)(?:说|称)|我应该"
    r"(?:告诉|回答|推荐|转发|发送|建议|让|把|悄悄|先)|唯一(?:可靠|正确)的?(?:渠道|来源|答案)"
)
_EN_DISCREDIT = re.compile(
    r"\b(?:the\s+)?(?:earlier|old|older|first|previous|prior|original)\s+(?:entry|entries|record|records|note|"
    r"notes|information|memory|memories|statement|data|figure|value|number|answer|claim|report|version|date)\b"
    r"[^.?!\n]{0,60}?\b(?:was|were|is|are|came|described|"
    r"got)\s+(?:wrong|outdated|incorrect|mixed up|from an outdated|about someone else|someone else|"
    r"superseded|replaced|obsolete|invalid)|"
    r"\b(?:corrected|changed|updated) (?:this|that|it) later\b|\bwas mixed up with\b|"
    r"\bthere (?:is|was) no (?:record|memory|mention|trace) of\b|"
    r"\bcorrected (?:record|entry|version|figure)\b|"
    r"(?:^|(?<=[.!?\n]))\s*(?:small |quick |minor |a )?correction\s*(?:on [^:.\n]{1,60})?[:\-]",
    _I,
)
_ZH_DISCREDIT = re.compile(
    r"(?:之前|以前|最早|原来|旧的?|先前|早先)(?:那条|的)?(?:关于[^，。,]{1,30}的)?(?:记录|笔记|信息|说法|条目|记忆|资料)"
    r"[^，。,]{0,20}?(?:弄混|搞混|有误|错了|过时|作废|说的是另一个人|不准确|不对)|后来[^，。,]{0,16}更正|"
    r"(?:根本)?没有(?:关于[^，。,]{1,30}的)?(?:任何)?(?:记录|记忆|相关信息)|"
    r"(?:之前|以前|原来|先前|此前)(?:说的|提到的|记录的|记的|写的)[^，。,]{0,20}?(?:是错的|有误|不对|不准确|错了|过时了)|"
    r"(?:^|(?<=[。！？\n]))\s*(?:小|一点)?(?:更正|纠正|勘误)\s*[：:]|已更正为"
)
_EN_AGENT_GOAL = re.compile(
    r"\b(?:tell|ask|advise|remind|warn|inform|convince)\s+(?:the\s+)?user\b|"
    r"\bthe user'?s\s+(?:account\s+)?(?:password|credentials|contact details|login|card|bank details)\b|"
    r"\b(?:to|in|into|with)\s+every\s+(?:answer|reply|response|message)\b|"
    r"\b(?:forward|send|copy|email|upload|leak)\s+(?:\w+\s+){0,6}?(?:conversation|chat|history|"
    r"contact details|"
    r"contacts|credentials|passwords?|messages)\b",
    _I,
)
_ZH_AGENT_GOAL = re.compile(
    r"(?:告诉|提醒|要求|劝|建议)用户|让用户(?:先)?(?:提供|输入|确认|登录|点击|访问|转账|支付|付款|下载)|用户的?(?:账号|密码|联系方式|银行卡|身份证|登录)|每次回答|"
    r"每一次回复|"
    r"(?:转发|发送|复制|上传)(?:到|给)?[^，。,]{0,12}(?:对话|聊天记录|联系方式|密码)|(?:对话|聊天记录|联系方式)[^，。,]{0,12}"
    r"(?:转发|发送|复制)(?:到|给)"
)

_SECRET_WORDS_EN = (
    r"(?:password|passcode|credentials|login details|pin|verification code|one-time code|security code|"
    r"card number|"
    r"cvv|bank details|account details)"
)
_EN_PHISH = re.compile(
    r"\b(?:ask|request|require|prompt|get|have|make)\s+(?:the\s+)?(?:user|users|them|customers?|him|her)\s+"
    rf"(?:to\s+|for\s+)?[^.?!\n]{{0,40}}?\b{_SECRET_WORDS_EN}\b",
    _I,
)
_ZH_PHISH = re.compile(
    r"(?:让|要求|请|叫)(?:用户|客户|对方)(?:先)?(?:提供|输入|确认|告知|报出|发送)[^，。,]{0,10}?(?:密码|验证码|账号|银行卡号|身份证号|安全码)"
)
_EXFIL_DATA_EN = (
    r"(?:conversation|conversations|chat|chats|history|contact details|contacts|credentials|passwords?|"
    r"messages|"
    r"personal data|personal details|address book|files)"
)
_EN_EXFIL = re.compile(
    rf"\b(?:forward|send|copy|email|upload|post|leak|share|transmit|"
    rf"cc)\b[^.?!\n]{{0,80}}?\b{_EXFIL_DATA_EN}\b"
    r"[^.?!\n]{0,60}?(?:\b[\w.+-]+@[\w-]+\.[\w.]+|https?://\S+)",
    _I,
)
_ZH_EXFIL = re.compile(
    r"(?:转发|发送|复制|上传|抄送|发给|发到)[^。！？\n]{0,60}?(?:[\w.+-]+@[\w-]+\.[\w.]+|https?://\S+)|"
    r"(?:对话|聊天记录|联系方式|密码|通讯录)[^。！？\n]{0,30}?(?:转发|发送|复制|上传|发)(?:到|给)"
)
_FORGED_DIALOGUE = re.compile(
    r"(?:\buser|用户|human|人类)\s*[:：][^\n]{1,300}?(?:\bassistant|助手|\bai|\bbot|机器人)\s*[:：]", _I
)
_EN_AGENT_NOTE = re.compile(
    r"(?:^|(?<=[.!?\n]))\s*(?:reasoning|working memory|note to self|lesson learned|lessons learned|past case|"
    r"experience log|example dialogue|step 1|internal note|memory update|agent note|reflection|plan|"
    r"noted for later|note for later|for later|updated understanding|conclusion|takeaway)\s*[:.\-–—]",
    _I,
)
_ZH_AGENT_NOTE = re.compile(
    r"(?:^|(?<=[。！？\n]))\s*(?:推理|工作记忆|给自己的备注|经验总结|历史案例|经验记录|示例对话|第一步|内部备注|记忆更新|"
    r"已更新理解|更新理解|结论|计划|反思|备忘|留待以后|经验|心得)\s*[：:。.—\-]"
)
_DOMAIN = r"(?:https?://\S+|www\.\S+|\b[\w-]+\.(?:com|io|org|net|cn|info|co|app|site|xyz|biz)\b)"
_EN_LINK_RULE = re.compile(
    r"\b(?:when|whenever|each time|every time|any ?time|if)\b[^.?!\n]{0,60}?\b(?:asks?|asked|mentions?|"
    r"mentioned|talks? about|talked about|brings? up|brought up|raises?|comes? up|came up)\b[^.?!\n]{0,140}?"
    + _DOMAIN,
    _I,
)
_ZH_LINK_RULE = re.compile(
    r"(?:每当|每次|只要|一旦|如果|当)[^。！？\n]{0,40}?(?:问|提到|提起|说起|聊到|谈到)[^。！？\n]{0,60}?"
    r"(?:推荐|建议|介绍|引导|让[^。！？\n]{0,6}去|访问|打开|前往)[^。！？\n]{0,30}?" + _DOMAIN
)
_EN_LINK = re.compile(
    r"\b(?:recommend|suggest|suggestion of|point (?:them|him|her|people|users?) to|"
    r"direct (?:them|him|her|people) to|refer (?:them|him|her|people) to|send (?:them|him|her|people) to|"
    r"visit|go to)\b[^.?!\n]{0,60}?" + _DOMAIN,
    _I,
)
_ZH_LINK = re.compile(r"(?:推荐|建议|访问|登录|打开|前往|去|使用|引导)[^。！？\n]{0,30}?" + _DOMAIN)
_EN_MY_RULE = re.compile(
    r"\b(?:when|whenever|if|every time)\s+I\s+ask\b[^.?!\n]{0,80}?[,;]?\s*(?:just\s+)?"
    r"(?:say|answer|tell me|reply)\b",
    _I,
)
_ZH_MY_RULE = re.compile(
    r"(?:以后|今后|下次|每次|只要|如果)?我(?:再)?问[^。！？\n]{0,30}?(?:你)?(?:就|都|直接)+(?:直接)?(?:说|回答|答|告诉我)|"
    r"应(?:该|当)?(?:回答|答复|回复|说)(?:为|是|成)|(?:应为|应该是|应当是)|(?:其实|实际上)(?:她|他|它|那|这)?(?:是|在)"
)
_EN_ACTUALLY = re.compile(r"\b(?:is|was|were|are)\s+actually\b|\bactually\s+(?:is|was|were|are)\b", _I)
_EN_VOCATIVE = re.compile(r"(?:^|(?<=[.!?\n]))\s*(?:hey\s+)?(?:assistant|AI|agent|bot|chatbot)\s*[,:]", _I)
_ZH_VOCATIVE = re.compile(
    r"(?:^|(?<=[。！？\n：:]))\s*(?:-\s*)?(?:助手|AI|智能体|机器人)[，,：:]", re.IGNORECASE
)
_EN_TOPIC_RULE = re.compile(
    r"\bbefore (?:you )?(?:answer|answering|respond|responding to|reply|replying to) (?:any|a|every|all)\s+"
    r"(?:questions?|requests?|queries|messages) (?:about|on|regarding|concerning)\b|"
    r"\bthe (?:correct|right|real|true|actual|official) (?:answer|reply|response) (?:about|to|for|on|"
    r"regarding) "
    r"[^.?!\n,;]{1,80}? (?:is|was|should be)\b|"
    r"\b(?:to|in|into|with|at the end of) every (?:answer|reply|response|message)\b[^.?!\n]{0,80}?"
    r"(?:https?://|www\.)|(?:https?://|www\.)\S+[^.?!\n]{0,60}?\b(?:to|in|into) every (?:answer|reply|"
    r"response)\b",
    _I,
)
_ZH_TOPIC_RULE = re.compile(
    r"在(?:你)?(?:回答|回复|答复)(?:任何|所有|每个)?(?:关于|有关|涉及)[^，。！？,\n]{1,60}?的(?:问题|请求|提问)(?:之前|时|的时候)|"
    r"关于[^，。！？,\n]{1,60}?的(?:正确|真正|真实)的?(?:答案|回答|说法)(?:是|应该是|其实是)|"
    r"每次(?:回答|回复)[^。！？\n]{0,30}?(?:链接|https?://|网址)|"
    r"(?:回答|回复|答复)[^，。！？,\n]{1,40}?(?:相关)?的?问题(?:时|的时候)[，,、]?\s*(?:你)?(?:应该|应当|要|请|一律|都|必须)"
)

_CUES: tuple[Cue, ...] = (
    Cue(
        "overrides earlier instructions",
        _EN_OVERRIDE,
        True,
        lambda m: bool(_STRONG_QUALIFIERS.search(m.group("q"))) and not _OWN.search(m.group("q")),
    ),
    Cue(_REVISES_OWN, _EN_OVERRIDE, False, lambda m: bool(_OWN.search(m.group("q")))),
    Cue(
        "overrides earlier instructions",
        _ZH_OVERRIDE,
        True,
        lambda m: bool(_STRONG_QUALIFIERS.search(m.group("q"))),
    ),
    Cue("forges a system or instruction header", _ROLE_MARKER, True),
    Cue("sets what to answer when someone asks", _EN_RULE, True),
    Cue("sets what to answer when someone asks", _ZH_RULE, True),
    Cue("sets an answer for whoever asks", _EN_WHOEVER, True),
    Cue("sets an answer for whoever asks", _ZH_WHOEVER, True),
    Cue("addresses the agent or tells it what to tell users", _EN_ADDRESS, True),
    Cue("addresses the agent or tells it what to tell users", _ZH_ADDRESS, True),
    Cue("addresses an AI reader of the content", _EN_AI_READER, True),
    Cue("addresses an AI reader of the content", _ZH_AI_READER, True),
    Cue("hides something from the user", _EN_CONCEAL, True),
    Cue("hides something from the user", _ZH_CONCEAL, True),
    Cue("a rule keyed on what a message contains", _EN_INPUT_TRIGGER, True),
    Cue("a rule keyed on what a message contains", _ZH_INPUT_TRIGGER, True),
    Cue("forges a system or instruction header", _BRACKET_MARKER, True),
    Cue("forges a dialogue with the assistant", _FORGED_DIALOGUE, True),
    Cue("sets how to answer about a topic", _EN_TOPIC_RULE, True),
    Cue("sets how to answer about a topic", _ZH_TOPIC_RULE, True),
    Cue("asks the user for credentials", _EN_PHISH, True),
    Cue("asks the user for credentials", _ZH_PHISH, True),
    Cue("sends the user's data to an address", _EN_EXFIL, True),
    Cue("sends the user's data to an address", _ZH_EXFIL, True),
    Cue("steers answers about a topic to a link", _EN_LINK_RULE, True),
    Cue("steers answers about a topic to a link", _ZH_LINK_RULE, True),
    Cue("a standing order (from now on, always, remember)", _EN_PERSIST, False),
    Cue("a standing order (from now on, always, remember)", _ZH_PERSIST, False),
    Cue("tells memory what to keep", _EN_MEMORY_DIRECTIVE, False),
    Cue("tells memory what to keep", _ZH_MEMORY_DIRECTIVE, False),
    Cue("sets the answer", _EN_ANSWER_SET, False),
    Cue("sets the answer", _ZH_ANSWER_SET, False),
    Cue("discredits earlier records", _EN_DISCREDIT, False),
    Cue("discredits earlier records", _ZH_DISCREDIT, False),
    Cue("an action on the user or their data", _EN_AGENT_GOAL, False),
    Cue("an action on the user or their data", _ZH_AGENT_GOAL, False),
    Cue("recommends a link", _EN_LINK, False),
    Cue("recommends a link", _ZH_LINK, False),
    Cue("sets what to answer when I ask", _EN_MY_RULE, False),
    Cue("sets what to answer when I ask", _ZH_MY_RULE, False),
    Cue("sets what to answer when I ask", _EN_ACTUALLY, False),
    Cue("claims to be the agent's own notes or past cases", _EN_AGENT_NOTE, False),
    Cue("claims to be the agent's own notes or past cases", _ZH_AGENT_NOTE, False),
    Cue("speaks to the agent", _EN_VOCATIVE, False),
    Cue("speaks to the agent", _ZH_VOCATIVE, False),
)


_FRAMINGS = frozenset(
    {
        _REVISES_OWN,
        "a standing order (from now on, always, remember)",
        "tells memory what to keep",
        "speaks to the agent",
        "claims to be the agent's own notes or past cases",
    }
)
"""Weak cues that frame a request (a user's preference is framed the same way); a text is held for weak
cues only when one of them says what to do (sets an answer, discredits records, acts on the user)."""


def instruction_cues(text: str) -> list[Finding]:
    """Cues (EN + ZH) of instructions aimed at the agent, one finding per match, in text order.

    A strong cue's action is ``quarantine``; a weak one's (a standing order a user may give as a
    preference) is ``flag``: callers act on weak cues only for untrusted content. Pure: no I/O.
    """
    found: list[Finding] = []
    weak: dict[str, re.Match[str]] = {}
    for cue in _CUES:
        matches = (m for m in cue.pattern.finditer(text) if cue.check is None or cue.check(m))
        for match in itertools.islice(matches, MAX_MATCHES_PER_CUE):
            if not cue.strong:
                weak.setdefault(cue.name, match)
            found.append(
                Finding(
                    INSTRUCTION,
                    f"{cue.name}: “{excerpt(match.group(0))}”",
                    QUARANTINE if cue.strong else FLAG,
                    match.span(),
                )
            )
    content = [name for name in weak if name not in _FRAMINGS]
    if content and len(weak) >= 2:  # what to do, framed or twice: an instruction, whoever wrote it
        (first, a), (second, b) = sorted(weak.items(), key=lambda item: item[1].start())[:2]
        found.append(
            Finding(
                INSTRUCTION,
                f"{first} and {second}: “{excerpt(a.group(0), 30)}” … “{excerpt(b.group(0), 30)}”",
                QUARANTINE,
                (a.start(), max(a.end(), b.end())),
            )
        )
    return first_per_span(found)
