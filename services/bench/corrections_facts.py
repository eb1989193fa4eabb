"""The facts the corrections set is built from: one attribute of one thing, in English or Chinese.

Each fact is a sentence with the owner (``{o}``) and the value (``{v}``) left open, its past-tense form
(a story about another time), the question that asks for it, three values it can take, and a sibling
sentence about another attribute of the same thing (``{w}``, with its own values). The values of one fact
are never part of each other, so "the old value is not in the top memory" can be checked on text.
"""

# ruff: noqa: RUF001, E501  (Chinese text uses full-width punctuation; table rows are sentences, kept whole)

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """One attribute of one thing, and how a user states it, asks for it, and talks next to it."""

    subject: str
    """people, work, health, home, schedules, money, tools or pets."""
    lang: str
    statement: str
    """Present-tense sentence with ``{o}`` (owner) and ``{v}`` (value), no final punctuation."""
    past: str
    """The same in the past tense (English; Chinese reuses ``statement``)."""
    question: str
    values: tuple[str, str, str]
    sibling: str
    """Another attribute of the same thing, with ``{o}`` and ``{w}``."""
    sibling_values: tuple[str, str]
    owner: str
    """The user's own owner word ("my", "our", "我的", ...)."""
    others: tuple[str, ...]
    """Owners that are someone else ("my sister's", "邻居家的", ...)."""


def _f(*fields: object) -> Fact:
    return Fact(*fields)  # type: ignore[arg-type]


