"""English clauses: does one make a todo or a promise, or report that a task
is done? Plain patterns over a clause normalised for chat (lower case, typos
such as "tmrw" and "rmind", fillers such as "ok", "lol" dropped); ``intent``
cuts messages into clauses and weighs them.

A **todo** is the speaker's own commitment, so a clause counts when

* it asks to be reminded ("remind me to", "don't forget", "note to self",
  "TODO:", "put … on my list"), even as a question ("can you remind me …?");
* or the speaker (I, we, or no subject: "will fix it later") says a settled
  future or an obligation: "I'll", "I'm going to", "I need to", "gotta",
  "I promised …", "I owe Dan a reply"; "let me", "I should" and "I'm
  calling the bank" only with a time to come ("tomorrow", "after lunch").

What someone else will do ("Sarah will book it"), a state ("I'll be late"),
a refusal and, over the whole sentence, a hedge ("maybe", "we'll see"), a
condition ("if it rains") or the past ("yesterday", "I used to") is not.

A **done** reports a finished task in any shape: "Sent the invoice", "I've
renewed it", "Tom already paid", "The PR is merged", "Q4 report sent",
"Milk: done", "✅", "Booked!!" — never negated ("not yet", "haven't"),
planned ("will be done"), subordinate ("once it's done") or habitual.
"""

from __future__ import annotations

import functools
import re

# ---------------------------------------------------------------------------
# normalising a clause

_TYPOS = {
    "tmrw": "tomorrow", "tmr": "tomorrow", "tmw": "tomorrow", "tomo": "tomorrow", "tomorow": "tomorrow",
    "tommorow": "tomorrow", "tommorrow": "tomorrow", "2morrow": "tomorrow", "tonite": "tonight",
    "u": "you", "ur": "your", "pls": "please", "plz": "please", "rmind": "remind", "remnd": "remind",
    "rember": "remember", "remeber": "remember", "remembr": "remember", "rmember": "remember",
    "dont": "don't", "wont": "won't", "cant": "can't", "didnt": "didn't", "havent": "haven't",
    "hasnt": "hasn't", "isnt": "isn't", "wasnt": "wasn't", "arent": "aren't", "im": "i'm", "ive": "i've",
    "gonna": "going to", "gotta": "have to", "wanna": "want to", "shoud": "should", "shud": "should",
    "b4": "before", "l8r": "later", "thru": "through",
}
_TYPO = re.compile(r"(?<![\w'])(?:" + "|".join(sorted(_TYPOS, key=len, reverse=True)) + r")(?![\w'])")
_FILLER = re.compile(
    r"^(?:ok(?:ay)?|k+|kk|yep|yup|yeah|yes|ya|sure(?: thing)?|alright|all right|right|hm+|um+|uh+|oh|ah|aha|"
    r"lol|lmao|haha\w*|omg|ugh+|well|so|and|also|anyway|btw|fine|cool|great|nice|perfect|thanks|thank you|"
    r"thx|np|no problem|noted|got it|gotcha|oops|whoops|argh|man|dude|wow|hey|hi)\b[\s,.!:;~-]*")
# emoji, check marks and stray symbols: what remains of a clause is words
_SYMBOLS = re.compile(r"[^\w\s'.,:;!?&/+-]")
_CHECK = re.compile(r"[✅✔☑✓]")


@functools.lru_cache(maxsize=256)
def normalise(clause: str) -> str:
    """The clause in lower case with typos spelled out and leading fillers
    ("ok so", "lol", "yep,") and symbols dropped (each test of a clause
    asks for it: kept for the last few clauses)."""
    s = clause.lower().replace("’", "'").replace("‘", "'")
    s = _TYPO.sub(lambda m: _TYPOS[m.group(0)], s)
    s = _SYMBOLS.sub(" ", s).strip(" \t,.;:!-")
    while True:
        t = _FILLER.sub("", s, count=1)
        if t == s:
            return " ".join(s.split())
        s = t


# ---------------------------------------------------------------------------
# time

_DAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_DAY = rf"(?:{_DAYS}|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)"
_MONTH = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|"
          r"apr|jun|jul|aug|sep|sept|oct|nov|dec)")
