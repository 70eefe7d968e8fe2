"""Retrieved passages are stored once per store, shared by the campaigns that retrieved them; a store written
before they were shared is moved over on opening and reads the same."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evalcore.campaigns import CampaignManager, campaign_results
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.records import Outcome, Question
from evalcore.campaigns.result_rows import ResultWriter, read_results
from evalcore.compare import compare_campaigns
from evalcore.store import (
    MIGRATIONS,
    Connection,
    Store,
    StoredPassage,
    migration_step,
    read_passages,
    split_script,
    unpack,
)
from evalcore.store.opening import open_store
from evalcore.store.packing import packed_ids
from evalcore.targets import Retrieved, TargetConfig
from tests.conftest import write_dataset

# What an older evalcore stored: the passages once per campaign, each campaign numbering its own from 0; the two
# campaigns retrieved one passage in common (B's key 0 is A's key 1), whose text has Han and accented characters.
SHARED = (11, "", "Délais", "退货期为三十天。Délai: 30 jours.")
PASSAGES = {"A": [(10, "", "Returns", "Thirty days from delivery."), SHARED],
            "B": [SHARED, (12, "manual.pdf", "Warranty", "Two years.")]}
RANKED = {"A": ['{"k":[1,0],"f":[1.0,0.5],"st":{"bm25":[3.5,1.75],"bm25_norm":6}}',
                '{"k":[0],"s":[0.25],"st":{}}'],
          "B": ['{"k":[0,1],"f":[1.0,0.75],"st":{"bm25":[2.0,1.5],"bm25_norm":6}}', "[]"]}


def hit(pid: int, source: str, title: str, text: str, score: float, stages: dict[str, float]) -> Retrieved:
    return Retrieved(pid, title, text, score, stages, source)


EXPECTED = {
    "A": [(hit(11, "", "Délais", "退货期为三十天。Délai: 30 jours.", 1.0, {"bm25": 3.5, "bm25_norm": 1.0}),
           hit(10, "", "Returns", "Thirty days from delivery.", 0.5, {"bm25": 1.75, "bm25_norm": 0.5})),
          (hit(10, "", "Returns", "Thirty days from delivery.", 0.25, {}),)],
    "B": [(hit(11, "", "Délais", "退货期为三十天。Délai: 30 jours.", 1.0, {"bm25": 2.0, "bm25_norm": 1.0}),
           hit(12, "manual.pdf", "Warranty", "Two years.", 0.75, {"bm25": 1.5, "bm25_norm": 0.75})),
          ()],
}
BEFORE = len(MIGRATIONS) - next(i for i, script in enumerate(reversed(MIGRATIONS)) if migration_step(script)) - 1


def old_rows(execute) -> None:
    """Two campaigns as the version before shared passages stored them."""
    for campaign in ("A", "B"):
        execute("INSERT INTO campaigns (id, tenant, kind, source, status, total, finished, failed, created_at, "
                f"ended_at, config) VALUES ('{campaign}', 'default', 'dataset', 'default', 'succeeded', 2, 2, 0, 0, 1, "
                "'{}')")
        for position, ranked in enumerate(RANKED[campaign]):
            execute("INSERT INTO campaign_questions (campaign_id, position, qid, question, refs, expected_sources) "
                    f"VALUES ('{campaign}', {position}, {position + 1}, 'q{position}', '[]', '[]')")
            execute("INSERT INTO results (campaign_id, position, qid, answer, retrieved, context, sources, measures, "
                    f"signatures, results, judges, created_at) VALUES ('{campaign}', {position}, {position + 1}, "
                    f"'a', '{ranked}', '1', '', '{{\"mrr\":0.5}}', '{{}}', '{{}}', '{{}}', 0)")
        for key, (pid, source, title, text) in enumerate(PASSAGES[campaign]):
            execute(f"INSERT INTO campaign_passages VALUES ('{campaign}', {key}, {pid}, '{source}', '{title}', "
                    f"'{text}')")


def old_store(db: str, tmp_path: Path) -> str:
    """A store at the schema version before shared passages, holding `old_rows`."""
    if db.endswith(".db"):
        conn = sqlite3.connect(db)
        for script in MIGRATIONS[:BEFORE]:
            for statement in split_script(script):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {BEFORE}")
        old_rows(conn.execute)
        conn.commit()
        conn.close()
        return db
    import psycopg

    from evalcore.store.postgres import ddl

    with psycopg.connect(db, autocommit=True) as conn:
        for script in MIGRATIONS[:BEFORE]:
            for statement in split_script(script):
                conn.execute(ddl(statement))  # type: ignore[arg-type] - a statement of the schema
        conn.execute("CREATE TABLE evalcore_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO evalcore_schema VALUES (%s)", (BEFORE,))
        old_rows(conn.execute)
    return db


def test_a_store_written_before_passages_were_shared_is_moved_over_and_reads_the_same(db: str,
                                                                                     tmp_path: Path) -> None:
    with open_store(old_store(db, tmp_path)) as store:
        for campaign in ("A", "B"):
            results = read_results(store, campaign)
            assert [r.outcome.retrieved for r in results] == EXPECTED[campaign]
            lean = read_results(store, campaign, detail=False)
            assert [[(h.pid, h.title, h.text) for h in r.outcome.retrieved] for r in lean] == \
                [[(h.pid, h.title, h.text) for h in ranked] for ranked in EXPECTED[campaign]]
        stored = list(read_passages(store, range(10)))
        # Three distinct passages, each once: the one both campaigns retrieved is shared.
        assert sorted((pid, source, title, text) for _, pid, source, title, text in stored) == \
            sorted(set(PASSAGES["A"] + PASSAGES["B"]))
        if db.endswith(".db"):
            assert not store.read("SELECT name FROM sqlite_master WHERE name = 'campaign_passages'")
        texts = store.read("SELECT text FROM passage_texts")
        assert all(isinstance(unpack(row["text"]), str) for row in texts)
        # A new row of campaign B ranks A's passages: found by their content under the ids the migration gave them.
        writer = ResultWriter(store, "B")
        rows, passages, signatures = writer.rows([(Question(1, 2, "q1"), Outcome(
            answer="a", retrieved=EXPECTED["A"][0], context=EXPECTED["A"][0][:1]))])
        store.write(lambda conn: writer.write(conn, rows, passages, signatures, {}))
        assert store.read("SELECT count(*) AS n FROM passage_texts")[0]["n"] == 3  # none added
        assert [r.outcome.retrieved for r in read_results(store, "B")] == [EXPECTED["B"][0], EXPECTED["A"][0]]
        assert [r.outcome.retrieved for r in read_results(store, "A")] == EXPECTED["A"]


def test_a_passage_is_stored_once_whatever_the_campaigns_that_retrieved_it(tmp_path: Path) -> None:
    dataset = str(write_dataset(tmp_path / "tiny"))
    manager = CampaignManager(tmp_path / "e.db")
    try:
        config = TargetConfig.of(retriever="bm25")
        first = manager.launch(LaunchRequest(dataset=dataset, config=config))
        manager.wait(first)
        count = manager.store.read("SELECT count(*) AS n FROM passage_texts")[0]["n"]
        ranked = manager.store.read("SELECT packed FROM results WHERE campaign_id = ?", (first,))
        ids = {key for row in ranked for key in packed_ids(row["packed"])}
        assert count == len(ids)
        assert count > 0
        second = manager.launch(LaunchRequest(dataset=dataset, config=config))
        manager.wait(second)
        assert manager.store.read("SELECT count(*) AS n FROM passage_texts")[0]["n"] == count  # nothing new stored
        a, b = campaign_results(manager.store, first), campaign_results(manager.store, second)
        assert [r.outcome.retrieved for r in a] == [r.outcome.retrieved for r in b]
        assert all(h.text for r in a for h in r.outcome.retrieved)
        compared = compare_campaigns(manager.store, first, second)
        assert len(compared.questions) == len(a)
    finally:
        manager.close()


def test_a_stored_passage_reads_back_exactly() -> None:
    text = "Délai: 30 jours. 退货期为三十天。" * 40 + "\ud800 lone"
    passage = StoredPassage.of(7, "a.pdf", "Titre", text)
    assert unpack(passage.packed) == text.replace("\ud800", "\ufffd")
    assert len(passage.packed) < len(text.encode("utf-8", "replace")) / 4  # repeated text compresses
    assert passage.digest == StoredPassage.of(7, "a.pdf", "Titre", text.replace("\ud800", "\ufffd")).digest
    assert passage.digest != StoredPassage.of(8, "a.pdf", "Titre", text).digest


@pytest.mark.parametrize("rows", [0, 1])
def test_put_passages_finds_those_stored_and_numbers_the_new_ones(tmp_path: Path, rows: int) -> None:
    from evalcore.store import put_passages

    with Store(tmp_path / "e.db") as store:
        existing = [StoredPassage.of(n, "", f"t{n}", f"text {n}") for n in range(rows)]
        store.write(lambda conn: put_passages(conn, existing))
        new = [StoredPassage.of(n, "", f"t{n}", f"text {n}") for n in range(3)]
        ids = store.write(lambda conn: put_passages(conn, new + new[:1]))
        assert sorted(ids.values()) == [0, 1, 2]
        assert [title for _, _, _, title, _ in read_passages(store, [0, 1, 2])] == ["t0", "t1", "t2"]


def test_only_a_passage_the_store_does_not_hold_is_compressed(tmp_path: Path) -> None:
    from evalcore.store import put_passages

    with Store(tmp_path / "e.db") as store:
        store.write(lambda conn: put_passages(conn, [StoredPassage.of(1, "", "t1", "text 1")]))
        again, new = StoredPassage.of(1, "", "t1", "text 1"), StoredPassage.of(2, "", "t2", "text 2")
        store.write(lambda conn: put_passages(conn, [again, new]))
        assert "packed" not in vars(again)  # found by its digest: its text never compressed
        assert "packed" in vars(new)


def test_a_new_sqlite_store_has_large_pages_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    from evalcore.store import PAGE_SIZE

    with Store(tmp_path / "new.db") as store:
        assert store.read("PRAGMA page_size")[0][0] == PAGE_SIZE
    conn = sqlite3.connect(tmp_path / "old.db")
    conn.execute("CREATE TABLE kept (x)")
    conn.commit()
    conn.close()
    with Store(tmp_path / "old.db") as store:
        assert store.read("PRAGMA page_size")[0][0] == 4096
        assert store.read("SELECT count(*) AS n FROM passage_texts")[0]["n"] == 0


def test_a_writer_that_meets_many_new_passages_compresses_them_with_a_dictionary_stored_once(db: str) -> None:
    # A writer's first batch of many new passages teaches the store a dictionary of their words; their texts, and
    # those of every later writer (another campaign), are compressed with it, smaller than alone, and read back
    # exactly; passages stored before it (none here, older stores) keep theirs.
    from evalcore.store import DICTIONARY_FROM, last_dictionary

    words = ["délai", "remboursement", "commande", "livraison", "garantie", "退货", "三十天", "warranty", "returns",
             "delivery", "within", "thirty", "days"]
    texts = [" ".join(words[(n * 7 + k) % len(words)] for k in range(40)) + f" passage {n}."
             for n in range(DICTIONARY_FROM * 2)]
    hits = [hit(n, "", f"T{n}", text, 1.0 / (n + 1), {}) for n, text in enumerate(texts)]
    with open_store(db) as store:
        running(store, "A", "B")
        assert last_dictionary(store) is None
        writer = ResultWriter(store, "A")
        few = tuple(hits[:DICTIONARY_FROM - 1])  # too few to learn from: stored alone
        rows, passages, signatures = writer.rows([(Question(0, 1, "q"), Outcome(answer="a", retrieved=few))])
        store.write(lambda conn: writer.write(conn, rows, passages, signatures, {}))
        assert last_dictionary(store) is None
        many = tuple(hits)
        rows, passages, signatures = writer.rows([(Question(1, 2, "q"), Outcome(answer="a", retrieved=many))])
        store.write(lambda conn: writer.write(conn, rows, passages, signatures, {}))
        dictionary = last_dictionary(store)
        assert dictionary is not None
        assert b"remboursement" in dictionary.data
        stored = store.read("SELECT id, text, dictionary FROM passage_texts ORDER BY id")
        assert [row["dictionary"] is None for row in stored] == [True] * (DICTIONARY_FROM - 1) + [False] * (
            len(texts) - DICTIONARY_FROM + 1)
        with_words = [bytes(row["text"]) for row in stored if row["dictionary"] is not None]
        alone = [StoredPassage.of(n, "", f"T{n}", texts[n]).packed for n in range(DICTIONARY_FROM - 1, len(texts))]
        assert sum(map(len, with_words)) < 0.8 * sum(map(len, alone))
        assert sorted((pid, title, text) for _, pid, _, title, text in read_passages(store, range(len(texts)))) == \
            [(n, f"T{n}", text) for n, text in enumerate(texts)]
        # Another campaign's writer finds the store's dictionary; a passage it alone retrieved is compressed with it.
        other = ResultWriter(store, "B")
        assert other.dictionary == dictionary
        extra = hit(999, "", "Extra", texts[0] + " encore", 1.0, {})
        rows, passages, signatures = other.rows([(Question(0, 1, "q"), Outcome(answer="a", retrieved=(extra,)))])
        store.write(lambda conn: other.write(conn, rows, passages, signatures, {}))
        assert store.read("SELECT count(*) AS n FROM passage_dictionaries")[0]["n"] == 1
        assert store.read("SELECT dictionary FROM passage_texts WHERE pid = 999")[0]["dictionary"] is not None
        assert [r.outcome.retrieved for r in read_results(store, "B")] == [(extra,)]
        assert [r.outcome.retrieved for r in read_results(store, "A")] == [few, many]


def running(store: Store, *campaigns: str) -> None:
    """Campaigns being written, each with two questions."""
    for campaign in campaigns:
        store.write(lambda conn, c=campaign: conn.execute(
            "INSERT INTO campaigns (id, tenant, kind, source, status, total, finished, failed, created_at, config) "
            f"VALUES ('{c}', 'default', 'dataset', 'default', 'running', 2, 0, 0, 0, '{{}}')"))
        store.write(lambda conn, c=campaign: conn.execute(
            "INSERT INTO campaign_questions (campaign_id, position, qid, question, refs, expected_sources) "
            f"VALUES ('{c}', 0, 1, 'q', '[]', '[]'), ('{c}', 1, 2, 'q', '[]', '[]')"))


def stored_pids(store: Store) -> list[int]:
    return sorted(row["pid"] for row in store.read("SELECT pid FROM passage_texts"))


def test_deleting_a_campaign_removes_the_passages_no_campaign_names_and_a_writer_stores_them_again(db: str) -> None:
    from evalcore.store import delete_unused_passages

    p1, p2, p3, p4 = (hit(n, "", f"T{n}", f"texte {n} 退货", 1.0 / n, {}) for n in (1, 2, 3, 4))
    with open_store(db) as store:
        running(store, "A", "B")

        def write(writer: ResultWriter, position: int, ranked: tuple[Retrieved, ...]) -> None:
            rows, passages, signatures = writer.rows([(Question(position, position + 1, "q"),
                                                       Outcome(answer="a", retrieved=ranked))])
            store.write(lambda conn: writer.write(conn, rows, passages, signatures, {}))

        def delete(campaign: str) -> int:
            def run(conn: Connection) -> int:
                conn.execute("DELETE FROM campaigns WHERE id = ?", (campaign,))
                return delete_unused_passages(conn, store.dialect)
            return store.write(run)

        write(ResultWriter(store, "A"), 0, (p1, p2))
        b = ResultWriter(store, "B")
        write(b, 0, (p2, p3))  # finds p2 by its content, stores p3
        write(ResultWriter(store, "B"), 0, (p2,))  # another session writes question 0 again: p3 no longer named
        assert stored_pids(store) == [1, 2, 3]
        assert delete("A") == 2  # p1 (A's alone) and p3 (named by no row) go; p2, named by B, stays
        assert stored_pids(store) == [2]
        assert [[h.pid for h in r.outcome.retrieved] for r in read_results(store, "B")] == [[2]]
        # B's first session still knows p3 by its old id, and meets p1 and p4 anew: all stored again, under ids
        # named by the row, and read back whole.
        write(b, 1, (p3, p1, p2, p4))
        assert stored_pids(store) == [1, 2, 3, 4]
        assert [r.outcome.retrieved for r in read_results(store, "B")] == [(p2,), (p3, p1, p2, p4)]
        assert delete("B") == 4
        assert stored_pids(store) == []
        assert store.read("SELECT sweeps FROM passage_sweeps")[0]["sweeps"] == 2


def test_deleting_real_campaigns_keeps_their_shared_passages_until_the_last_is_deleted(tmp_path: Path) -> None:
    dataset = str(write_dataset(tmp_path / "tiny"))
    manager = CampaignManager(tmp_path / "e.db")
    try:
        config = TargetConfig.of(retriever="bm25")
        first = manager.launch(LaunchRequest(dataset=dataset, config=config))
        manager.wait(first)
        second = manager.launch(LaunchRequest(dataset=dataset, config=config, limit=2))
        manager.wait(second)
        before = stored_pids(manager.store)
        expected = [r.outcome.retrieved for r in campaign_results(manager.store, second)]
        manager.delete(first)
        kept = stored_pids(manager.store)
        assert 0 < len(kept) < len(before)  # the second campaign's passages alone
        assert kept == sorted({h.pid for ranked in expected for h in ranked})
        assert [r.outcome.retrieved for r in campaign_results(manager.store, second)] == expected
        manager.delete(second)
        assert stored_pids(manager.store) == []
    finally:
        manager.close()


def test_a_dictionary_compresses_each_text_to_the_bytes_a_new_compressor_gives() -> None:
    # The compressor that has read the dictionary is copied for each text: random texts of the three languages, one
    # after the other and under two dictionaries, get the bytes a compressor made for each text gives, and read back.
    import random
    import zlib

    from evalcore.store import DICTIONARY_LEVEL, TextDictionary, unpack

    rng = random.Random(3)
    words = ["délai", "remboursement", "commande", "退货", "三十天", "warranty", "returns", "the", "of", "1755"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 300))) for _ in range(200)]
    dictionaries = [TextDictionary.learnt(texts[:100]), TextDictionary.learnt(texts[100:])]
    for n, text in enumerate(texts):
        dictionary = dictionaries[n % 2]
        assert dictionary is not None
        fresh = zlib.compressobj(DICTIONARY_LEVEL, zdict=dictionary.data)
        data = text.encode("utf-8")
        assert dictionary.compress(data) == fresh.compress(data) + fresh.flush()
        assert unpack(dictionary.compress(data), dictionary) == text
