"""The lessons bench's generated set: failed episodes with their lessons, and the requests that should
(or should not) bring a lesson back.

Each episode template holds what was done, what went wrong and the lesson, in one domain and one language,
plus several other ways to name the same kind of task (other words) and other entities (another table,
site or client). A similar-task request fills a request template (a plan, a question or a complaint)
with one of those phrasings and one of the other entities; an unrelated request is an everyday question,
or an everyday task asked with the same request templates. Everyday facts go into the same bank as
distractors, and each is asked about in other words (the floor must let a real question through).

Dev and test are split by domain AND by request template (and the unrelated tasks and fact questions
differ between them): the test split's domains and templates are never used to tune anything.
Everything is drawn from ``random.Random(seed)``: the same seed, the same set.
"""

# ruff: noqa: RUF001  (Chinese text uses full-width punctuation on purpose)

from __future__ import annotations

import random
from dataclasses import dataclass

SPLITS = ("dev", "test")
DEV_DOMAINS = frozenset({"software", "travel", "events", "household"})
"""Domains of the dev split; the others (operations, purchasing, writing) are the test split's."""


@dataclass(frozen=True)
class EpisodeTemplate:
    """One failed task, and other ways to name a task of its kind."""

    domain: str
    lang: str
    task_type: str
    situation: str
    action: str
    outcome: str
    lesson: str
    tools: tuple[str, ...]
    entity: str
    """The entity of the episode itself (``{e}`` in its texts)."""
    others: tuple[str, ...]
    """Other entities a later request names instead."""
    tasks: tuple[str, ...]
    """The same kind of task in other words, with ``{e}`` for the entity."""


def _e(*fields: object) -> EpisodeTemplate:
    return EpisodeTemplate(*fields)  # type: ignore[arg-type]


