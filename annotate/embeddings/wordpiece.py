"""BERT's uncased WordPiece tokenizer in plain Python, as the model's ``tokenizer.json`` says.

It reproduces what Hugging Face's ``tokenizers`` (which sentence-transformers uses) does with
all-MiniLM-L6-v2's ``tokenizer.json``: the added special tokens are matched in the raw text;
the BertNormalizer removes control characters, turns whitespace into spaces, spaces out CJK
ideographs, strips accents and lowercases; the BertPreTokenizer splits on whitespace and
isolates punctuation (Unicode P* and ASCII punctuation); WordPiece takes the longest known
prefix, then ``##`` pieces, and makes a word it cannot cover (or one longer than 100
characters) a single ``[UNK]``. ``tests/test_embeddings.py`` checks the ids against ones the
``tokenizers`` package produced.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

_CJK = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def normalize(text: str) -> str:
    """The BertNormalizer of ``tokenizers`` (clean text, CJK, strip accents, lowercase)."""
    out: list[str] = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD:
            continue
        if ch in "\t\n\r":
            out.append(" ")
            continue
        if unicodedata.category(ch).startswith("C"):
            continue
        if ch.isspace():
            out.append(" ")
        elif cp > 0x2E7F and _is_cjk(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    stripped = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    return "".join(c.lower() for c in stripped)  # char by char, as tokenizers does


def pre_tokenize(text: str) -> list[str]:
    """Split on whitespace and isolate every punctuation character."""
    words: list[str] = []
    current: list[str] = []
    for ch in text:
        if ch.isspace():
            if current:
                words.append("".join(current))
                current = []
        elif _is_punctuation(ch):
            if current:
                words.append("".join(current))
                current = []
            words.append(ch)
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


class WordPiece:
    """Text to token ids: ``[CLS] pieces [SEP]``, at most ``max_length`` ids."""

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        special: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
        max_input_chars_per_word: int = 100,
    ) -> None:
        self.vocab = dict(vocab)
        self.unk = self.vocab["[UNK]"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]
        self.max_chars = max_input_chars_per_word
        self._special = re.compile("(" + "|".join(re.escape(s) for s in special) + ")")
        self._cache: dict[str, list[int]] = {}

    def _word(self, word: str) -> list[int]:
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        ids: list[int] = []
        if len(word) > self.max_chars:
            ids = [self.unk]
        else:
            start = 0
            while start < len(word):
                end = len(word)
                found = None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    found = self.vocab.get(piece)
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    ids = [self.unk]
                    break
                ids.append(found)
                start = end
        if len(self._cache) < 200_000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str, max_length: int) -> list[int]:
        ids: list[int] = []
        for i, part in enumerate(self._special.split(text)):
            if i % 2:  # a special token written in the text
                ids.append(self.vocab[part])
                continue
            for word in pre_tokenize(normalize(part)):
                ids.extend(self._word(word))
        return [self.cls, *ids[: max_length - 2], self.sep]