_FUTURE = re.compile(
    rf"\b(?:today|tonight|tomorrow|later|soon|asap|this (?:morning|afternoon|evening|week|weekend|month|year|{_DAY})|"
    rf"next (?:week|month|year|time|weekend|{_DAY})|(?:on|by|before|until|till) (?:the )?{_DAY}|"
    rf"(?:by|before|until|till) (?:tomorrow|tonight|noon|eod|eow|the end|end of|the \d+|\d+|{_MONTH})|"
    rf"(?:after|before) (?:lunch|dinner|breakfast|work|school|bed|the \w+)|first thing|at \d|"
    rf"in (?:an?|a few|\d+|two|three|ten|twenty) (?:min|minute|hour|day|week)s?|"
    rf"when i(?:'m| am)? (?:get )?(?:home|back|there|in)|on (?:the|my) way|{_DAYS}|the \d+(?:st|nd|rd|th))\b")
_PAST_TIME = re.compile(r"\b(?:yesterday|last (?:night|week|month|year|time|weekend|" + _DAY + r")|ago|"
                        r"used to|was going to|were going to|was planning|meant to|should have|could have|"
                        r"would have|remember when|said (?:i|we)(?:'d| would))\b")

# ---------------------------------------------------------------------------
# questions

_AUX = r"(?:did|do|does|will|would|can|could|should|shall|is|are|was|were|have|has|had|am|may|might|must)"
_QUESTION_START = re.compile(
    rf"^(?:{_AUX}(?:n't)? (?:you|i|we|he|she|they|it|that|this|the|there|ya)\b|"
    rf"(?:what|when|where|who|why|how|which)(?:'s| {_AUX}\b))")
_REQUEST = re.compile(r"\b(?:can|could|would|will) you (?:please )?(?:remind me|make sure i|help me remember)\b")


def question(clause: str) -> bool:
    """Does the clause ask rather than say ("Did you send it?", "did u pay
    rent")? A request to be reminded is not one ("Can you remind me …?")."""
    s = normalise(clause)
    if _REQUEST.search(s):
        return False
    return clause.rstrip(" \t.!~").endswith(("?", "？")) or bool(_QUESTION_START.search(s))


# ---------------------------------------------------------------------------
# todo

_ADV = (r"(?:really|definitely|def|totally|just|still|also|first|then|quickly|actually|honestly|seriously|"
        r"absolutely|certainly|surely|finally|now)")
_REMIND = [
    re.compile(r"\bremind(?:er)? (?:me|us)\b(?!,? (?:what|who|how|where|which|why|whether|of)\b)"),
    re.compile(r"\bremember to\b"),
    re.compile(r"\b(?:don't|do not) (?:let (?:me|us) )?forget\b"),
    re.compile(r"\bmake sure (?:i|we|to)\b"),
    re.compile(r"\b(?:note|memo|reminder) to (?:self|myself)\b|\breminder\s*:"),
    re.compile(r"(?:^|\s)(?:todo|to-do|to do)\s*(?::|[\-–—]\s)|^(?:todo|to-do)\b(?![\s-]?(?:list|app|item))"),
    re.compile(r"\b(?:put|add|stick)\b.{1,60}\b(?:on|to) (?:my|the|our) (?:to-?do |todo )?list\b|"
               r"\bon my (?:to-?do |todo )?list\b"),
    re.compile(r"\bset (?:a|an|me a) (?:reminder|alarm)\b"),
]
_PROMISE = re.compile(
    r"\b(?:i|we)(?: have| had|'ve|'d)? (?:already |just )?(?:promised|swore|committed to|agreed to|"
    r"volunteered to|offered to|told [\w' ]{1,30}? (?:i|we)(?:'d| would| will|'ll))\b|\bi owe \w+(?: \w+)? an? \w+")
# a settled future or an obligation, the speaker's own
_MODAL = (r"(?:'ll|will|shall|'m going to|am going to|'re going to|are going to|'m planning (?:to|on)|"
          r"am planning (?:to|on)|'re planning (?:to|on)|plan to|intend to|need to|have to|'ve got to|"
          r"have got to|got to|must|'d better|had better|'m supposed to)")
_BARE_MODAL = r"(?:will|going to|need to|have to|got to|must|better|plan to|planning to)"  # "will fix it later"
# what follows a modal without making a commitment: a state, a feeling, a choice
_NOT_ACT = (r"(?:be\b(?! \w+ing\b)|"
            # "I'll have the salmon", but "I'll have the draft on your desk by Monday"
            r"have\b(?! to\b)"
            r"(?!.{0,60}?\b(?:ready|done|finished|sent|fixed|back|over|to you|in your|on your|by|before)\b)|"
            r"see\b(?! (?:the|a|my|dr|doctor|dentist)\b)|think|miss|bet|admit|say|pass|wait|never|not|always|"
            r"probably|maybe|possibly|likely|need\b(?! to)|want|like|love|hate|regret|"
            r"take (?:it|that|this|one|the \w+ one)\b|sleep on|"
            # a promise to report back to the one spoken to is no task of its own
            r"tell you\b|let you know)")