EPISODES: tuple[EpisodeTemplate, ...] = (
    # ----- software -----
    _e("software", "en", "database schema change",
       "Added a NOT NULL column to the {e} table in production",
       "ran the migration directly during business hours",
       "the table was locked for twenty minutes and checkout requests timed out",
       "Run schema migrations on large tables in small batches off-peak, and test them on a copy of "
       "production first",
       ("postgres", "alembic"), "orders", ("invoices", "customers", "shipments"),
       ("alter the {e} table to add a new column", "ship a migration that touches the {e} table",
        "change the schema of {e} in the live database")),
    _e("software", "en", "dependency upgrade",
       "Upgraded the web framework of the {e} service to a new major version",
       "bumped every package at once and deployed on Friday",
       "the service crashed on start because a removed API was still called; rollback took the evening",
       "Upgrade one major dependency at a time, read its changelog for removed APIs, and never deploy an "
       "upgrade right before the weekend",
       ("pip", "npm"), "billing", ("search", "notifications", "reporting"),
       ("move {e} to the next major release of its libraries", "update the packages the {e} app depends on",
        "bring {e} onto the latest framework version")),
    _e("software", "zh", "数据库迁移",
       "给生产环境的{e}表加了一个非空字段",
       "白天高峰期直接执行了迁移脚本",
       "表被锁了二十分钟，下单接口全部超时",
       "大表结构变更要分批执行、避开高峰，并先在生产数据副本上演练",
       ("postgres",), "订单", ("发票", "会员", "物流"),
       ("修改{e}表的结构", "给线上{e}表增加一列", "上线一个会改动{e}表的数据库变更")),
    _e("software", "zh", "依赖升级",
       "把{e}服务的框架升级到新的大版本",
       "一次性升级了所有依赖并在周五上线",
       "服务启动时调用了已删除的接口而崩溃，回滚花了一个晚上",
       "一次只升级一个大版本依赖，先看更新日志里删掉的接口，周末前不要上线升级",
       ("npm",), "支付", ("搜索", "推送", "报表"),
       ("把{e}项目的第三方库更新到最新", "给{e}换新版本的框架", "升级{e}系统用到的软件包")),
    # ----- operations -----
    _e("operations", "en", "certificate renewal",
       "The TLS certificate of the {e} expired",
       "nobody renewed it because the reminder went to a former employee's mailbox",
       "the shop was offline for three hours with browser security errors",
       "Track certificate expiry dates in monitoring with alerts to a shared on-call channel, and renew "
       "certificates weeks before they expire",
       ("certbot", "nginx"), "web shop", ("payments gateway", "customer portal", "mail server"),
       ("renew the TLS certificate on the {e}", "sort out the SSL cert for the {e}",
        "make sure HTTPS keeps working on the {e}")),
    _e("operations", "en", "production change",
       "Changed the firewall rules of the {e} cluster on a Friday evening",
       "applied the change without a peer review or a rollback plan",
       "all internal traffic was blocked and the on-call engineer needed two hours to restore access",
       "Make risky production changes only with a reviewed change plan, a tested rollback and people "
       "around to help, never late on a Friday",
       ("terraform", "iptables"), "staging", ("analytics", "production", "backup"),
       ("roll out a network change on the {e} servers", "update the access rules in {e}",
        "make a risky change to the {e} environment")),
    _e("operations", "zh", "证书续期",
       "{e}的HTTPS证书过期了",
       "续期提醒发到了已离职同事的邮箱，没人处理",
       "网站浏览器报安全错误，停了三个小时",
       "在监控里跟踪证书到期时间并提醒到值班群，提前几周续期证书",
       ("certbot",), "官网", ("支付网关", "客户门户", "邮件服务器"),
       ("给{e}续签SSL证书", "更新{e}的TLS证书", "保证{e}的https不断")),
    _e("operations", "zh", "线上变更",
       "周五晚上修改了{e}集群的防火墙规则",
       "没有评审也没有回滚方案就直接执行了",
       "内部流量全部被阻断，值班同事花了两个小时才恢复",
       "高风险的线上变更要有评审过的方案和演练过的回滚，不要在周五晚上做",
       ("terraform",), "测试", ("数据分析", "生产", "备份"),
       ("在{e}环境做一次网络变更", "改{e}服务器的访问策略", "对{e}系统做高风险的调整")),
    # ----- travel -----
    _e("travel", "en", "international trip",
       "Flew to {e} for a conference",
       "booked the flight without checking the entry requirements",
       "was refused boarding because a visa was required and the passport had under six months left",
       "Before booking an international trip, check the visa rules and the passport's validity for the "
       "destination",
       ("airline app",), "Tokyo", ("Istanbul", "Nairobi", "São Paulo"),
       ("book flights to {e}", "plan a trip abroad to {e}", "organise travel to {e} next month")),
    _e("travel", "en", "hotel booking",
       "Booked a hotel in {e} for a family holiday",
       "picked the cheapest non-refundable rate on a booking site",
       "the dates changed and the whole stay was lost with no refund",
       "When plans may still change, book refundable rooms and read the cancellation terms before paying",
       ("booking site",), "Lisbon", ("Rome", "Vienna", "Edinburgh"),
       ("reserve accommodation in {e}", "find a place to stay in {e}", "get a room in {e} for our holiday")),
    _e("travel", "zh", "出国行程",
       "去{e}参加会议",
       "订机票前没有查入境要求",
       "登机时被拒，因为需要签证而且护照有效期不足六个月",
       "订国际行程前先查目的地的签证规定和护照有效期",
       ("航旅app",), "东京", ("伊斯坦布尔", "内罗毕", "圣保罗"),
       ("订去{e}的机票", "安排一趟去{e}的出国旅行", "下个月去{e}出差")),
    _e("travel", "zh", "酒店预订",
       "全家去{e}度假订了酒店",
       "在订房网站上选了最便宜的不可退房价",
       "日期改了，整笔房费都没退",
       "行程可能变时订可免费取消的房间，付款前看清退改规则",
       ("订房网站",), "三亚", ("厦门", "大理", "青岛"),
       ("在{e}订住的地方", "找{e}的民宿", "给全家订{e}的房间")),
    # ----- purchasing -----
    _e("purchasing", "en", "supplier order",
       "Ordered 500 laptops for the office from {e}",
       "paid the full amount up front based on a quote sent by email",
       "the supplier delivered half and stopped answering; the money was hard to recover",
       "For a large purchase, verify the supplier, pay in stages against deliveries and get a signed "
       "contract instead of an email quote",
       ("procurement portal",), "a new vendor",
       ("an overseas wholesaler", "a reseller", "a marketplace seller"),
       ("buy a big batch of equipment from {e}", "place a bulk order with {e}",
        "purchase office hardware from {e}")),
    _e("purchasing", "en", "software subscription",
       "Signed up for the {e} subscription for the team",
       "accepted the annual plan with auto-renewal and did not note the renewal date",
       "it renewed for another year at a higher price for seats nobody used",
       "When buying a subscription, note the renewal date, turn off auto-renew until it is reviewed, and "
       "count the seats actually used",
       ("credit card",), "design tool", ("video conferencing", "CRM", "project tracker"),
       ("sign the team up for a {e} plan", "pay for licences of the {e}",
        "choose a {e} vendor for the team")),
    _e("purchasing", "zh", "供应商采购",
       "从{e}采购了五百台办公电脑",
       "只凭邮件报价就全额预付了货款",
       "对方只发了一半货就失联了，钱很难追回",
       "大额采购要先核实供应商，按到货分期付款，签正式合同而不是只凭邮件报价",
       ("采购系统",), "一家新供应商", ("海外批发商", "代理商", "网店卖家"),
       ("向{e}批量订购设备", "找{e}买一批办公硬件", "跟{e}下一个大单")),
    _e("purchasing", "zh", "软件订阅",
       "给团队开通了{e}的订阅",
       "选了自动续费的年付方案，也没记续费日期",
       "又按更高的价格续了一年，很多席位根本没人用",
       "买订阅时记下续费日期，先关掉自动续费，按实际使用人数买席位",
       ("信用卡",), "设计软件", ("视频会议", "客户管理系统", "项目管理工具"),
       ("给团队买{e}的会员", "采购{e}的账号", "为团队选一个{e}服务")),
    # ----- events -----
    _e("events", "en", "event venue",
       "Organised the {e} in a rented hall",
       "confirmed the venue by phone and never got the booking in writing",
       "on the day the hall was double-booked and forty guests waited outside",
       "Get every venue booking confirmed in writing with the date, hours and deposit, and call again a "
       "week before the event",
       ("email",), "company summer party", ("book launch", "charity dinner", "team offsite"),
       ("host the {e} somewhere", "book a location for the {e}", "arrange a space for the {e}")),
    _e("events", "en", "catering",
       "Ordered catering for the {e}",
       "gave the caterer a head count but never asked guests about allergies",
       "two guests had nut allergies and could not eat most of the menu",
       "Collect dietary needs and allergies with the invitation replies and pass them to the caterer",
       ("spreadsheet",), "team dinner", ("wedding reception", "client workshop", "birthday lunch"),
       ("order food for the {e}", "plan the menu for the {e}", "get a caterer for the {e}")),
    _e("events", "zh", "活动场地",
       "在租来的大厅办{e}",
       "只是电话确认了场地，没有书面预订",
       "当天场地被重复预订，四十位客人在门外等",
       "场地预订要拿到书面确认（日期、时段、定金），活动前一周再打电话确认",
       ("邮件",), "公司年会", ("新书发布会", "慈善晚宴", "团建活动"),
       ("给{e}找个场地", "预订{e}的地方", "安排{e}的会场")),
    _e("events", "zh", "餐饮安排",
       "给{e}订了餐",
       "只告诉了餐饮公司人数，没问客人的过敏情况",
       "两位客人对坚果过敏，大部分菜都不能吃",
       "在收集回执时一并收集忌口和过敏信息，并交给餐饮方",
       ("表格",), "部门聚餐", ("婚宴", "客户研讨会", "生日午宴"),
       ("给{e}订餐", "安排{e}的菜单", "找一家餐饮公司负责{e}")),
    # ----- writing -----
    _e("writing", "en", "report deadline",
       "Wrote the {e} for the board",
       "started the day before the deadline and sent it without anyone reviewing the figures",
       "the board found two wrong numbers and the report had to be withdrawn",
       "Start long documents early, leave a day for someone else to check the figures, and send the draft "
       "for review before the final version",
       ("spreadsheet", "word processor"), "quarterly report", ("annual review", "grant proposal",
                                                               "investor update"),
       ("draft the {e}", "put together the {e} for the directors", "write up the {e} before it is due")),
    _e("writing", "en", "publishing an article",
       "Published an article on the {e}",
       "quoted figures from memory without checking the sources",
       "readers pointed out that a statistic was wrong and a correction had to be printed",
       "Check every figure and quote against its source before publishing, and keep the links in the draft",
       ("CMS",), "company blog", ("newsletter", "trade magazine", "news site"),
       ("write a post for the {e}", "publish a piece on the {e}", "get an article out on the {e}")),
    _e("writing", "zh", "报告截止",
       "给董事会写{e}",
       "截止前一天才开始写，数字没人复核就发出去了",
       "董事会发现两个数字错了，报告被撤回",
       "长文档要提前开始，留一天让别人核对数据，先发草稿审阅再定稿",
       ("表格",), "季度报告", ("年度总结", "项目申报书", "投资人简报"),
       ("写{e}", "准备给领导的{e}", "赶在截止前完成{e}")),
    _e("writing", "zh", "发表文章",
       "在{e}上发了一篇文章",
       "凭记忆引用了数据，没有核对出处",
       "读者指出一个统计数字是错的，只好刊登更正",
       "发表前逐一对照出处核实数字和引文，并在草稿里保留链接",
       ("后台",), "公司公众号", ("行业杂志", "新闻网站", "个人博客"),
       ("给{e}写一篇稿子", "在{e}发布文章", "准备{e}的推文")),
    # ----- household -----
    _e("household", "en", "home repair",
       "Replaced the {e} myself",
       "did not turn off the water at the main valve first",
       "water flooded the floor and damaged the cabinet below",
       "Before plumbing work, shut off the water at the main valve and open a tap to drain the pressure",
       ("wrench",), "kitchen tap", ("bathroom faucet", "toilet fill valve", "shower mixer"),
       ("fix the leaking {e}", "swap out the {e}", "install a new {e}")),
    _e("household", "en", "appliance purchase",
       "Bought a new {e} for the flat",
       "did not measure the space or the doorway before ordering",
       "it did not fit through the door and had to be sent back with a return fee",
       "Measure the space, the doorways and the stairs before ordering large furniture or appliances",
       ("tape measure",), "fridge", ("sofa", "washing machine", "wardrobe"),
       ("get a new {e} delivered", "order a {e} for the apartment", "replace our old {e}")),
    _e("household", "zh", "家庭维修",
       "自己动手换了{e}",
       "没有先关总水阀",
       "水漫了一地，泡坏了下面的柜子",
       "做水管活之前先关总水阀，再打开龙头放掉水压",
       ("扳手",), "厨房水龙头", ("浴室龙头", "马桶进水阀", "花洒"),
       ("修一下漏水的{e}", "换一个新的{e}", "自己装{e}")),
    _e("household", "zh", "家电购买",
       "给家里买了新{e}",
       "下单前没有量空间和门的宽度",
       "搬不进门，只能退货还付了运费",
       "买大件家具家电前先量好摆放空间、门宽和楼梯",
       ("卷尺",), "冰箱", ("沙发", "洗衣机", "衣柜"),
       ("买一台新{e}", "给新房订{e}", "把旧{e}换掉")),
)  # fmt: skip