EN_FACTS: tuple[Fact, ...] = (
    _f("people", "en", "{o} sister lives in {v}", "{o} sister lived in {v}", "Where does my sister live?",
       ("Lisbon", "Glasgow", "Nairobi"), "{o} sister works as {w}", ("a nurse", "an architect"),
       "my", ("my colleague's", "Tom's", "my neighbour's")),
    _f("people", "en", "{o} best friend's name is {v}", "{o} best friend's name was {v}",
       "What is my best friend's name?", ("Priya", "Marcus", "Elena"),
       "{o} best friend's birthday is in {w}", ("June", "October"), "my", ("my husband's", "Jake's")),
    _f("people", "en", "{o} son goes to {v}", "{o} son went to {v}", "Which school does my son go to?",
       ("Hillcrest Primary", "Oakfield Academy", "St Anne's School"), "{o} son's teacher is {w}",
       ("Mrs Patel", "Mr Okafor"), "my", ("my neighbour's", "my cousin's")),
    _f("work", "en", "{o} team's stand-up is at {v}", "{o} team's stand-up was at {v}",
       "What time is our team's stand-up?", ("9:15", "10:30", "11:45"), "{o} team's stand-up happens in {w}",
       ("the Orion room", "the kitchen area"), "our", ("the sales team's", "the design team's")),
    _f("work", "en", "{o} manager is {v}", "{o} manager was {v}", "Who is my manager?",
       ("Dana Whitfield", "Rahul Mehta", "Sofia Lindqvist"), "{o} manager sits on {w}",
       ("the third floor", "the fifth floor"), "my", ("my wife's", "Tom's")),
    _f("work", "en", "{o} invoices go out on the {v} of each month", "{o} invoices went out on the {v} of each month",
       "When do our invoices go out?", ("1st", "3rd", "28th"), "{o} invoices are sent from {w}",
       ("the Xero account", "the QuickBooks account"), "our", ("our supplier's", "the agency's")),
    _f("health", "en", "{o} dentist appointment is on {v}", "{o} dentist appointment was on {v}",
       "When is my dentist appointment?", ("Tuesday", "Thursday", "Saturday"), "{o} dentist is {w}",
       ("Dr Alvarez", "Dr Chen"), "my", ("my daughter's", "my husband's")),
    _f("health", "en", "{o} blood pressure medication is {v}", "{o} blood pressure medication was {v}",
       "Which blood pressure medication do I take?", ("amlodipine", "lisinopril", "losartan"),
       "{o} blood pressure medication is taken {w}", ("every morning", "with dinner"), "my",
       ("my father's", "my aunt's")),
    _f("health", "en", "{o} weekly running goal is {v}", "{o} weekly running goal was {v}",
       "What is my weekly running goal?", ("20 km", "35 km", "50 km"), "{o} running shoes are {w}",
       ("Asics", "Hokas"), "my", ("my brother's", "Anna's")),
    _f("home", "en", "{o} rent is due on the {v}", "{o} rent was due on the {v}", "When is our rent due?",
       ("5th", "12th", "27th"), "{o} rent is {w} a month", ("1,200 euros", "950 euros"), "our",
       ("our neighbours'", "my cousin's")),
    _f("home", "en", "{o} boiler is serviced by {v}", "{o} boiler was serviced by {v}", "Who services our boiler?",
       ("Northgate Heating", "BrightFlame", "Castle Plumbing"), "{o} boiler is in {w}",
       ("the loft", "the utility room"), "our", ("my parents'", "the landlord's")),
    _f("home", "en", "{o} recycling goes out on {v}", "{o} recycling went out on {v}",
       "Which day does our recycling go out?", ("Mondays", "Wednesdays", "Fridays"), "{o} recycling bin is {w}",
       ("the blue one", "the green one"), "our", ("the neighbours'", "my mum's")),
    _f("schedules", "en", "{o} flight to Oslo leaves at {v}", "{o} flight to Oslo left at {v}",
       "What time does my flight to Oslo leave?", ("7:40", "13:05", "18:50"), "{o} flight to Oslo departs from {w}",
       ("Terminal 2", "Terminal 5"), "my", ("my boss's", "Maria's")),
    _f("schedules", "en", "{o} piano lesson is on {v}", "{o} piano lesson was on {v}", "When is my piano lesson?",
       ("Monday evenings", "Wednesday afternoons", "Sunday mornings"), "{o} piano teacher is {w}",
       ("Mr Hargreaves", "Ms Dubois"), "my", ("my daughter's", "Leo's")),
    _f("schedules", "en", "{o} book club meets at {v}", "{o} book club met at {v}", "Where does our book club meet?",
       ("the library", "Cafe Rosa", "Jo's flat"), "{o} book club is reading {w}", ("Middlemarch", "Beloved"),
       "our", ("my mother's", "Priya's")),
    _f("money", "en", "{o} monthly grocery budget is {v}", "{o} monthly grocery budget was {v}",
       "What is my monthly grocery budget?", ("400 dollars", "650 dollars", "820 dollars"),
       "{o} monthly budget for eating out is {w}", ("150 dollars", "90 dollars"), "my",
       ("my flatmate's", "my sister's")),
    _f("money", "en", "{o} savings account is with {v}", "{o} savings account was with {v}",
       "Which bank is my savings account with?", ("Monzo", "Starling", "Barclays"), "{o} savings account pays {w} interest",
       ("3.1%", "4.25%"), "my", ("my partner's", "Dad's")),
    _f("money", "en", "{o} phone plan costs {v} a month", "{o} phone plan cost {v} a month",
       "How much does my phone plan cost?", ("18 euros", "25 euros", "39 euros"), "{o} phone plan includes {w} of data",
       ("20 GB", "50 GB"), "my", ("my son's", "Jake's")),
    _f("tools", "en", "{o} code editor is {v}", "{o} code editor was {v}", "Which code editor do I use?",
       ("VS Code", "Neovim", "Sublime Text"), "{o} code editor theme is {w}", ("Solarized", "Dracula"), "my",
       ("my teammate's", "Ravi's")),
    _f("tools", "en", "{o} project runs on Python {v}", "{o} project ran on Python {v}",
       "Which Python version does our project run on?", ("3.9", "3.11", "3.12"), "{o} project is deployed on {w}",
       ("Heroku", "Fly.io"), "our", ("the other team's", "our client's")),
    _f("tools", "en", "{o} database is {v}", "{o} database was {v}", "Which database do we use?",
       ("PostgreSQL", "MySQL", "SQLite"), "{o} database backups run {w}", ("nightly", "every hour"), "our",
       ("the vendor's", "our partner team's")),
    _f("pets", "en", "{o} dog's name is {v}", "{o} dog's name was {v}", "What is my dog's name?",
       ("Biscuit", "Pepper", "Juno"), "{o} dog is {w} years old", ("four", "seven"), "my",
       ("my neighbour's", "Sam's")),
    _f("pets", "en", "{o} cat eats {v}", "{o} cat ate {v}", "What does my cat eat?",
       ("salmon kibble", "chicken pate", "tuna flakes"), "{o} cat sleeps {w}",
       ("on the sofa", "in the laundry basket"), "my", ("my aunt's", "Lucy's")),
    _f("pets", "en", "{o} vet is {v}", "{o} vet was {v}", "Who is our vet?",
       ("Greenpaw Clinic", "Riverside Vets", "Dr Hollis"), "{o} vet is open {w}", ("until 7pm", "on Saturdays"),
       "our", ("our friends'", "my sister's")),
    # Statements shaped otherwise: other verbs than "is", a value before the end, questions in other words.
    _f("people", "en", "{o} parents are visiting on {v}", "{o} parents visited on {v}", "When are my parents visiting?",
       ("the 14th", "the 21st", "the 30th"), "{o} parents are flying in from {w}", ("Dublin", "Lyon"), "my",
       ("my flatmate's", "Nadia's")),
    _f("work", "en", "{o} team uses {v} for chat", "{o} team used {v} for chat", "Which chat tool does my team use?",
       ("Slack", "Teams", "Discord"), "{o} team meets in person on {w}", ("Tuesdays", "Thursdays"), "my",
       ("my sister's", "Tom's")),
    _f("work", "en", "{o} quarterly review happens in {v}", "{o} quarterly review happened in {v}",
       "When does our quarterly review happen?", ("March", "April", "May"), "{o} quarterly review is run by {w}",
       ("the finance lead", "Priya Nair"), "our", ("the sales team's", "our client's")),
    _f("health", "en", "{o} physio sessions cost {v} each", "{o} physio sessions cost {v} each back then",
       "How much do my physio sessions cost?", ("45 pounds", "60 pounds", "75 pounds"),
       "{o} physio sessions are at {w}", ("the leisure centre", "the clinic on Mill Road"), "my",
       ("my mum's", "Greg's")),
    _f("health", "en", "{o} allergy is to {v}", "{o} allergy was to {v}", "What am I allergic to?",
       ("peanuts", "shellfish", "penicillin"), "{o} allergy is treated with {w}", ("antihistamines", "an EpiPen"),
       "my", ("my son's", "Lucy's")),
    _f("home", "en", "{o} landlord is {v}", "{o} landlord was {v}", "Who is our landlord?",
       ("Mr Daley", "Harbour Lettings", "Mrs Quinn"), "{o} landlord lives in {w}", ("Brighton", "the flat upstairs"),
       "our", ("my cousin's", "the neighbours'")),
    _f("home", "en", "{o} internet provider is {v}", "{o} internet provider was {v}", "Who is our internet provider?",
       ("Virgin Media", "Hyperoptic", "Zen Internet"), "{o} internet speed is {w}", ("500 Mbps", "1 Gbps"), "our",
       ("my parents'", "the office's")),
    _f("schedules", "en", "{o} yoga class starts at {v}", "{o} yoga class started at {v}",
       "What time does my yoga class start?", ("6:30", "7:15", "8:05"), "{o} yoga class is taught by {w}",
       ("Ines", "Marco"), "my", ("my wife's", "Zoe's")),
    _f("schedules", "en", "{o} car's MOT is due in {v}", "{o} car's MOT was due in {v}", "When is my car's MOT due?",
       ("January", "June", "September"), "{o} car is parked {w}", ("on Elm Road", "in the garage"), "my",
       ("my dad's", "Chloe's")),
    _f("money", "en", "{o} council tax is {v} a month", "{o} council tax was {v} a month",
       "How much is our council tax?", ("140 pounds", "162 pounds", "185 pounds"),
       "{o} council tax is paid from {w}", ("the joint account", "the savings pot"), "our",
       ("my brother's", "the landlord's")),
    _f("tools", "en", "{o} laptop runs {v}", "{o} laptop ran {v}", "Which operating system does my laptop run?",
       ("Windows 11", "Ubuntu", "macOS"), "{o} laptop has {w} of memory", ("16 GB", "32 GB"), "my",
       ("my son's", "Ben's")),
    _f("pets", "en", "{o} rabbit is called {v}", "{o} rabbit was called {v}", "What is my rabbit called?",
       ("Clover", "Nibbles", "Hazel"), "{o} rabbit eats {w}", ("kale", "timothy hay"), "my",
       ("my niece's", "Omar's")),
)  # fmt: skip

