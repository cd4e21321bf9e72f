"""A query word no memory holds stands for the pieces of it that memories do
hold (issue 31, pattern 1).

jieba cuts a short question and a long memory differently where its HMM
guesses a word its dictionary lacks: "王沈是哪里人？" gives 王沈是 (the name glued
to 是), while the paragraph about him gave 王沈. The word lane then has no
term for the name, and the rare-term lane ranks by 人; only the bigram lane
sees 王沈, and three lanes matching 人 outvote it. So a CJK query word that no
memory's words hold is read as its longest pieces that some memory's words
hold, left to right (王沈是 → 王沈; 白岳峰现 → 白岳峰), each with the word's
weight; a piece that is a stop word or only function characters is no
evidence and is left out. The word itself stays (it matches nothing).
"""

from __future__ import annotations

from typing import Callable, Mapping

from ..model.lexicon import ZH_FUNCTION_CHARS, ZH_STOP, is_cjk_char

# pieces shorter than this are not taken: one character of a name is any
# memory's (沈, 是)
SHORTEST = 2


def in_vocabulary(words: Mapping[str, float], held: Callable[[str], int]) -> Mapping[str, float]:
    """``words``, and for each CJK word no memory holds, its pieces that some
    memory holds (the longest first, left to right). ``held``: how many
    memories hold a word (the index's df), or whether any does."""
    unknown = [w for w in words if len(w) > SHORTEST and is_cjk_char(w[0]) and not held(w)]
    if not unknown:
        return words
    out = dict(words)
    for word in unknown:
        for piece in _pieces(word, held):
            out[piece] = max(out.get(piece, 0.0), words[word])
    return out


def _pieces(word: str, held: Callable[[str], int]) -> list[str]:
    found = []
    i = 0
    while i < len(word) - 1:
        for j in range(len(word) - (i == 0), i + SHORTEST - 1, -1):  # (not the whole word: it is unknown)
            piece = word[i:j]
            if piece not in ZH_STOP and not all(c in ZH_FUNCTION_CHARS for c in piece) and held(piece):
                found.append(piece)
                i = j
                break
        else:
            i += 1
    return found