_COMMIT = re.compile(
    rf"(?:\b(?:i|we)(?: {_ADV})*(?:{_MODAL}|\s{_MODAL})|^(?:{_ADV} )*{_BARE_MODAL})"
    rf"(?: {_ADV})* (?!{_NOT_ACT})[a-z]")
_NEEDS_TIME = [
    re.compile(r"\blet(?: me|'s| us) (?!know|see|think|guess|explain|be|check if|just say)[a-z]"),
    re.compile(rf"\b(?:i|we)(?: {_ADV})* should(?: {_ADV})* (?!have|be)[a-z]"),
    re.compile(r"\b(?:i'm|i am|we're|we are) (?!going\b|planning\b|feeling|thinking|wondering|hoping|trying|"
               r"looking|kidding|joking|dying|starving|getting|being|having|loving|enjoying|doing (?:fine|good|"
               r"well|ok|great))[a-z]{2,}ing\b"),
    re.compile(rf"^(?:{_ADV} )*(?!feeling|thinking|hoping|looking|wondering|going|nothing|something|anything|"
               r"everything|morning|evening|thing|king|ring|spring|string|sibling|during|boring|amazing|"
               r"interesting|exciting|annoying|raining|snowing)[a-z]{2,}ing\b"),
]
_PLAN = re.compile(r"\b(?:my|our) (?:plan|goal|todo|to-do)(?: for [\w ]{1,20}?)?(?: is to|:)")
_HEDGE = re.compile(
    r"\b(?:maybe|might|perhaps|possibly|probably|someday|some day|one day|at some point|sometime|not sure|"
    r"i guess|i think|i suppose|hopefully|i hope|i'd (?:like|love) to|i would (?:like|love) to|i wish|"
    r"we'll see|i'll see (?:if|how|what|whether|about)|think about|thinking about|considering|no idea|"
    r"would(?! you)|could(?! you)|when i (?:have|get|find) (?:the )?(?:time|a chance|a minute|around))\b")
_CONDITION = re.compile(r"(?<!check )(?<!see )(?<!ask )(?<!know )(?<!out )(?<!verify )(?<!confirm )(?<!test )"
                        r"(?<!wonder )(?<!decide )\b(?:if|unless|in case|provided|as long as|depending on|"
                        r"assuming|only when)\b")
_REFUSE = re.compile(r"\b(?:won't|will not|'ll never|will never|(?:'m|am|are|'re) not (?:going|planning)|"
                     r"not going to|don't (?:need|have|plan|intend|want) to|no need to|never|'ll not|"
                     r"can't|cannot|shouldn't|mustn't)\b")
_HABIT = re.compile(r"\b(?:always|usually|every (?:day|morning|night|week|month|time|year|" + _DAY + r")|"
                    r"each (?:day|week|morning)|often|sometimes)\b")


def todo(clause: str) -> bool:
    """Does this clause (not a question) make a todo or a promise of the
    speaker's? Hedges, conditions and the past are the sentence's
    business (``unsure``)."""
    s = normalise(clause)
    if any(p.search(s) for p in _REMIND):
        return not _REFUSE.search(s.replace("don't forget", "").replace("don't let me forget", ""))
    if _PROMISE.search(s):
        return True
    if _REFUSE.search(s) or _HABIT.search(s):
        return False
    if _COMMIT.search(s) or _PLAN.search(s):
        return True
    return bool(_FUTURE.search(s)) and any(p.search(s) for p in _NEEDS_TIME)


def unsure(sentence: str) -> bool:
    """Does the sentence make a would-be promise uncertain, conditional or
    past: a hedge ("maybe", "we'll see"), a condition ("if it rains",
    "unless"), the past ("yesterday", "I used to")? A request to be reminded
    is held back by a condition only (its past words are about the task:
    "remind me to send yesterday's notes"), a promise made earlier by a
    condition or the past (its "would" is reported speech: "I promised Tom
    I would fix it")."""
    s = normalise(sentence)
    if any(p.search(s) for p in _REMIND):
        return bool(_CONDITION.search(s))
    if _PROMISE.search(s):
        return bool(_CONDITION.search(s) or _PAST_TIME.search(s))
    return bool(_HEDGE.search(s) or _CONDITION.search(s) or _PAST_TIME.search(s))