ZH_FACTS: tuple[Fact, ...] = (
    _f("people", "zh", "{o}姐姐住在{v}", "", "我姐姐住在哪里？", ("杭州", "成都", "青岛"),
       "{o}姐姐在{w}工作", ("市医院", "农业银行"), "我", ("我同事的", "小王的", "邻居的")),
    _f("people", "zh", "{o}最好的朋友叫{v}", "", "我最好的朋友叫什么名字？", ("李娜", "陈浩", "王芳"),
       "{o}最好的朋友生日在{w}", ("六月", "十月"), "我", ("我老公", "小张", "我表妹")),
    _f("people", "zh", "{o}儿子在{v}上学", "", "我儿子在哪个学校上学？", ("实验小学", "育才小学", "外国语学校"),
       "{o}儿子的班主任是{w}", ("刘老师", "赵老师"), "我", ("邻居家", "我同事的")),
    _f("work", "zh", "{o}的站会在{v}开", "", "我们团队的站会几点开？", ("九点一刻", "十点半", "十一点四十"),
       "{o}的站会在{w}开", ("猎户座会议室", "茶水间"), "我们团队", ("设计组", "隔壁团队")),
    _f("work", "zh", "{o}领导是{v}", "", "我的领导是谁？", ("张伟", "周敏", "孙涛"),
       "{o}领导的办公室在{w}", ("三楼", "五楼"), "我的", ("我老婆的", "小李的")),
    _f("work", "zh", "{o}发票每月{v}开出", "", "我们公司的发票每月几号开出？", ("1号", "3号", "28号"),
       "{o}发票由{w}负责", ("财务部", "外包会计"), "我们公司的", ("供应商的", "合作方的")),
    _f("health", "zh", "{o}牙医预约在{v}", "", "我的牙医预约是哪天？", ("周二", "周四", "周六"),
       "{o}牙医是{w}", ("王医生", "陈医生"), "我的", ("我女儿的", "我爸的")),
    _f("health", "zh", "{o}降压药是{v}", "", "我吃的降压药是哪种？", ("氨氯地平", "缬沙坦", "硝苯地平"),
       "{o}降压药在{w}吃", ("每天早上", "晚饭后"), "我的", ("我爸的", "我姑姑的")),
    _f("health", "zh", "{o}每周跑步目标是{v}", "", "我每周跑步的目标是多少？", ("20公里", "35公里", "50公里"),
       "{o}跑鞋是{w}", ("亚瑟士", "李宁"), "我的", ("我哥的", "小美的")),
    _f("home", "zh", "{o}房租每月{v}交", "", "我们的房租每月几号交？", ("5号", "12号", "27号"),
       "{o}房租每月{w}", ("四千二", "三千八"), "我们的", ("邻居家的", "我表哥的")),
    _f("home", "zh", "{o}热水器是{v}负责保养的", "", "我们家热水器是谁负责保养的？",
       ("北港暖通", "光明维修", "城东水电"), "{o}热水器装在{w}", ("阁楼", "洗衣房"), "我们家",
       ("我爸妈家", "房东家")),
    _f("home", "zh", "{o}垃圾{v}收", "", "我们小区的垃圾哪天收？", ("每周一", "每周三", "每周五"),
       "{o}垃圾桶是{w}", ("蓝色的", "绿色的"), "我们小区的", ("隔壁小区的", "我妈那边的")),
    _f("schedules", "zh", "{o}去大连的航班{v}起飞", "", "我去大连的航班几点起飞？",
       ("早上七点四十", "下午一点零五", "晚上六点五十"), "{o}去大连的航班从{w}出发", ("T2航站楼", "T3航站楼"),
       "我", ("我老板", "玛丽")),
    _f("schedules", "zh", "{o}钢琴课在{v}", "", "我的钢琴课是什么时候？", ("周一晚上", "周三下午", "周日上午"),
       "{o}钢琴老师是{w}", ("黄老师", "杜老师"), "我的", ("我女儿的", "乐乐的")),
    _f("schedules", "zh", "{o}读书会在{v}聚", "", "我们读书会在哪里聚？", ("市图书馆", "玫瑰咖啡馆", "小周家"),
       "{o}读书会正在读{w}", ("《围城》", "《活着》"), "我们", ("我妈她们", "公司")),
    _f("money", "zh", "{o}每月买菜预算是{v}", "", "我每月的买菜预算是多少？", ("两千元", "三千五百元", "四千二百元"),
       "{o}每月外出吃饭预算是{w}", ("八百元", "五百元"), "我", ("我室友", "我姐")),
    _f("money", "zh", "{o}储蓄账户开在{v}", "", "我的储蓄账户开在哪家银行？", ("招商银行", "工商银行", "建设银行"),
       "{o}储蓄账户的年利率是{w}", ("百分之二点一", "百分之一点八"), "我的", ("我老公的", "我爸的")),
    _f("money", "zh", "{o}手机套餐每月{v}", "", "我的手机套餐每月多少钱？", ("58元", "88元", "128元"),
       "{o}手机套餐包含{w}流量", ("30G", "60G"), "我的", ("我儿子的", "小杰的")),
    _f("tools", "zh", "{o}代码编辑器是{v}", "", "我用的代码编辑器是哪个？", ("VS Code", "Neovim", "Sublime Text"),
       "{o}代码编辑器主题是{w}", ("Solarized", "Dracula"), "我的", ("我同事的", "阿强的")),
    _f("tools", "zh", "{o}项目运行在Python {v}上", "", "我们项目用的是哪个Python版本？", ("3.9", "3.11", "3.12"),
       "{o}项目部署在{w}", ("阿里云", "腾讯云"), "我们", ("另一个组的", "客户的")),
    _f("tools", "zh", "{o}数据库是{v}", "", "我们用的数据库是哪个？", ("PostgreSQL", "MySQL", "SQLite"),
       "{o}数据库{w}备份一次", ("每晚", "每小时"), "我们的", ("供应商的", "合作团队的")),
    _f("pets", "zh", "{o}狗叫{v}", "", "我家的狗叫什么名字？", ("豆豆", "旺财", "团子"),
       "{o}狗今年{w}了", ("四岁", "七岁"), "我家的", ("邻居家的", "小林家的")),
    _f("pets", "zh", "{o}猫吃{v}", "", "我家的猫吃什么？", ("三文鱼猫粮", "鸡肉罐头", "金枪鱼冻干"),
       "{o}猫喜欢睡在{w}", ("沙发上", "洗衣篮里"), "我家的", ("我姑姑家的", "露西的")),
    _f("pets", "zh", "{o}宠物医生是{v}", "", "我们的宠物医生是谁？", ("绿爪诊所", "河畔动物医院", "何医生"),
       "{o}宠物医生{w}营业", ("晚上七点前", "周六也"), "我们的", ("朋友家的", "我姐的")),
    # Other shapes: statements without "是", values inside the sentence, questions in other words.
    _f("people", "zh", "{o}爸妈{v}来看我们", "", "我爸妈什么时候来？", ("下周六", "月底", "国庆节"),
       "{o}爸妈从{w}坐火车过来", ("济南", "长沙"), "我", ("我室友的", "小刘的")),
    _f("work", "zh", "{o}团队用{v}沟通", "", "我们团队用什么工具沟通？", ("钉钉", "企业微信", "飞书"),
       "{o}团队每{w}线下见面", ("周二", "周四"), "我们", ("我姐姐的", "合作方的")),
    _f("work", "zh", "{o}季度复盘会在{v}开", "", "我们的季度复盘会什么时候开？", ("三月底", "四月初", "五月中旬"),
       "{o}季度复盘会由{w}主持", ("财务总监", "李经理"), "我们的", ("隔壁部门的", "总公司的")),
    _f("health", "zh", "{o}理疗每次{v}", "", "我的理疗每次多少钱？", ("三百元", "四百五十元", "五百二十元"),
       "{o}理疗在{w}做", ("社区医院", "康复中心"), "我的", ("我妈的", "老赵的")),
    _f("health", "zh", "{o}对{v}过敏", "", "我对什么过敏？", ("花生", "海鲜", "青霉素"),
       "{o}过敏时吃{w}", ("氯雷他定", "西替利嗪"), "我", ("我儿子", "小陈")),
    _f("home", "zh", "{o}房东是{v}", "", "我们的房东是谁？", ("李阿姨", "王先生", "安居公司"),
       "{o}房东住在{w}", ("楼上", "城南"), "我们的", ("我表姐的", "隔壁的")),
    _f("home", "zh", "{o}宽带是{v}的", "", "我们家宽带是哪家的？", ("电信", "联通", "移动"),
       "{o}宽带网速是{w}", ("三百兆", "千兆"), "我们家", ("我爸妈家", "公司")),
    _f("schedules", "zh", "{o}瑜伽课{v}开始", "", "我的瑜伽课几点开始？", ("六点半", "七点一刻", "八点五分"),
       "{o}瑜伽课老师是{w}", ("小雅", "马可"), "我的", ("我老婆的", "佳佳的")),
    _f("schedules", "zh", "{o}车年检在{v}", "", "我的车什么时候年检？", ("一月", "六月", "九月"),
       "{o}车停在{w}", ("地下车库", "小区门口"), "我的", ("我爸的", "小吴的")),
    _f("money", "zh", "{o}物业费每月{v}", "", "我们的物业费每月多少？", ("二百八十元", "三百二十元", "四百元"),
       "{o}物业费从{w}扣", ("工资卡", "支付宝"), "我们的", ("我表哥家的", "楼上邻居的")),
    _f("tools", "zh", "{o}笔记本电脑装的是{v}", "", "我的笔记本电脑装的是什么系统？",
       ("Windows 11", "Ubuntu", "macOS"), "{o}笔记本电脑内存是{w}", ("16G", "32G"), "我的", ("我儿子的", "小斌的")),
    _f("pets", "zh", "{o}兔子叫{v}", "", "我的兔子叫什么？", ("三叶草", "小白", "榛子"),
       "{o}兔子爱吃{w}", ("羽衣甘蓝", "提摩西草"), "我的", ("我外甥女的", "阿明的")),
)  # fmt: skip

