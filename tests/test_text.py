"""Tokenizer `default`, accent folding and sentence splitting."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.language.text import _patterns, fold, split_sentences, tokenize

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Le café est fermé.", ["le", "café", "est", "fermé"]),
        ("pi = 3.14, not 3", ["pi", "3.14", "not", "3"]),
        ("3,5 kg", ["3,5", "kg"]),
        ("Hello, World!", ["hello", "world"]),
        ("ＡＢＣ　１２３", ["abc", "123"]),  # NFKC: full-width letters and digits
        ("Straße", ["strasse"]),  # case folding, not just lowering
        ("version 2.4.1 at 2.4 GHz", ["version", "2.4.1", "at", "2.4", "ghz"]),
        ("in 2023. Then", ["in", "2023", "then"]),
        ("l'été", ["l", "été"]),
        ("", []),
    ],
)
def test_tokenize_table(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_chinese_is_segmented_with_jieba() -> None:
    words = tokenize("我爱北京天安门，价格是3.14元。")
    assert "北京" in words
    assert "天安门" in words
    assert "3.14" in words
    assert "，" not in words
    assert "。" not in words


def test_jiebas_dictionary_is_kept_whole_and_read_back_the_same(tmp_path, monkeypatch) -> None:
    # The prefix dictionary is kept in the temporary folder by the first process and read back by the next ones:
    # the same entries and total as jieba's own, so the same words; a file cut short is not used (jieba's own load
    # runs, and keeps it whole again).
    import tempfile

    import jieba

    from evalcore.language.text import _jieba

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    own = jieba.Tokenizer()
    own.initialize()
    first = _jieba.__wrapped__()
    [kept] = tmp_path.glob("evalcore-jieba-*.prefixes")
    monkeypatch.setattr(jieba.Tokenizer, "initialize", lambda self, dictionary=None: pytest.fail("jieba loaded"))
    again = _jieba.__wrapped__()
    assert again.FREQ == own.FREQ
    assert again.total == own.total
    assert first.total == own.total
    text = "我爱北京天安门，价格是3.14元。退货期限是多少天？欧盟消费者的撤回期"
    assert list(again.cut(text, HMM=True)) == list(own.cut(text, HMM=True))
    whole = kept.stat().st_size
    kept.write_bytes(kept.read_bytes()[:-1000])
    monkeypatch.undo()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert _jieba.__wrapped__().FREQ == own.FREQ
    assert kept.stat().st_size == whole


JIEBA_TEXT = "我爱北京天安门，价格是3.14元。退货期限是多少天？欧盟消费者的撤回期，石墨烯和韩冰的奇遇"


def test_jieba_is_loaded_without_pkg_resources_and_segments_as_jieba_does(tmp_path) -> None:
    # jieba finds its dictionary through pkg_resources when that imports (0.2 s, deprecated), else in its own folder;
    # the tokenizer hides pkg_resources from that import. In a fresh process with an empty temporary folder (no kept
    # prefix dictionary, so jieba reads its dictionary file by the other path), the words are jieba's own, with
    # pkg_resources loaded as usual.
    import subprocess
    import sys

    ours = ("import json, sys; from evalcore.language.text import tokens, _jieba; words = tokens(sys.argv[1]); "
            "print(json.dumps([words, 'pkg_resources' in sys.modules, _jieba().total]))")
    theirs = ("import json, sys, jieba, importlib.util\n"
              "if importlib.util.find_spec('pkg_resources'): import pkg_resources\n"
              "from evalcore.language.text import tokens, _jieba; "
              "print(json.dumps([tokens(sys.argv[1]), 'pkg_resources' in sys.modules, _jieba().total]))")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code, JIEBA_TEXT], capture_output=True, text=True,
                                      env=env, check=True, cwd=ROOT).stdout) for code in (ours, theirs)]
    assert runs[0][1] is False
    assert runs[1][1] is (importlib.util.find_spec("pkg_resources") is not None)
    assert runs[0][0] == runs[1][0]
    assert "天安门" in runs[0][0]
    assert runs[0][2] == runs[1][2] > 0
    assert list(tmp_path.glob("evalcore-jieba-*.prefixes"))   # the dictionary was read from its file, then kept


def test_mixed_scripts_keep_each_word_whole() -> None:
    assert tokenize("Le modèle GPT-4 说中文") [:4] == ["le", "modèle", "gpt", "4"]


def test_fold_strips_case_and_accents() -> None:
    assert fold("Été À Ça NAÏVE") == "ete a ca naive"
    assert fold("北京") == "北京"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("The CPU runs at 2.4 GHz. It is fast.", ["The CPU runs at 2.4 GHz.", "It is fast."]),
        ("第一句。第二句！第三句？", ["第一句。", "第二句！", "第三句？"]),
        ("Il coûte 3,5 €. Voilà.", ["Il coûte 3,5 €.", "Voilà."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("Background: 1. Marie was born in Warsaw. 2. She moved.",
         ["Background: 1. Marie was born in Warsaw.", "2. She moved."]),
        ("line one\nline two", ["line one", "line two"]),
        ("   ", []),
    ],
)
def test_split_sentences_table(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab 12.,!?。！？\n:\"'é中文")), max_size=60))
def test_split_sentences_never_drops_text(text: str) -> None:
    sentences = split_sentences(text)
    assert re.sub(r"\s", "", "".join(sentences)) == re.sub(r"\s", "", text)
    assert all(sentence == sentence.strip() for sentence in sentences)
    assert all(sentence for sentence in sentences)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_tokens_are_never_blank(text: str) -> None:
    assert all(token for token in tokenize(text))
    assert all(not any(c.isspace() for c in token) for token in tokenize(text))


def test_marks_stay_inside_words() -> None:
    assert tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]
    assert tokenize("x\u0301y z") == ["x\u0301y", "z"]  # a mark with no precomposed form


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x2FF), max_size=40))
def test_fast_word_pattern_agrees_below_the_first_mark(text: str) -> None:
    patterns = _patterns()
    assert patterns.plain.findall(text) == patterns.word.findall(text)


# Characters around word and mark boundaries: letters with accents, combining marks, digits with points and commas,
# punctuation, Han, and a few beyond the Basic Multilingual Plane (so that the wide patterns are taken too).
_MIXED = st.one_of(st.characters(max_codepoint=0x36F), st.sampled_from(list("0123456789.,, 。、€–\u0301\u0308\u093f")),
                   st.characters(min_codepoint=0x370, max_codepoint=0xFFFF),
                   st.characters(min_codepoint=0x10000, max_codepoint=0x1FFFF))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0xFFFF), max_size=40) | st.text(alphabet=_MIXED, max_size=40))
def test_the_plane_zero_patterns_agree_with_the_wide_ones(text: str) -> None:
    # Text within the Basic Multilingual Plane is read with classes cut to it (one table lookup per character):
    # the same words and the same accents dropped as the classes that cover every scanned plane.
    from evalcore.language import text as module

    within = "".join(char for char in text if ord(char) < 0x10000)
    assert _patterns().bmp.findall(within) == _patterns().word.findall(within)
    assert module._combining_bmp().sub("", within) == module._combining().sub("", within)
    for sample in (text, within):
        assert module._words(sample) == _patterns().word.findall(sample)
        decomposed = unicodedata.normalize("NFKD", sample.casefold())
        assert fold(sample) == (decomposed if decomposed.isascii() else module._combining().sub("", decomposed))


def test_the_word_and_mark_classes_are_those_of_a_scan_of_every_code_point() -> None:
    # The classes are built from a few whole-plane passes; a code point at a time, with the same Unicode database,
    # gives the same classes (so the same tokens).
    import unicodedata

    from evalcore.language import text

    planes = range(text._SCANNED_PLANES)
    word = [code for code in planes if not text._HAN_RUN.match(chr(code))
            and (chr(code).isalnum() or unicodedata.category(chr(code)).startswith("M"))]
    combining = [code for code in planes if unicodedata.combining(chr(code))]
    assert text._patterns.__wrapped__().word.pattern.startswith(f"[{text._ranges(word)}]+")
    assert text._combining.__wrapped__().pattern == f"[{text._ranges(combining)}]+"
    bmp = [code for code in combining if code < 0x10000]
    assert text._combining_bmp.__wrapped__().pattern == f"[{text._ranges(bmp)}]+"
    assert text._patterns.__wrapped__().bmp.pattern.startswith(f"[{text._ranges([c for c in word if c < 0x10000])}]+")
    assert text._ranges([ord(char) for char in "abcdfxy"]) == "a-dfx-y"
    assert text._ranges([ord("-"), ord("]"), ord("^")]) == "\\-\\]-\\^"   # ] and ^ are neighbours



def test_jiebas_tokenizer_is_built_once_when_many_threads_ask_at_once(monkeypatch) -> None:
    # Each thread that asked before the first tokenizer was stored built its own (seven for sixteen threads, five
    # times the CPU and more than twice the memory): the build is slowed here so that every thread asks meanwhile.
    import threading
    import time

    import jieba

    from evalcore.language.text import _jieba

    built = []

    class Slow(jieba.Tokenizer):
        def __init__(self, *args, **kwargs) -> None:
            built.append(1)
            time.sleep(0.2)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(jieba, "Tokenizer", Slow)
    _jieba.cache_clear()
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(_jieba())) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _jieba.cache_clear()  # the next test builds an ordinary one
    assert len(built) == 1
    assert len(results) == 16
    assert all(result is results[0] for result in results)


def test_once_builds_each_value_once_per_arguments_whatever_the_threads() -> None:
    import threading
    import time

    from evalcore.runtime.lazy import once

    calls: list[int] = []

    @once
    def square(n: int) -> int:
        calls.append(n)
        time.sleep(0.05)
        return n * n

    results: list[int] = []
    threads = [threading.Thread(target=lambda n=n: results.append(square(n % 3))) for n in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(calls) == [0, 1, 2]
    assert sorted(results) == sorted(n % 3 * (n % 3) for n in range(24))
    assert square.__wrapped__(4) == 16
    assert calls[-1] == 4


def test_a_text_seen_once_segments_each_distinct_han_run_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long reply repeating a Chinese phrase: jieba is asked once per distinct run, not once per occurrence (a
    reply of 20,000 repeats otherwise kept its question's thread past its time limit)."""
    from evalcore.language import text as text_module

    asked: list[str] = []
    cut = text_module._cut

    def counting(run: str) -> tuple[str, ...]:
        asked.append(run)
        return cut(run)

    monkeypatch.setattr(text_module, "_cut", counting)
    text_module.clear_caches()
    reply = " ".join(f"refund{i} 退款期限" for i in range(2_000)) + " 路由器"
    words = text_module.tokens_once(reply)
    assert sorted(asked) == ["路由器", "退款期限"]
    assert words.count("退款") == 2_000
