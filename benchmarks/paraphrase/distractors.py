"""Distractor turns for the paraphrase benchmark: chat of the same genre as
the memories (daily life and work, in Chinese, English and both mixed), made
from templates with a fixed seed so every run sees the same 2,000 turns.

They talk about the same kinds of things (food, meetings, deploys, family,
travel) without carrying any memory's fact, so a lane that matches only the
genre — or only pronouns — scores nothing.
"""

from __future__ import annotations

import random

SEED = 20261201
COUNT = 2000

_EN_SUBJ = ["I", "We", "My friend", "The team", "Someone on the bus", "My neighbour", "A colleague",
            "The new intern", "Our manager", "My cousin"]
_EN_VERB = ["talked about", "complained about", "asked about", "laughed about", "read an article on",
            "watched a video about", "argued over", "forgot about", "wrote a note on", "joked about"]
_EN_OBJ = ["the weather this week", "a new ramen place downtown", "the football match", "traffic on the bridge",
           "a podcast on history", "the price of apartments", "a documentary about whales",
           "the broken printer", "a board game night", "the noisy air conditioner", "a long queue at the bank",
           "a movie with too many sequels", "summer holidays in general", "a cooking show", "a lost umbrella",
           "the cafeteria menu", "a birthday card for a stranger", "how tired everyone is", "a new sofa",
           "the parking rules", "a hiking video", "a song stuck in my head", "the elevator being slow",
           "a crossword puzzle", "a chess opening", "the city marathon route", "the lunch break"]
_EN_TAIL = ["", " yesterday", " for a while", " again", " during lunch", " last night", " on the phone",
            " before the meeting", " after work", " over the weekend"]

_ZH_SUBJ = ["我", "我们", "朋友", "同事", "邻居", "表哥", "新来的实习生", "隔壁组的人", "楼下的阿姨", "大学同学"]
_ZH_VERB = ["聊了聊", "抱怨了", "问起了", "看了一篇文章讲", "刷到一个视频说", "讨论了半天", "随口提到",
            "在群里发了", "吐槽了", "开玩笑说起"]
_ZH_OBJ = ["这几天的天气", "楼下新开的面馆", "昨晚的球赛", "早高峰堵车", "一档历史播客", "房价", "一部讲鲸鱼的纪录片",
           "坏掉的打印机", "周末的桌游局", "空调太吵", "银行排长队", "一部续集太多的电影", "暑假去哪玩",
           "一个做饭的节目", "丢了的雨伞", "食堂的菜单", "电梯太慢", "一首洗脑的歌", "停车的规定", "新买的沙发",
           "猜谜游戏", "象棋开局", "小区的快递柜", "地铁上的广告", "楼道里的灯", "超市打折", "奶茶排队"]
_ZH_TAIL = ["", "，挺有意思", "，说了好久", "，大家都笑了", "，没什么结论", "，下次再说", "，有点无聊", "，挺好玩的"]

_MIXED = ["今天的 standup 又拖了十分钟，大家都在聊 {x}。",
          "Lunch 的时候有人提到 {x}，挺好笑的。",
          "{x} 这个话题在 Slack 上刷屏了。",
          "周末 plan 还没定，可能去看看 {x}。",
          "刚才的 meeting 跑题了，最后在讨论 {x}。"]


def turns(count: int = COUNT, seed: int = SEED) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        kind = rng.random()
        if kind < 0.4:
            t = f"{rng.choice(_EN_SUBJ)} {rng.choice(_EN_VERB)} {rng.choice(_EN_OBJ)}{rng.choice(_EN_TAIL)}."
        elif kind < 0.85:
            t = f"{rng.choice(_ZH_SUBJ)}{rng.choice(_ZH_VERB)}{rng.choice(_ZH_OBJ)}{rng.choice(_ZH_TAIL)}。"
        else:
            t = rng.choice(_MIXED).format(x=rng.choice(_ZH_OBJ + _EN_OBJ))
        if t not in seen:  # sediment keeps one memory per text
            seen.add(t)
            out.append(t)
    return out