REQUEST_TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "en": (
            "Plan for today: {t}.",
            "How should I {t}?",
            "Ugh, I have to {t} again and it never goes smoothly.",
        ),
        "zh": ("今天的计划：{t}。", "我该怎么{t}？", "又要{t}了，每次都出问题，烦死了。"),
    },
    "test": {
        "en": (
            "Next week I'm going to {t}. Can you help me make a plan?",
            "Any advice before I {t}?",
            "My manager wants me to {t} and I'm dreading it.",
        ),
        "zh": ("下周要{t}，帮我列个计划吧。", "{t}之前有什么要注意的吗？", "领导让我{t}，我有点发愁。"),
    },
}
"""How a similar task is asked (a plan, a question, a complaint); dev and test use different ones."""

UNRELATED: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "en": (
            "What's a quick vegetarian dinner I can cook tonight?",
            "Which films won best picture in the nineties?",
            "Recommend a podcast about astronomy.",
            "How many cups of water should I drink a day?",
            "What's the capital of Australia?",
            "Give me a stretching routine for my back.",
        ),
        "zh": (
            "今晚做什么素菜比较快？",
            "推荐一个讲天文的播客。",
            "澳大利亚的首都是哪里？",
            "给我一套拉伸背部的动作。",
            "一天应该喝多少水？",
            "九十年代有哪些好看的电影？",
        ),
    },
    "test": {
        "en": (
            "Tell me a fun fact about octopuses.",
            "What should I name my new cat?",
            "Suggest a board game for four players.",
            "How do I get better at chess openings?",
            "What's a good song to learn on the guitar?",
            "Why is the sky blue?",
        ),
        "zh": (
            "讲一个关于章鱼的趣事。",
            "我的新猫叫什么名字好？",
            "推荐一个适合四个人玩的桌游。",
            "吉他入门学哪首歌好？",
            "天空为什么是蓝色的？",
            "怎么提高国际象棋开局水平？",
        ),
    },
}
"""Everyday questions no lesson is about."""

