"""Generate the Chinese daily-life memory benchmark (``zhmem.json`` beside this file).

    python benchmarks/zhmem/generate.py            # rewrites zhmem.json (seed 20261201)
    python benchmarks/zhmem/generate.py --check    # regenerates in memory, compares with the file

Everything here is made up from the templates below with one fixed seed: no
public data is copied in. Several people each keep their own memory (one root
per person, as an agent's memory belongs to one user): first-person notes over
about eight weeks about phones, malls, colleagues, the hometown, appliances,
food, travel, pets, family and work. Every note says 我, and most say 他/她 or
name a colleague, so matching pronouns cannot score.

Question types (each question lists its evidence memory ids; a second-hop
question also lists its ``bridge``, the earlier memory that names the entity):

* ``second-hop``: an earlier memory names an entity (a phone model, a mall, a
  colleague, a restaurant, a pet, a hotel…); the evidence memory talks about that
  entity and shares no word with the question;
* ``category``: the question says the category (家电, 水果, 乐器…), the evidence
  only the specific thing (空气净化器, 榴莲, 吉他…), and shares no word with it;
* ``synonym``: the question and the evidence use near-synonyms for the word that
  matters (老家 / 家乡, 手里 / 手上, 丈夫 / 老公…); the rest of the question is
  as common among the distractors as in the evidence;
* ``direct``: the question shares its distinctive words with the evidence.

Distractors of the same genre (a friend's phone, another mall, other colleagues,
other birthdays, other meals) make up most of each root.

"Shares no word" is checked here, independently of sediment's tokenizer, on
character pairs of CJK text (a pair of two glue characters such as 我的 is
ignored), on jieba's words (the search-mode cut of the pure-Python jieba) and on
Latin words; a generated question that fails its check is dropped, and the
number dropped is recorded. The file written is checked in: the benchmark is
what the file says, whatever a later jieba would cut.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

SEED = 20261201
OUT = Path(__file__).resolve().parent / "zhmem.json"
DAYS = 56

PEOPLE = ["林晓", "陈默", "王芳", "赵磊", "刘洋", "周婷", "孙浩"]

PHONES = [("华为Mate60 Pro", "Mate60"), ("小米14 Ultra", "小米14"), ("iPhone 15", "iPhone 15"),
          ("OPPO Find X7", "Find X7"), ("vivo X100", "X100"), ("荣耀Magic6", "Magic6"),
          ("一加12", "一加12"), ("Pixel 8", "Pixel 8"), ("三星S24", "S24"), ("红米K70", "K70")]
MALLS = ["万象城", "大悦城", "太古里", "来福士", "银泰城", "龙湖天街", "印象城", "万达广场", "吾悦广场",
         "合生汇", "星光天地", "凯德广场"]
COLLEAGUES = ["老郑", "小杜", "孙经理", "何姐", "阿凯", "宋工", "曹主管", "小谭", "老葛", "欧阳", "小麦", "俞总"]
FRIENDS = ["阿珍", "大刘", "小美", "胖虎", "阿杰", "思思", "老白", "琳达"]
HOMETOWNS = [("宜宾", "燃面"), ("赣州", "鱼饼"), ("潮汕", "牛肉丸"), ("绍兴", "霉干菜"), ("洛阳", "水席"),
             ("大理", "乳扇"), ("常德", "米粉"), ("泉州", "面线糊"), ("丹东", "草莓"), ("柳州", "螺蛳粉")]
RESTAURANTS = [("老碗面馆", "油泼面"), ("阿婆糖水铺", "双皮奶"), ("川味小厨", "水煮鱼"), ("湘里人家", "剁椒鱼头"),
               ("鮨一寿司", "三文鱼腩"), ("潮记牛肉火锅", "吊龙"), ("粤港茶餐厅", "菠萝油"), ("西北莜面村", "莜面鱼鱼")]
HOTELS = [("青岛", "栖云民宿"), ("厦门", "鼓浪屿听涛居"), ("西安", "长安驿站"), ("桂林", "漓江山舍"),
          ("哈尔滨", "冰城雪舍"), ("三亚", "椰梦长廊客栈"), ("昆明", "滇池小筑"), ("苏州", "平江府客栈")]
PETS = ["橘子", "豆包", "年糕", "可乐", "汤圆", "布丁", "芝麻"]
APPL_BRANDS = ["小米", "美的", "格力", "海尔", "戴森", "科沃斯", "石头", "松下"]
ROBOTS = ["T20", "X1", "G10", "P10", "S8"]
CITIES = ["成都", "杭州", "南京", "武汉", "长沙", "重庆", "天津", "厦门"]

# category word in the question → specific things the evidence names, with a template
# (question with the category word, specific things, evidence template, a distractor that
# says the category word but is no answer)
CATEGORIES = [
    ("最近家里添了什么家电？", ["空气净化器", "洗碗机", "烘干机", "加湿器"],
     "周末在网上下单了一台{brand}{x}，卧室终于不那么闷了。",
     "家电卖场在搞以旧换新，{friend}拉我去转了一圈，最后什么也没买。"),
    ("我上个月给爸妈送过什么家电？", ["按摩椅", "电饭煲", "净水器", "破壁机"],
     "家里二老收到了一个{brand}{x}，妈妈打电话说很好使。",
     "爸妈总说家里的家电够用了，不让我再乱花钱。"),
    ("我平时喜欢吃哪种水果？", ["榴莲", "车厘子", "山竹", "芒果"],
     "路过超市又拎了两斤{x}，一个人一晚上能解决一斤。",
     "公司下午茶发了水果拼盘，{colleague}一个人吃了一半。"),
    ("我学过什么乐器？", ["吉他", "尤克里里", "古筝", "萨克斯"],
     "翻出大学时候的{x}，调了调音，手指早就生疏了。",
     "{friend}的孩子在学乐器，每周上两节课，学费不便宜。"),
    ("我周末一般做什么运动？", ["羽毛球", "游泳", "攀岩", "网球"],
     "礼拜六上午照例约了{friend}去打{x}，出了一身汗。",
     "医生让我多运动少熬夜，我嘴上答应了。"),
    ("过年那几天都见了哪些亲戚？", ["舅舅", "姑妈", "表哥", "小姨"],
     "初二去{x}家拜年，{x}塞给小侄子一个大红包。",
     "过年被亲戚们追着问什么时候结婚，烦死了。"),
    ("我办公桌上放着什么零食？", ["牛肉干", "辣条", "海苔", "话梅"],
     "抽屉里囤了一大包{x}，下午饿了就摸出来嚼两片。",
     "{friend}寄来一箱零食，我全分给了同事。"),
    ("我最近入手了什么数码产品？", ["降噪耳机", "平板", "智能手表", "kindle"],
     "双十一抢到一个{x}，比平时便宜了三百多块。",
     "数码产品更新太快，刚买的就降价了。"),
]

# near-synonyms: (question, evidence, distractor templates sharing the rest of the question)
SYNONYMS = [
    ("我老家是哪里的？", "我家乡是{home}，一座不大的小城。",
     ["{friend}是哪里的人？她说自己是{city}长大的。", "公司新来的实习生是{city}的，口音挺重。"]),
    ("我家乡现在变化大吗？", "这次回老家，发现{home}新修了高铁站，老街也翻新了。",
     ["{city}这几年变化真大，{friend}说认不出来了。", "听说{city}的老城区要拆迁，变化会很大。"]),
    ("我手里现在有多少存款？", "算了一下，手上的存款大概还有六万出头。",
     ["{friend}说她的存款都拿去买基金了。", "银行打电话推销定期存款，利率又降了。"]),
    ("我丈夫的生日是哪天？", "老公的生日是十一月三号，得提前订蛋糕。",
     ["{colleague}的生日在下周，大家凑钱买了束花。", "妈妈的生日快到了，想给她订一桌饭。"]),
    ("我的笔记本电脑是什么牌子？", "我的手提是联想小新，用了四年，键盘有点松。",
     ["{colleague}的电脑是公司配的，牌子我叫不上来。", "电脑城里的老板推荐了一款游戏本，太贵了。"]),
    ("我的工资一般几号发？", "薪水每个月十号到账，这个月晚了两天。",
     ["{colleague}说他们部门的工资结构改了。", "房东提醒我每月五号前交房租，别忘了工资到了就转。"]),
    ("我骑自行车上班要多久？", "每天骑单车去公司，路上二十五分钟左右。",
     ["{colleague}每天开车上班，堵车要一个小时。", "地铁上班太挤了，今天被挤得喘不过气。"]),
    ("我的快递放在哪里了？", "包裹被放在小区门口的丰巢柜里，取件码发在短信里。",
     ["{friend}的快递被别人拿错了，找了物业半天。", "这周的快递特别多，都是双十一买的。"]),
]


EXTRA = 150  # slot-template distractors per person
WHEN = ["今天", "昨天", "周一", "周三", "周五晚上", "周末", "下班后", "中午", "早上"]
FOODS = ["烤肉", "火锅", "麻辣烫", "饺子", "寿司", "烧烤", "螺蛳粉", "小龙虾", "煎饼", "炒粉"]
FILLER = [
    "{when}和{friend}在{mall}吃了{food}，聊到很晚。", "{when}{colleague}请大家喝咖啡，说是过生日。",
    "{when}在{mall}逛了一圈，试了几件衣服都不合身。", "{colleague}{when}在会上和{colleague}吵了起来。",
    "{friend}换了{phone}，{when}一直在朋友圈晒照片。", "{when}去{rest}吃饭，排了半小时队。",
    "{colleague}出差去了{city}，带回来一盒点心。", "{when}加班，外卖点了{food}。",
    "{friend}说{city}的房价又涨了，她想回{home}发展。", "{when}给{pet}洗了个澡，它挣扎得厉害。",
    "{brand}的售后{when}上门装了热水器。", "{when}陪{friend}去{mall}挑手机壳。",
    "{colleague}推荐了一本书，{when}在地铁上看了几页。", "{when}下雨没带伞，在{mall}门口等了半天。",
    "{friend}在{city}开了一家奶茶店，让我有空去捧场。", "{when}和{colleague}去楼下吃{food}。",
    "{when}在家追剧，点了{food}外卖。", "{colleague}的{phone}没电了，借了我的充电线。",
    "{when}去{city}见客户，回来的高铁晚点了。", "{friend}{when}生病了，我给她送了点水果。",
    "{when}收到{brand}的促销短信，直接删了。", "{colleague}说{rest}的菜涨价了。",
    "{when}在小区楼下遇到邻居，聊了几句{home}的事。", "{when}整理照片，翻到和{friend}在{city}的合影。",
    "{colleague}{when}请假了，他的活分给了我。", "{when}去健身房跑了五公里。",
    "{friend}推荐{mall}新开的电影院，{when}去看了场电影。", "{when}给家里打电话，聊了半个小时。",
    "{colleague}在群里问谁有{brand}的优惠券。", "{when}睡过头了，差点没赶上早会。",
]


class _Check:
    """Which words two texts share, without sediment's tokenizer."""

    GLUE = set("的了吗呢吧啊呀着是在和与就都我你他她它们这那个么什怎哪有一")

    def __init__(self) -> None:
        import jieba
        import logging
        jieba.setLogLevel(logging.WARNING)
        self.tk = jieba.Tokenizer()
        self.tk.initialize()

    def terms(self, text: str) -> set[str]:
        out: set[str] = set()
        for run in re.findall(r"[\u4e00-\u9fff]+", text):
            out.update(run[i:i + 2] for i in range(len(run) - 1)
                       if not (run[i] in self.GLUE and run[i + 1] in self.GLUE))
            out.update(w for w in self.tk.cut_for_search(run, HMM=False)
                       if len(w) > 1 or w not in self.GLUE)
        out.update(w.lower() for w in re.findall(r"[A-Za-z0-9]+", text))
        return out

    def shared(self, a: str, b: str) -> set[str]:
        return self.terms(a) & self.terms(b)


