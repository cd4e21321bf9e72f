"""The word lists the entity recogniser (``recognise``) reads English and
mixed text with: given names, organisations and places everybody knows,
what marks an organisation, and the capitalised words that are no name
(products and tools, months and weekdays, sentence starts). Pure data.

Written by hand from general knowledge, not from any labelled sentence; a
list is a prior, never the last word: the known people of a root come first,
and a name not listed is still found where its shape says it is one.
"""

from __future__ import annotations

# Given names common in English text (and the English names Chinese speakers
# use at work). Lower case.
GIVEN_NAMES = frozenset("""
aaron adam adrian aisha alan albert alex alexander alice alicia amanda amelia amy ana andrea andrew angela anna
anne anthony april arthur ashley ava barbara ben benjamin beth betty bill bob bobby brandon brian bruce carl carlos
carol caroline catherine charles charlie charlotte chen chloe chris christina christine christopher claire cynthia
dan daniel david deborah dennis diana diego donald donna dorothy dylan edward elena elizabeth ella ellen emily emma
eric erin ethan eva evelyn frank gabriel gary george grace greg gregory hannah harry helen henry ian isaac isabella
jack jacob james jane janet jason jean jeff jennifer jenny jeremy jerry jessica jim joan joe john jonathan jordan
jose joseph joshua joyce juan judy julia julie justin karen kate katherine kathy kelly ken kevin kim kyle larry
laura lauren leo liam linda lisa lucas lucy luis luke lily maria marie mark martha martin mary matt matthew
megan melissa mia michael michelle mike mohammed nancy natalie nathan nicole noah olivia oliver omar pamela patricia
patrick paul peter philip priya rachel rahul ralph raj raymond rebecca richard rick robert roger ronald rose ruth
ryan sam samantha samuel sandra sara sarah scott sean sharon sophia sophie stephanie stephen steve steven susan
tyler thomas tim timothy tina tom tony victoria vincent walter wei william yuki zoe linus ada anjali
fatima hiro kenji mei ming olga pierre sven nikhil arjun ravi sanjay wang li zhang liu yang zhao chen zhou
""".split())