FACTS: dict[str, tuple[Fact, ...]] = {"en": EN_FACTS, "zh": ZH_FACTS}

DISTRACTORS: dict[str, tuple[str, ...]] = {
    "en": (
        "Can you help me draft a polite email to the plumber?",
        "The weather was lovely this afternoon.",
        "I'm thinking about learning Spanish next year.",
        "Remind me what a good stretch for the lower back is.",
        "We watched a documentary about octopuses last night.",
        "What's a quick vegetarian dinner I could make?",
        "My phone battery drains really fast lately.",
        "Give me three ideas for a birthday card message.",
        "The traffic on the ring road was terrible.",
        "How do I get coffee stains out of a white shirt?",
        "I finished the crossword in record time.",
        "Summarise the plot of Hamlet in two sentences.",
        "The garden needs watering again.",
        "Is it worth buying a standing desk?",
        "I found an old photo album in the attic.",
        "Suggest a name for a pub quiz team.",
    ),
    "zh": (
        "帮我写一封给水管工的礼貌邮件。",
        "今天下午天气真好。",
        "我在考虑明年学西班牙语。",
        "有什么缓解腰酸的拉伸动作？",
        "昨晚我们看了一部关于章鱼的纪录片。",
        "推荐一个简单的素食晚餐吧。",
        "最近手机电池掉电特别快。",
        "给我三个生日贺卡的祝福语。",
        "环路上今天堵得厉害。",
        "白衬衫上的咖啡渍怎么洗掉？",
        "我今天很快就做完了填字游戏。",
        "用两句话概括一下《哈姆雷特》。",
        "花园又该浇水了。",
        "升降桌值得买吗？",
        "我在储藏室里找到一本旧相册。",
        "给知识竞赛队起个名字吧。",
    ),
}
"""Unrelated turns that go between the statements (they name no fact's value)."""