# ---------------------------------------------------------------------------
# done

# the past of the verbs of doing that end otherwise than in -ed
_IRREGULAR = frozenset("""
sent paid bought brought took got made did done wrote written gave given put set ran run found met built drove
driven sold held fed hung cut shut swept threw thrown told spoke spoken taught caught won drew drawn rode ridden
ate eaten drank went dug lent laid spent hid hidden shook sang wore worn tore torn struck withdrew rewrote redid
undid chose chosen froze frozen bound wound sought split spread cast quit taken gotten read upheld
""".split())
# past forms that report no finished task: a thought, a feeling, an event, a failure, a start
_NOT_DONE_VERB = frozenset("""
said thought forgot tried wanted needed liked loved hated hoped seemed felt heard saw noticed realized realised
decided planned meant started began missed failed lost happened rained snowed crashed broke died used supposed
wondered guessed waited stayed slept woke sat stood lived worked played watched enjoyed had was were became
promised agreed expected assumed left stuck came told
""".split())
# -ed words that are adjectives more often than reports
_ADJECTIVE = frozenset("""
tired bored excited worried scared stressed confused annoyed pleased surprised amazed shocked disappointed
relieved interested married engaged involved supposed used based related limited advanced detailed complicated
dedicated talented crowded wasted blessed beloved naked wicked sacred aged learned embarrassed frustrated
exhausted overwhelmed motivated focused determined inspired satisfied concerned obsessed depressed thrilled
delighted amused impressed convinced puzzled hooked closed located named known born due
need speed seed feed weed breed indeed proceed exceed hundred bed red shed wed sled shred led
""".split())
# verbs of a task whose present passive says it is finished ("the PR is merged")
_TASK = frozenset("""
sent paid fixed booked bought called emailed texted pinged replied answered submitted filed signed renewed
cancelled canceled ordered returned delivered shipped merged deployed pushed released published uploaded
updated migrated rotated cleaned washed watered fed walked scheduled rescheduled confirmed finished completed
written drafted reviewed approved tested installed upgraded configured restarted rebooted archived packed
printed posted mailed replaced repaired registered applied refilled cooked tidied vacuumed mowed painted
repainted organized organised sorted handled resolved tagged labelled labeled checked verified backed moved
transferred wired deposited invoiced charged refunded locked prepped prepared wrapped done taken dropped
picked collected renamed deleted removed added set built made solved settled
""".split())

_RESULT = (r"(?:done|finished|complete|completed|ready|out|live|up and running|in (?:the|your|my) inbox|"
           r"on (?:its|the|their) way|sorted(?: out)?|set up|all set|good to go|squared away|clean|"
           r"taken care of|back up|handled|settled|through)")
_DONE_BLOCK = re.compile(
    r"\b(?:not|never|nothing|nobody|none|nope|nah|yet to|no longer|almost|nearly|half|partly|partially|"
    r"pending|in progress|underway|about to|trying to|tried to|working on|started|starting|failed|"
    r"forgot|will|shall|going to|need to|needs to|have to|has to|got to|should|must|would|could|can|might|"
    r"may|let me|let's|plan|planning|want to|hope|supposed to|so done|done with (?:this|that|you|it|him|her|"
    r"them|people|life|everything))\b|n't\b|^no\b|'ll\b")
_SUBORDINATE = re.compile(r"^(?:once|when|whenever|after|before|until|till|as soon as|if|unless|by the time|"
                          r"while|because|since)\b")
_ACK = re.compile(r"^(?:got it|got you|understood|agreed|received|confirmed|noted|sounds good)$")
_BARE_DONE = re.compile(rf"^(?:all |now |finally |already |it's all |everything's )?(?:done|finished|completed|"
                        rf"complete|sorted|{_RESULT})(?: and (?:done|dusted))?(?: now| already| too)?$")
_COLON_DONE = re.compile(rf"^[^:]{{1,60}}:\s*(?:all )?(?:done|finished|complete|ok|\w+ed|sent|paid|{_RESULT})$")
_STATE = re.compile(r"\b(?:is|are|was|were|'s|'re|has been|have been|had been|got|gets|been|i'm|i am|we're|"
                    r"we are)(?: (?:all|now|finally|already|just|officially|fully|completely))* (?!called\b)(\w+)\b")
_STATE_RESULT = re.compile(rf"\b(?:is|are|was|were|'s|'re|has been|have been|been|i'm|i am|we're|we are)"
                           rf"(?: (?:all|now|finally|already|just|officially|fully|completely))* {_RESULT}\b")