# Titles before a surname: part of the mention when only a surname follows.
TITLES = ("Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "Dr", "Mr", "Mrs", "Ms", "Prof")

# Organisations everybody knows (how they are written).
ORGS = frozenset("""
Google Microsoft Apple Amazon Meta Facebook OpenAI Anthropic IBM Intel Nvidia NVIDIA AMD Oracle Salesforce Netflix
Uber Airbnb Stripe Twitter Tesla SpaceX Samsung Sony Huawei Alibaba Tencent Baidu ByteDance Xiaomi Cisco Adobe
Spotify Shopify Atlassian Mozilla Cloudflare Dropbox LinkedIn PayPal Visa Mastercard Toyota Honda Siemens SAP
Deloitte McKinsey Accenture Goldman JPMorgan Walmart Starbucks Boeing Airbus MIT Stanford Harvard Yale Princeton
Oxford Cambridge Berkeley Caltech NASA UN UNESCO WHO NATO EU FBI CIA NHS BBC IMF OECD
""".split())

# Words that end (or start) an organisation's name.
ORG_WORDS = frozenset("""
Corp Corp. Corporation Inc Inc. Ltd Ltd. LLC GmbH Co Co. Company Group Labs Lab Bank University College School
Institute Foundation Hospital Agency Association Society Council Committee Department Ministry Bureau Academy
Team Studios Partners Capital Ventures Systems Technologies Airlines Clinic Center Centre Press Times
""".split())

# Places everybody knows (how they are written), and the words that end a
# place's name.
PLACES = frozenset("""
China Japan Korea India Germany France Spain Italy Canada Mexico Brazil Argentina Russia Australia Britain England
Scotland Ireland Wales Netherlands Holland Belgium Sweden Norway Denmark Finland Poland Austria Switzerland Portugal
Greece Turkey Egypt Israel Jordan Iran Iraq Singapore Malaysia Thailand Vietnam Indonesia Philippines Taiwan
Kenya Nigeria Chile Peru Colombia Ukraine USA US UK America Europe Asia Africa
Beijing Shanghai Shenzhen Hangzhou Guangzhou Chengdu Wuhan Nanjing Tokyo Osaka Kyoto Seoul London Paris Berlin
Munich Hamburg Frankfurt Cologne Stuttgart Lyon Marseille
Madrid Barcelona Rome Milan Amsterdam Brussels Vienna Zurich Geneva Dublin Edinburgh Manchester
Lisbon Prague Warsaw Stockholm Oslo Copenhagen Helsinki Moscow Istanbul Dubai Mumbai Delhi Bangalore Sydney
Melbourne Toronto Vancouver Montreal Boston Chicago Seattle Portland Austin Denver Houston Dallas Atlanta Miami
Phoenix Detroit Philadelphia Washington California Texas Florida Oregon Nevada Colorado Arizona Virginia Ohio
Brooklyn Manhattan Queens Oakland Palo Alto Cupertino Hawaii Alaska Bangkok Jakarta Manila Hanoi Cairo Nairobi
Lagos Johannesburg Auckland Reykjavik Tahoe Yosemite Alps Himalayas Amazon Sahara Mississippi Thames Rhine
""".split()) | {"New York", "San Francisco", "Los Angeles", "San Diego", "San Jose", "Hong Kong", "Bay Area",
               "Silicon Valley", "Big Sur", "Lake Tahoe", "New Jersey", "New Zealand", "South Africa",
               "Palo Alto", "Mountain View", "Las Vegas", "Rio de Janeiro", "Buenos Aires", "Sri Lanka",
               "Saudi Arabia", "United States", "United Kingdom", "Kuala Lumpur", "Cape Town", "Tel Aviv"}
PLACE_WORDS = frozenset("""
City County Province State Street Road Avenue Park Lake River Mountain Mountains Mount Valley Bay Island Islands
Beach Airport Station District Square Bridge Canyon Falls Coast Hills
""".split())

# Capitalised words that are no entity: products, tools, languages, months,
# weekdays, holidays, and words that start sentences. Lower case.
NOT_NAMES = frozenset("""
kubernetes k8s redis postgres postgresql mysql sqlite mongodb kafka docker helm argocd terraform ansible jenkins
grafana prometheus slack jira zoom confluence notion figma github gitlab bitbucket chrome firefox safari windows
linux macos ios android iphone ipad mac python java javascript typescript go rust ruby php swift kotlin scala
react vue angular django flask rails node nodejs graphql rest json yaml markdown excel word powerpoint outlook
gmail teams tomcat nginx apache spark hadoop airflow pytorch tensorflow chatgpt claude gemini copilot vscode
vim emacs wechat whatsapp telegram tiktok youtube instagram webex sentry datadog pagerduty aws gcp azure s3 ec2
lambda bigquery snowflake openapi oauth sso vpn api apis sdk cli ci cd pr prs qa ui ux db sql css html http https
url urls dns ssh tls ssl cpu gpu ram os faq pdf csv okr okrs kpi kpis eta asap fyi tbd todo wip mvp poc sla roi
q1 q2 q3 q4 h1 h2 ok yes no hi hey hello thanks thank dear cc re fw ps
january february march april may june july august september october november december jan feb mar apr jun jul
aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun
christmas easter thanksgiving halloween ramadan diwali hanukkah kubecon
mom dad mum mommy daddy grandma grandpa granny auntie uncle sis bro boss
pm ceo cto cfo coo vp hr it ops dev devops sre intern admin
english chinese german french spanish japanese korean italian russian american british european indian canadian
i i'm i'll i've i'd we you he she they it this that these those there here what when where why how who which
yesterday today tomorrow tonight morning afternoon evening please let lets let's just also still maybe sure
deploy fix check ping send call meet ask tell remind review merge update move add remove sync talked met spent
will can could would should must might did does do done got had has have was were is are be been being after
before since until during while once then now next last every each all any some no not never always
the a an and or but so if because as at on in of to for with from by about into over under up down out off
remember note notes meeting standup sprint release build test tests bug bugs issue issues ticket tickets
""".split())

# Words that are never a name, whatever follows them ("I agreed", "Mom called").
NEVER_NAMES = frozenset("""i we you he she they it me us them mom dad mum mommy daddy grandma grandpa granny auntie
uncle sis bro boss pm ceo cto cfo coo vp hr intern admin everyone someone nobody""".split())

# Words after a capitalised word that say it is a person ("April said").
PERSON_CUES_AFTER = frozenset("""
said says say asked asks told tells thinks thought wants wanted wrote writes mentioned replied suggested agreed
promised approved reviewed deployed decided owns joined left called emailed texted pinged
""".split())
# Words before a lower-case or unknown capitalised name that say a person follows.
PERSON_CUES_BEFORE = frozenset("with ask asked tell told ping pinged cc thank thanks call called email emailed"
                               " met meet and to".split())
PLACE_CUES_BEFORE = frozenset("in to from at near over across through via around visit visiting visited moving"
                              " moved trip".split())
# Organisations whose name is also their product: after these, the product
# ("searched it on Google").
PRODUCT_CUES_BEFORE = frozenset("on via using use used into".split())

# Given names that are also everyday words: at a sentence start, followed by a
# determiner or a pronoun, they are the word ("Mark the ticket as done").
WORD_NAMES = frozenset("mark will bill may rose sue pat grace frank art june jack rob chase hope joy faith summer"
                       " dawn ray bob gene".split())
DETERMINERS = frozenset("the a an this that these those it its me him her them my your our their you us all".split())
# Multi-word products and events (lower case): no entity, and no name inside them.
NOT_NAMES_MULTI = frozenset({"google docs", "google drive", "google sheets", "google cloud", "google meet",
                             "docker compose", "visual studio", "android studio", "microsoft teams", "apple music",
                             "amazon prime", "github actions", "new year", "canada day", "black friday"})

# Chinese: companies everybody knows, how an organisation's and a place's name
# ends, the characters that glue onto a name in jieba's cut (和小王), the titles
# after a name, and words jieba's dictionary tags as names or places that are
# things (its tags for 日志, 索引, 城市 are ns and nr).
ZH_ORGS = frozenset("""
腾讯 阿里巴巴 阿里云 华为 小米 百度 网易 美团 京东 滴滴 拼多多 字节跳动 蚂蚁集团 携程 快手 新浪 搜狐 联想 中兴 比亚迪
大疆 蔚来 小鹏 海尔 格力 中石油 中石化 国家电网 中国移动 中国联通 中国电信 招商银行 工商银行 建设银行 农业银行
中国银行 交通银行 微软 谷歌 亚马逊 英伟达 特斯拉 三星 索尼 苹果公司 脸书 甲骨文 英特尔 高通 台积电 丰田 本田 宜家
""".split())
ZH_ORG_ENDS = ("公司", "集团", "大学", "学院", "中学", "小学", "医院", "银行", "研究院", "研究所", "科学院", "统计局",
               "局", "委员会", "基金会", "协会", "法院", "电视台", "出版社", "事务所", "实验室", "分行", "支行")
ZH_PLACE_ENDS = ("省", "市", "区", "县", "镇", "村", "路", "街", "湖", "山", "江", "河", "湾", "岛", "机场", "站",
                 "园区")
# cities and countries abroad, which jieba's dictionary may tag otherwise (柏林 nr)
ZH_PLACES = frozenset("""
柏林 巴黎 伦敦 纽约 东京 大阪 首尔 悉尼 墨尔本 莫斯科 罗马 米兰 马德里 巴塞罗那 慕尼黑 法兰克福 阿姆斯特丹 维也纳 苏黎世
日内瓦 多伦多 温哥华 旧金山 洛杉矶 西雅图 波士顿 芝加哥 硅谷 曼谷 新加坡 吉隆坡 雅加达 迪拜 孟买 开罗 香港 澳门 台北
""".split())
ZH_GLUE = "和跟与同给被把让叫找对向在说等请问"
ZH_TITLES = ("总", "老师", "工", "哥", "姐", "总监", "经理", "医生", "教授", "院士", "主任", "局长", "师傅", "同学",
             "先生", "女士", "博士", "律师", "大夫")
ZH_NOT_NAMES = frozenset("""
微信 钉钉 王者荣耀 支付宝 淘宝 抖音 飞书 企业微信 金星 火星 水星 木星 土星 日志 索引 城市 国家 台风 回国 出国 全国
各地 当地 本地 外地 国内 国外 海外 老家 家乡 城里 乡下 市区 郊区 南方 北方 小时 小康 老成 小车 小路 老路 小于
""".split())
# The commonest Chinese surnames: a name jieba guesses (not in its
# dictionary) is a person's only when it starts with one; 老/小 + one of them
# is a person (老张, 小王).
ZH_SURNAMES = frozenset("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
                        "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛"
                        "郝龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞"
                        "左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕"
                        "屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米杭")
ZH_COMPOUND_SURNAMES = ("欧阳", "司徒", "上官", "诸葛", "东方", "慕容", "司马", "夏侯", "皇甫", "令狐", "公孙",
                        "尉迟", "长孙", "端木", "西门", "独孤", "南宫")