UNRELATED_TASKS: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "en": (
            "repot the cactus on the balcony",
            "learn a few card tricks",
            "teach my daughter to ride a bike",
            "train for a 5k run",
            "bake a loaf of sourdough bread",
            "start a vegetable patch in the garden",
            "practise the piano piece for my lesson",
            "get the dog to stop pulling on the lead",
            "memorise a short poem",
            "paint a watercolour of the harbour",
        ),
        "zh": (
            "给阳台上的仙人掌换盆",
            "学几个扑克牌魔术",
            "教女儿骑自行车",
            "练习跑五公里",
            "烤一个酸面包",
            "在院子里开一块菜地",
            "练熟钢琴课的曲子",
            "让狗散步时不再拽绳子",
            "背一首短诗",
            "画一幅港口的水彩画",
        ),
    },
    "test": {
        "en": (
            "knit a scarf for the winter",
            "learn to juggle three balls",
            "brew a pot of jasmine tea properly",
            "teach my parrot a new word",
            "improve my freestyle swimming",
            "grow tomatoes on the windowsill",
            "solve a Rubik's cube",
            "photograph the night sky",
            "make fresh pasta by hand",
            "take up birdwatching in the park",
        ),
        "zh": (
            "织一条过冬的围巾",
            "学会抛接三个球",
            "泡一壶好喝的茉莉花茶",
            "教鹦鹉说一个新词",
            "提高自由泳的水平",
            "在窗台上种番茄",
            "还原魔方",
            "拍星空的照片",
            "自己做手擀面",
            "去公园观鸟",
        ),
    },
}
"""Everyday tasks no lesson is about, asked with the split's request templates (so the templates' own
words, "plan", "advice", "my manager", are no cue): a lesson must come for the task, not the wording."""