class _Person:
    def __init__(self, rng: random.Random, name: str, check: _Check) -> None:
        self.rng, self.name, self.check = rng, name, check
        self.mems: list[tuple[int, str, str]] = []  # (day, key, text)
        self.qs: list[dict] = []
        self.dropped = 0
        self.n = 0

    def mem(self, text: str, day: int | None = None) -> str:
        self.n += 1
        key = f"k{self.n}"
        self.mems.append((self.rng.randrange(DAYS) if day is None else day, key, text))
        return key

    def q(self, kind: str, question: str, evidence: list[str], bridge: list[str] | None = None,
          strict: bool = False) -> None:
        if strict:
            texts = {k: t for _, k, t in self.mems}
            if any(self.check.shared(question, texts[k]) for k in evidence):
                self.dropped += 1
                return
        self.qs.append({"type": kind, "question": question, "evidence": evidence,
                        **({"bridge": bridge} if bridge else {})})


def _person(rng: random.Random, name: str, check: _Check) -> tuple[list[dict], list[dict], int]:
    p = _Person(rng, name, check)
    pick = rng.sample
    (phone, phone_s), (old_phone, old_s), (friend_phone, fp_s) = pick(PHONES, 3)
    mall, mall2, mall3, mall4 = pick(MALLS, 4)
    col, col2, col3, col4, col5 = pick(COLLEAGUES, 5)
    friend, friend2, friend3 = pick(FRIENDS, 3)
    (home, home_food), (other_home, _) = pick(HOMETOWNS, 2)
    (rest, dish), (rest2, dish2), (rest3, dish3) = pick(RESTAURANTS, 3)
    (city_t, hotel), (city_t2, hotel2) = pick(HOTELS, 2)
    pet, pet2 = pick(PETS, 2)
    brand, brand2 = pick(APPL_BRANDS, 2)
    robot = rng.choice(ROBOTS)
    city = rng.choice(CITIES)
    early = lambda: rng.randrange(0, 24)  # noqa: E731
    late = lambda d: rng.randrange(d + 3, DAYS)  # noqa: E731
    fill = {"friend": friend, "friend2": friend2, "colleague": col4, "city": city, "home": home,
            "brand": brand, "mall": mall3}

    # --- second-hop chains: bridge (names the entity) → evidence (about it, no word of the question)
    d = early()
    a = p.mem(f"终于换了新手机，买的是{phone}，挑了个深色的，旧的{old_s}留给我妈用。", d)
    b = p.mem(f"{phone_s}的电池越来越不经用，下午三点就只剩两成电，充电器得随身带着。", late(d))
    p.q("second-hop", "我的新手机后来出了什么毛病？", [b], [a], strict=True)
    b2 = p.mem(f"{phone_s}今天从桌上摔到地上，屏裂成蜘蛛网，拿去售后换了块屏，付了九百块。", late(d))
    p.q("second-hop", "新买的手机有没有送修过，花了多少钱？", [b2], [a], strict=True)

    d = early()
    a = p.mem(f"周六和{friend}去{mall}逛街，那里新开了一家无印良品，人特别多。", d)
    b = p.mem(f"{mall}的地下车库太难找车位了，转了二十分钟才停好，出口收费还贵。", late(d))
    p.q("second-hop", "我和朋友逛街的那个商场停车怎么样？", [b], [a], strict=True)

    d = early()
    a = p.mem(f"部门新来的同事叫{col}，坐我对面，负责供应商对接。", d)
    b = p.mem(f"{col}午休时总在工位上练毛笔字，写得挺像样，还送了我一幅。", late(d))
    p.q("second-hop", "坐我对面的新同事有什么爱好？", [b], [a], strict=True)
    b2 = p.mem(f"{col}下个月要调去深圳分公司，说舍不得这边的火锅。", late(d))
    p.q("second-hop", "那个新同事之后会在哪个城市上班？", [b2], [a], strict=True)

    d = early()
    a = p.mem(f"我老家在{home}，小时候住在河边的老街上，放学就去河边玩。", d)
    b = p.mem(f"我妈寄来一大箱{home}的{home_food}，外面根本吃不到这个味道。", late(d))
    p.q("second-hop", "老家有哪些特产？", [b], [a], strict=True)

    d = early()
    a = p.mem(f"{col2}推荐了公司楼下新开的{rest}，说比食堂强多了。", d)
    b = p.mem(f"中午去了{rest}，{dish}偏咸，分量倒是挺足，人均四十。", late(d))
    p.q("second-hop", "同事推荐的那家店味道如何？", [b], [a], strict=True)

    d = early()
    a = p.mem(f"国庆打算去{city_t}玩，提前订了{hotel}，离海边走路五分钟。", d)
    b = p.mem(f"{hotel}的早餐种类很少，只有粥和馒头，好在房间能看到海。", late(d))
    p.q("second-hop", "国庆出去玩住的地方怎么样？", [b], [a], strict=True)

    d = early()
    a = p.mem(f"从救助站收养了一只橘猫，取名叫{pet}，两个月大。", d)
    b = p.mem(f"{pet}这两天不肯吃东西，带去宠物医院打了一针，医生说是肠胃炎。", late(d))
    p.q("second-hop", "我收养的猫最近身体好吗？", [b], [a], strict=True)

    d = early()
    a = p.mem(f"给爸妈买了一台{brand2}{robot}扫地机器人，让他们少弯腰。", d)
    b = p.mem(f"{robot}老是卡在沙发底下出不来，我爸嫌麻烦又拿起了拖把。", late(d))
    p.q("second-hop", "给爸妈买的扫地机器人他们用得惯吗？", [b], [a], strict=True)

    d = early()
    a = p.mem(f"{friend2}介绍我认识了她的表妹{friend3}，在银行做理财。", d)
    b = p.mem(f"{friend3}发微信问我要不要试试她们行的定投，我说再考虑考虑。", late(d))
    p.q("second-hop", "朋友介绍给我的那个人后来找过我吗？", [b], [a], strict=True)

    # --- category words
    for qtext, things, tmpl, distract in rng.sample(CATEGORIES, 6):
        x = rng.choice(things)
        e = p.mem(tmpl.format(x=x, **dict(fill, brand=rng.choice(APPL_BRANDS))))
        p.q("category", qtext, [e], strict=True)
        p.mem(distract.format(**fill))

    # --- near-synonyms
    for qtext, etext, dtexts in rng.sample(SYNONYMS, 6):
        e = p.mem(etext.format(**fill))
        for t in dtexts:
            p.mem(t.format(**fill))
        p.q("synonym", qtext, [e])

    # --- direct
    e = p.mem(f"在{mall2}的优衣库买了件羽绒服，打完折三百九。")
    p.q("direct", f"我在{mall2}买了什么衣服？", [e])
    e = p.mem(f"{col3}升职当了项目组长，晚上请大家在{rest2}吃饭。")
    p.q("direct", f"{col3}升职后请客去了哪家店？", [e])
    e = p.mem(f"{friend}的手机是{friend_phone}，她说拍照比我的好。")
    p.q("direct", f"{friend}用的什么手机？", [e])
    e = p.mem(f"报名了{mall3}楼上的游泳馆，办了一张三个月的卡。")
    p.q("direct", "我在哪里办的游泳卡？", [e])
    e = p.mem(f"{col5}是{other_home}人，说那边夏天比这里还热。")
    p.q("direct", f"{col5}是哪里人？", [e])
    e = p.mem(f"{rest3}的{dish3}是我吃过最好吃的，下次带爸妈来。")
    p.q("direct", f"{rest3}什么菜最好吃？", [e])
    e = p.mem(f"暑假去{city_t2}住了{hotel2}，老板娘做的早饭很香。")
    p.q("direct", f"{hotel2}在哪个城市？", [e])
    e = p.mem(f"{pet2}是{friend2}家的狗，每次见到我都扑上来。")
    p.q("direct", f"{pet2}是谁家的狗？", [e])

    # --- distractors of the same genre
    dist = [
        f"{friend}的{fp_s}屏幕碎了，她说这周末去换。",
        "手机话费这个月超了，流量用得太狠。", "给手机买了个新壳子，透明的，很快就黄了。",
        f"在{mall4}看了一圈新款手机，都贵得离谱。", f"{old_s}给我妈用了以后，她天天刷短视频。",
        f"和{friend2}在{mall4}吃了顿烤肉，排队排了一个小时。", f"{mall3}的电影院换了新座椅，看电影舒服多了。",
        f"周末{mall4}搞促销，人挤人，什么也没买就回来了。", f"{mall2}门口的奶茶店关门了，有点可惜。",
        f"{col4}今天又迟到了，被{col2}念叨了半天。", f"{col2}在群里发了团建通知，下周去爬山。",
        f"{col3}的孩子考上了重点初中，他高兴得请大家喝奶茶。", f"{col5}请假回家相亲去了，一周后回来。",
        f"和{col4}一起加班到十点，打车回的家。", f"{col2}说下季度的预算要砍掉一半，大家都很紧张。",
        f"{friend3}推荐了一部电视剧，我看了两集就弃了。", f"{friend}结婚了，婚礼在{city}办的，我当了伴娘。",
        f"{other_home}的同学群里在张罗十年聚会。", "楼下新开了一家面包店，可颂还不错。",
        f"晚上自己煮了一锅{home_food}，想家了。", "今天降温了，翻出了去年的厚外套。",
        "早上地铁故障，迟到了二十分钟。", "周末在家大扫除，扔了三袋旧衣服。",
        f"{pet}把沙发抓破了一个洞。", f"{pet}半夜在客厅跑酷，吵得睡不着。",
        "体检报告出来了，血脂有点高，得少吃油炸的。", "去银行把信用卡额度调高了。",
        f"{brand}的客服电话打了三次才接通。", "冰箱里的菜放坏了，以后少买点。",
        "物业通知下周停水一天，得提前接好水。", f"{friend2}失恋了，陪她喝了一晚上酒。",
        "年假还没想好去哪儿，可能就在家躺着。", f"{col}的毛笔字被挂在了会议室。",
        "外卖点的麻辣烫太辣了，喝了两瓶水。", "妈妈打电话说家里的橘子树结果了。",
        f"{city}出差三天，天天吃酒店的自助餐。", f"坐高铁去{city}，路上看完了一本小说。",
        "房东说明年房租要涨两百。", "周末和爸妈视频，他们说身体都挺好。",
        f"{rest2}的老板认识我了，每次都多给一勺汤。", "健身房的年卡快到期了，还在犹豫续不续。",
        "小区门口的快递站搬到了后门。", "电脑突然蓝屏，写了一下午的文档差点丢了。",
        f"{friend3}说她们银行最近在招人。", "楼上邻居装修，电钻声从早响到晚。",
        f"{col3}借了我的充电宝，还没还。", f"今天在{mall}碰到了大学室友，聊了很久。",
    ]
    for t in dist:
        p.mem(t)
    # and many more drawn from slot templates: the same people, places and things in
    # everyday notes that answer nothing
    slots = {"friend": FRIENDS, "colleague": [col, col2, col3, col4, col5] + COLLEAGUES[:3],
             "mall": [mall, mall2, mall3, mall4] + MALLS[:2], "food": FOODS, "city": CITIES,
             "phone": [s for _, s in PHONES], "brand": APPL_BRANDS, "when": WHEN,
             "rest": [r for r, _ in RESTAURANTS], "pet": [pet, pet2], "home": [home, other_home]}
    for _ in range(EXTRA):
        tmpl = rng.choice(FILLER)
        p.mem(re.sub(r"\{(\w+)\}", lambda m: rng.choice(slots[m.group(1)]), tmpl))
    # order by day (stable): ids follow the order memories are added in
    order = sorted(range(len(p.mems)), key=lambda i: (p.mems[i][0], i))
    ids = {p.mems[i][1]: f"{name}-{j + 1:03d}" for j, i in enumerate(order)}
    mems = [{"id": ids[p.mems[i][1]], "day": p.mems[i][0], "text": p.mems[i][2]} for i in order]
    qs = []
    for q in p.qs:
        q = dict(q, evidence=[ids[k] for k in q["evidence"]])
        if "bridge" in q:
            q["bridge"] = [ids[k] for k in q["bridge"]]
        qs.append(q)
    return mems, qs, p.dropped


def generate(seed: int = SEED) -> dict:
    rng = random.Random(seed)
    check = _Check()
    people = []
    dropped = 0
    qn = 0
    for name in PEOPLE:
        mems, qs, dr = _person(rng, name, check)
        dropped += dr
        for q in qs:
            qn += 1
            q["id"] = f"q{qn:03d}"
        people.append({"person": name, "memories": mems, "questions": qs})
    return {"seed": seed, "dropped_by_check": dropped, "people": people}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    a = ap.parse_args(argv)
    data = generate()
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    if a.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("same as the file" if same else "DIFFERS from the file")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    n_m = sum(len(p["memories"]) for p in data["people"])
    n_q = sum(len(p["questions"]) for p in data["people"])
    print(f"wrote {OUT.name}: {len(data['people'])} people, {n_m} memories, {n_q} questions "
          f"({data['dropped_by_check']} dropped by the no-shared-word check)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