_MANAGED = re.compile(r"\b(?:got around to \w+ing|managed to \w+|checked off|crossed off|ticked off|"
                      r"took care of|taken care of)\b")
_OBJECT_START = re.compile(r"\s+(?:the|a|an|my|your|his|her|our|their|it|them|him|me|us|you|this|that|"
                           r"these|those|all|both|some)\b")


_SHORT_ED = 3  # "bed", "red": too short to be a past in -ed


def _past(word: str) -> bool:
    """Is ``word`` the past of a verb (regular or not) that can report a
    finished task?"""
    if word in _NOT_DONE_VERB or word in _ADJECTIVE:
        return False
    return word in _IRREGULAR or (len(word) > _SHORT_ED and word.endswith("ed") and not word.endswith("eed"))


_LEAD = re.compile(r"^(?:(?:just|finally|already|also|quickly|successfully|literally|actually|totally|all|"
                   r"both|then|officially|and|i|we|i've|we've|i have|we have|have)\s+)*")
# the same in the present and the past: at the start of a clause, an order ("Put it on my list")
_SAME_FORM = frozenset("put set cut read quit split spread cast shut hit let".split())


def _first_past(s: str) -> bool:
    """"Sent the invoice", "finally fixed it", "I've renewed it": the clause
    opens (after adverbs, or I/we) with the past of a verb of doing."""
    rest = _LEAD.sub("", s)
    first = rest.split(" ", 1)[0] if rest else ""
    if first == "got" and re.match(r"got (?:it|you|to|home|back|tired|sick|lost|up|there)\b", rest):
        return False
    if first == "went" and re.match(r"went (?:to bed|out|well|wrong|home|back|on)\b", rest):
        return False
    if first in _SAME_FORM and rest == s:
        return False
    # "Finished goods are stored …": an adjective before the subject
    return bool(first) and _past(first) and not re.search(r"\b(?:is|are|was|were)\b", rest)


# words that start a clause rather than a noun phrase ("no" of "No worries, it's explained")
_PRONOUN = frozenset("i we you he she they it me us him her them no".split())
_BREAK = frozenset("is are was were will to not".split())


def _clause_word(w: str) -> bool:
    """A word that makes what stands before a participle a clause, not a
    noun phrase: a pronoun, or a pronoun with its verb ("it's", "i'm"; not
    a possessive: "Leo's bike fixed")."""
    base, _, rest = w.partition("'")
    return w in _PRONOUN or bool(rest) and (base in _PRONOUN or base in ("that", "there", "what", "here", "who")
                                            or rest in ("m", "re", "ve", "ll", "d"))


def _reduced(s: str) -> bool:
    """"Q4 report sent", "Dentist checkup booked for the 9th", "Tom already
    sent the invoice", "The migration finished": a noun phrase (no pronoun
    in it) and the past of a verb of doing. A verb not of a task ("The
    meeting ran long") counts only after a bare noun and with no object."""
    words = s.split()
    for i, w in enumerate(words[1:5], start=1):
        if w in _BREAK or _clause_word(words[i - 1]):
            return False
        if not _past(w):
            continue
        if w in _TASK:
            return True
        return not _OBJECT_START.match(" " + " ".join(words[i + 1:])) and words[0] not in ("the", "a", "an")
    return False


def _not_done(s: str) -> bool:
    """Negated, planned, subordinate, habitual, an acknowledgement, or a
    request to be reminded ("Put it on my list" is no report of "put")."""
    return bool(_DONE_BLOCK.search(s) or _SUBORDINATE.search(s) or _HABIT.search(s) or _ACK.match(s)
                or any(p.search(s) for p in _REMIND))


def _passive(s: str) -> bool:
    """"The PR is merged", "All the API keys are rotated now", "The package
    was delivered": a task verb in the present passive, any verb of doing in
    the past one."""
    state = _STATE.search(s)
    if not state:
        return False
    return state.group(1) in _TASK or (bool(re.search(r"\b(?:was|were|has been|have been|had been|got)\b", s))
                                       and _past(state.group(1)))


def done(clause: str) -> bool:
    """Does this clause (not a question) report that a task is done?"""
    s = normalise(clause)
    if not s:
        return bool(_CHECK.search(clause))  # a bare "✅"
    if _not_done(s):
        return False
    if _CHECK.search(clause) or _BARE_DONE.match(s) or _COLON_DONE.match(s) or _MANAGED.search(s):
        return True
    return bool(_STATE_RESULT.search(s)) or _passive(s) or _first_past(s) or _reduced(s)