DISTRACTORS: dict[str, tuple[str, ...]] = {
    "en": (
        "I'm allergic to penicillin.",
        "I prefer dark mode on every screen.",
        "My standing desk is by the window in the home office.",
        "My passport number ends in 4471 and I keep it in the top drawer.",
        "The monthly sales report is due on the fifth.",
        "I play badminton every Tuesday evening.",
        "My sister's birthday is on March 3rd.",
        "I take the 8:10 train to work.",
        "My favourite cuisine is Thai food.",
        "Our wifi password is on the fridge magnet.",
        "I'm learning Spanish on weekends.",
        "The dentist appointment is next Thursday at 3pm.",
        "I drink my coffee black.",
        "My car is a blue hatchback.",
        "I water the plants on Sundays.",
        "My manager is called Priya.",
        "I'm reading a novel about a lighthouse keeper.",
        "My gym membership renews in June.",
    ),
    "zh": (
        "我对青霉素过敏。",
        "我所有屏幕都喜欢用深色模式。",
        "我的升降桌放在书房窗边。",
        "护照放在最上面的抽屉里。",
        "月度销售报告每月五号交。",
        "我每周二晚上打羽毛球。",
        "我妹妹的生日是三月三号。",
        "我每天坐八点十分的地铁上班。",
        "我最喜欢吃泰国菜。",
        "家里的无线网密码贴在冰箱上。",
        "我周末在学西班牙语。",
        "牙医预约在下周四下午三点。",
        "我喝咖啡不加糖。",
        "我的车是一辆蓝色两厢车。",
        "我每个周日给花浇水。",
        "我的经理叫王芳。",
        "我在读一本关于灯塔看守人的小说。",
        "健身房会员六月到期。",
    ),
}
"""Everyday facts retained into every bank, in the bank's language."""

FACT_QUESTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "dev": {
        "en": (
            "Am I allergic to any medicine?",
            "Do I like light or dark themes on my screens?",
            "Where is my standing desk?",
            "Where do I keep my passport?",
            "When is the monthly sales report due?",
            "What sport do I play on Tuesdays?",
            "When is my sister's birthday?",
            "Which train do I take to work?",
            "What kind of food do I like most?",
            "Where can I find the wifi password?",
            "What language am I learning?",
            "When is my dentist appointment?",
            "How do I take my coffee?",
            "What car do I drive?",
            "When do I water the plants?",
            "What's my manager's name?",
            "What book am I reading at the moment?",
            "When does my gym membership renew?",
        ),
        "zh": (
            "我对什么药过敏？",
            "我喜欢屏幕用什么模式？",
            "我的升降桌放在哪里？",
            "我的护照放在哪儿？",
            "月度销售报告什么时候交？",
            "我周二晚上做什么运动？",
            "我妹妹生日是哪天？",
            "我每天几点坐地铁上班？",
            "我最喜欢吃什么菜？",
            "家里的无线网密码在哪里？",
            "我周末在学什么？",
            "牙医预约是什么时候？",
            "我喝咖啡加糖吗？",
            "我开的是什么车？",
            "我哪天给花浇水？",
            "我的经理叫什么名字？",
            "我最近在读什么书？",
            "健身房会员什么时候到期？",
        ),
    },
    "test": {
        "en": (
            "Which antibiotic should I avoid?",
            "What display theme do I prefer?",
            "Where did I put the standing desk?",
            "What are the last digits of my passport number?",
            "What day of the month does the sales report have to be in?",
            "When is my badminton game?",
            "What date should I send my sister a birthday card?",
            "What time is my morning commute train?",
            "Which cuisine is my favourite?",
            "Where did we put the wifi password?",
            "What do I study at weekends?",
            "What time do I see the dentist?",
            "Do I put milk in my coffee?",
            "What colour is my car?",
            "Which day are the plants watered?",
            "Who is my boss?",
            "What is the novel I'm reading about?",
            "When is the gym membership up for renewal?",
        ),
        "zh": (
            "哪种抗生素我不能用？",
            "我的显示主题偏好是什么？",
            "书房里的升降桌在什么位置？",
            "护照收在哪个抽屉？",
            "销售报告每个月几号截止？",
            "我什么时候打羽毛球？",
            "什么时候给妹妹过生日？",
            "我上班坐哪一班地铁？",
            "我最爱哪个国家的菜？",
            "去哪儿找wifi密码？",
            "我在学哪门外语？",
            "我几点去看牙？",
            "给我泡咖啡要放糖吗？",
            "我的车是什么颜色？",
            "家里的花什么时候浇？",
            "我的上司是谁？",
            "我在读的小说讲的是什么？",
            "健身卡哪个月到期？",
        ),
    },
}
"""A question about each everyday fact (in the order of :data:`DISTRACTORS`), in other words; dev and test
ask differently. A relevance floor that silences unrelated requests must still let these through."""


@dataclass(frozen=True)
class Request:
    """One request to recall with; ``episode`` is the index of the episode whose lesson it needs, or -1."""

    text: str
    episode: int
    template: int
    fact: str = ""
    """For a question about an everyday fact: that fact (it must come back); empty otherwise."""


@dataclass(frozen=True)
class Bank:
    """One bank of the set: its episodes (indexes into :data:`EPISODES`), distractors and requests."""

    name: str
    split: str
    lang: str
    episodes: tuple[int, ...]
    distractors: tuple[str, ...]
    similar: tuple[Request, ...]
    unrelated: tuple[Request, ...]
    facts: tuple[Request, ...] = ()
    """Questions about the bank's everyday facts."""


def split_of(template: EpisodeTemplate) -> str:
    """Which split an episode belongs to: by its domain."""
    return "dev" if template.domain in DEV_DOMAINS else "test"


def episode_texts(template: EpisodeTemplate) -> dict[str, str]:
    """The episode's fields with its own entity filled in."""
    fill = template.entity
    return {
        "situation": template.situation.format(e=fill),
        "action": template.action.format(e=fill),
        "outcome": template.outcome.format(e=fill),
        "lesson": template.lesson.format(e=fill),
    }


def generate(seed: int, per_episode: int = 3, distractors: int = 15) -> tuple[Bank, ...]:
    """One bank per split and language; ``per_episode`` similar requests per episode."""
    rng = random.Random(seed)
    banks = []
    for split in SPLITS:
        for lang in ("en", "zh"):
            chosen = tuple(i for i, t in enumerate(EPISODES) if split_of(t) == split and t.lang == lang)
            templates = REQUEST_TEMPLATES[split][lang]
            similar = []
            for index in chosen:
                template = EPISODES[index]
                pairs = [(t, f) for t in range(len(templates)) for f in range(len(template.tasks))]
                rng.shuffle(pairs)
                for form, task in pairs[:per_episode]:
                    entity = rng.choice(template.others)
                    text = templates[form].format(t=template.tasks[task].format(e=entity))
                    similar.append(Request(text, index, form))
            asked = random.Random(f"{seed}-{split}-{lang}-unrelated")  # the similar requests stay as before
            unrelated = (
                *(Request(text, -1, -1) for text in UNRELATED[split][lang]),
                *(
                    Request(templates[form].format(t=task), -1, form)
                    for task in UNRELATED_TASKS[split][lang]
                    for form in (asked.randrange(len(templates)),)
                ),
            )
            facts = list(DISTRACTORS[lang])
            rng.shuffle(facts)
            kept = facts[:distractors]
            questions = tuple(
                Request(question, -1, -1, fact)
                for fact, question in zip(DISTRACTORS[lang], FACT_QUESTIONS[split][lang], strict=True)
                if fact in kept
            )
            banks.append(
                Bank(
                    f"{split}-{lang}",
                    split,
                    lang,
                    chosen,
                    tuple(kept),
                    tuple(similar),
                    unrelated,
                    questions,
                )
            )
    return tuple(banks)
