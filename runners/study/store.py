"""One SQLite file per study: its items, participants, and every answer (one format for all human answers).

The file (standard-library ``sqlite3``, WAL journal, ``synchronous=FULL``) holds:

- ``study``: what kind of study it is and how it was made (key -> JSON value);
- ``blobs``: images by the sha256 of their bytes (puzzles, options, answers drawn);
- ``blocks``: per block of items (a TACIT task, or the one block of a rating study) the
  instructions page, frozen at creation;
- ``items``: each item's content (``private``: what only the server sees, such as the meta,
  the answer index or the scenario; ``public``: what its page shows; ``images``: names to blob
  hashes) and the sha256 of that content, so the study cannot change under its answers;
- ``participants``: one row per invited person (only the sha256 of their token is kept) or per
  imported rater, and the instructions they have read;
- ``assignments``: each participant's items in their seeded order (and, for choices, the
  rotation of the options they see);
- ``answers``: one row per (participant, item), each written in its own transaction before
  the browser is told it is saved.

Nothing here opens a file named by a request: the server reads images from ``blobs`` by hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vrforge.errors import UserError

FORMAT = 1
KINDS = ("tacit-choice", "tacit-draw", "cfeval-rate", "drift-rate")
OPTION_COUNT = 5

SCHEMA = """
CREATE TABLE study (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE blobs (sha256 TEXT PRIMARY KEY, mime TEXT NOT NULL, data BLOB NOT NULL);
CREATE TABLE blocks (name TEXT PRIMARY KEY, position INTEGER NOT NULL, content TEXT NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE items (
    id TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE, block TEXT NOT NULL REFERENCES blocks(name),
    task TEXT NOT NULL, difficulty TEXT NOT NULL, source_id TEXT NOT NULL, content TEXT NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE participants (
    id INTEGER PRIMARY KEY, token_sha256 TEXT UNIQUE, label TEXT NOT NULL, source TEXT NOT NULL,
    created_at REAL NOT NULL, seen TEXT NOT NULL DEFAULT '[]');
CREATE TABLE assignments (
    participant INTEGER NOT NULL REFERENCES participants(id), item TEXT NOT NULL REFERENCES items(id),
    position INTEGER NOT NULL, rotation INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (participant, item), UNIQUE (participant, position));
CREATE TABLE shown (participant INTEGER NOT NULL, item TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (participant, item));
CREATE TABLE answers (
    participant INTEGER NOT NULL REFERENCES participants(id), item TEXT NOT NULL REFERENCES items(id),
    item_sha256 TEXT NOT NULL, answer TEXT NOT NULL, result TEXT NOT NULL, image TEXT REFERENCES blobs(sha256),
    elapsed_ms INTEGER, shown_at REAL, answered_at REAL NOT NULL,
    PRIMARY KEY (participant, item));
"""


class StudyError(UserError):
    """A study file that cannot be used as asked (missing, not a study, changed, has answers): one line."""


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class NewItem:
    """An item to store: ``images`` maps names to (bytes, mime)."""

    block: str
    task: str
    difficulty: str
    source_id: str
    private: Mapping[str, Any]
    public: Mapping[str, Any]
    images: Mapping[str, tuple[bytes, str]]


@dataclass(frozen=True)
class NewBlock:
    """A block's instructions page: ``content`` is shown as is; ``images`` (the worked example) by name."""

    name: str
    content: Mapping[str, Any]
    images: Mapping[str, tuple[bytes, str]]


@dataclass(frozen=True)
class Item:
    id: str
    position: int
    block: str
    task: str
    difficulty: str
    source_id: str
    private: dict[str, Any]
    public: dict[str, Any]
    images: dict[str, str]
    sha256: str


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")  # an answer acknowledged is on disk, not only in the OS cache
    connection.execute("PRAGMA foreign_keys=ON")
    return connection


def _answer_count(path: Path) -> int:
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(connection.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise StudyError(f"{path} exists and is not a study file ({exc}); choose another --out") from None


def create_study(path: str | Path, kind: str, settings: Mapping[str, Any], blocks: Sequence[NewBlock],
                 items: Sequence[NewItem]) -> Path:
    """Write a new study file at ``path`` (built under a temporary name, then renamed). A study
    file that already holds answers is never replaced."""
    path = Path(path)
    if kind not in KINDS:
        raise StudyError(f"unknown study kind {kind!r} (choose from {', '.join(KINDS)})")
    if not items:
        raise StudyError("the study would have no items")
    if path.exists():
        answered = _answer_count(path)
        if answered:
            raise StudyError(f"{path} already holds {answered} answer(s); it is never overwritten (choose another --out)")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    for leftover in (temporary, Path(f"{temporary}-wal"), Path(f"{temporary}-shm")):
        leftover.unlink(missing_ok=True)
    connection = sqlite3.connect(temporary, isolation_level=None)
    try:
        connection.executescript(SCHEMA)
        connection.execute("BEGIN")
        info = {"format": FORMAT, "kind": kind, "created_at": time.time(), **settings}
        connection.executemany("INSERT INTO study VALUES (?, ?)", [(k, canonical(v)) for k, v in sorted(info.items())])

        def blob(data: bytes, mime: str) -> str:
            digest = hashlib.sha256(data).hexdigest()
            connection.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?, ?)", (digest, mime, data))
            return digest

        names = set()
        for position, block in enumerate(blocks):
            content = {**block.content, "images": {name: blob(*image) for name, image in sorted(block.images.items())}}
            text = canonical(content)
            connection.execute("INSERT INTO blocks VALUES (?, ?, ?, ?)", (block.name, position, text, sha256_text(text)))
            names.add(block.name)
        for position, item in enumerate(items):
            if item.block not in names:
                raise StudyError(f"item {item.source_id} names an unknown block {item.block!r}")
            content = {"private": item.private, "public": item.public,
                       "images": {name: blob(*image) for name, image in sorted(item.images.items())}}
            text = canonical(content)
            # Opaque ids: nothing in an item's address says what it is or where it sits.
            connection.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               (secrets.token_urlsafe(9), position, item.block, item.task, item.difficulty, item.source_id,
                                text, sha256_text(text)))
        connection.execute("COMMIT")
    except BaseException:
        connection.close()
        temporary.unlink(missing_ok=True)
        raise
    connection.close()
    for stale in (Path(f"{path}-wal"), Path(f"{path}-shm")):  # an old file's journal must not replay onto the new one
        stale.unlink(missing_ok=True)
    os.replace(temporary, path)
    return path


class Study:
    """An open study file. Every method opens its own short transaction; safe across threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise StudyError(f"no such study file: {self.path}")
        try:
            self._db = _connect(self.path)
            rows = self._db.execute("SELECT key, value FROM study").fetchall()
        except sqlite3.DatabaseError as exc:
            raise StudyError(f"{self.path} is not a study file ({exc})") from None
        self.info = {k: json.loads(v) for k, v in rows}
        if self.info.get("format") != FORMAT or self.info.get("kind") not in KINDS:
            raise StudyError(f"{self.path} is not a vrforge study (format {self.info.get('format')!r})")
        self.kind: str = self.info["kind"]
        self._items: dict[str, Item] | None = None
        # One connection shared by the server's threads: each transaction and read holds the lock.
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Study:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on any error): one writer at a time."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, parameters).fetchall()

    # ------------------------------------------------------------ items and blocks

    def items(self) -> dict[str, Item]:
        if self._items is None:
            items = {}
            for row in self._query("SELECT id, position, block, task, difficulty, source_id, content, sha256 "
                                   "FROM items ORDER BY position"):
                content = json.loads(row[6])
                items[row[0]] = Item(row[0], row[1], row[2], row[3], row[4], row[5], content["private"], content["public"],
                                     content["images"], row[7])
            self._items = items
        return self._items

    def blocks(self) -> dict[str, dict[str, Any]]:
        return {name: json.loads(content)
                for name, content in self._query("SELECT name, content FROM blocks ORDER BY position")}

    def blob(self, digest: str) -> tuple[bytes, str] | None:
        rows = self._query("SELECT data, mime FROM blobs WHERE sha256 = ?", (digest,))
        return (bytes(rows[0][0]), rows[0][1]) if rows else None

    def check_integrity(self) -> None:
        """StudyError naming the first item, block or image whose content no longer matches its sha256."""
        for name, content, digest in self._query("SELECT name, content, sha256 FROM blocks"):
            if sha256_text(content) != digest:
                raise StudyError(f"{self.path}: the instructions of block {name!r} changed after the study was created")
        for item_id, source, content, digest in self._query("SELECT id, source_id, content, sha256 FROM items"):
            if sha256_text(content) != digest:
                raise StudyError(f"{self.path}: item {source} ({item_id}) changed after the study was created")
        for digest, data in self._query("SELECT sha256, data FROM blobs"):
            if hashlib.sha256(bytes(data)).hexdigest() != digest:
                raise StudyError(f"{self.path}: an image ({digest[:12]}) changed after the study was created")
        stale = self._query("SELECT a.participant, i.source_id FROM answers a JOIN items i ON a.item = i.id "
                            "WHERE a.item_sha256 != i.sha256 LIMIT 1")
        if stale:
            raise StudyError(f"{self.path}: item {stale[0][1]} differs from the one participant {stale[0][0]} answered")

    # ------------------------------------------------------------ participants

    def invite(self, count: int, *, each: int | None = None, labels: Sequence[str] | None = None) -> list[tuple[int, str]]:
        """``count`` new participants with their tokens (kept nowhere but in the returned links):
        every item, or ``each`` items drawn so that every item is answered about equally often."""
        if count < 1:
            raise StudyError(f"--participants must be at least 1, got {count}")
        items = list(self.items().values())
        if each is not None and not 1 <= each <= len(items):
            raise StudyError(f"--items-each must be from 1 to {len(items)} (the study's items), got {each}")
        seed = int(self.info.get("seed", 0))
        out = []
        with self.transaction() as db:
            load = {item.id: 0 for item in items}
            for (item_id, n) in db.execute("SELECT item, COUNT(*) FROM assignments GROUP BY item"):
                load[item_id] = n
            for k in range(count):
                token = secrets.token_urlsafe(24)
                label = labels[k] if labels and k < len(labels) else ""
                cursor = db.execute("INSERT INTO participants (token_sha256, label, source, created_at) VALUES (?, ?, ?, ?)",
                                    (token_hash(token), label, "invited", time.time()))
                pid = int(cursor.lastrowid or 0)
                rng = np.random.default_rng([seed, pid])
                chosen = items
                if each is not None:  # the least answered items first, ties in a seeded order
                    tie = rng.permutation(len(items))
                    ranked = sorted(range(len(items)), key=lambda i: (load[items[i].id], int(tie[i])))
                    chosen = [items[i] for i in sorted(ranked[:each])]
                for item in chosen:
                    load[item.id] += 1
                order = self._seeded_order(chosen, rng)
                db.executemany("INSERT INTO assignments VALUES (?, ?, ?, ?)",
                               [(pid, item.id, position, (pid + item.position) % OPTION_COUNT)
                                for position, item in enumerate(order)])
                out.append((pid, token))
        return out

    @staticmethod
    def _seeded_order(items: Sequence[Item], rng: np.random.Generator) -> list[Item]:
        """Blocks (tasks) in a seeded order, each block's items shuffled: one instructions page per block."""
        blocks: dict[str, list[Item]] = {}
        for item in items:
            blocks.setdefault(item.block, []).append(item)
        names = sorted(blocks)
        order: list[Item] = []
        for b in rng.permutation(len(names)).tolist():
            group = blocks[names[b]]
            order += [group[i] for i in rng.permutation(len(group)).tolist()]
        return order

    def participant(self, token: str) -> int | None:
        if not isinstance(token, str) or not 10 <= len(token) <= 100:
            return None
        rows = self._query("SELECT id FROM participants WHERE token_sha256 = ?", (token_hash(token),))
        return int(rows[0][0]) if rows else None

    def participants(self) -> list[dict[str, Any]]:
        return [{"id": r[0], "label": r[1], "source": r[2], "invited": r[3] is not None}
                for r in self._query("SELECT id, label, source, token_sha256 FROM participants ORDER BY id")]

    def assignment(self, pid: int) -> list[tuple[str, int]]:
        """(item id, rotation) in the participant's order."""
        return [(r[0], int(r[1])) for r in
                self._query("SELECT item, rotation FROM assignments WHERE participant = ? ORDER BY position", (pid,))]

    def answered(self, pid: int) -> set[str]:
        return {r[0] for r in self._query("SELECT item FROM answers WHERE participant = ?", (pid,))}

    def seen(self, pid: int) -> list[str]:
        rows = self._query("SELECT seen FROM participants WHERE id = ?", (pid,))
        return list(json.loads(rows[0][0])) if rows else []

    def mark_seen(self, pid: int, block: str) -> None:
        with self.transaction() as db:
            row = db.execute("SELECT seen FROM participants WHERE id = ?", (pid,)).fetchone()
            seen = list(json.loads(row[0]))
            if block not in seen:
                db.execute("UPDATE participants SET seen = ? WHERE id = ?", (canonical([*seen, block]), pid))

    def current(self, pid: int) -> tuple[Item, int] | None:
        """The participant's next unanswered item and its rotation (None: all done)."""
        done = self.answered(pid)
        for item_id, rotation in self.assignment(pid):
            if item_id not in done:
                return self.items()[item_id], rotation
        return None

    def mark_shown(self, pid: int, item_id: str) -> float:
        """When the item was first shown to the participant (a reload keeps the first time)."""
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO shown VALUES (?, ?, ?)", (pid, item_id, time.time()))
            return float(db.execute("SELECT at FROM shown WHERE participant = ? AND item = ?", (pid, item_id)).fetchone()[0])

    def save_answer(self, pid: int, item: Item, answer: Mapping[str, Any], result: Mapping[str, Any],
                    image: tuple[bytes, str] | None, elapsed_ms: int | None) -> None:
        """One transaction: the answer, its result and the image drawn. StudyError (nothing written)
        when the item was answered already or is not the participant's current item."""
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM answers WHERE participant = ? AND item = ?", (pid, item.id)).fetchone():
                raise StudyError("this item is answered already")
            current = self.current(pid)
            if current is None or current[0].id != item.id:
                raise StudyError("this is not the item to answer now")
            digest = None
            if image is not None:
                digest = hashlib.sha256(image[0]).hexdigest()
                db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?, ?)", (digest, image[1], image[0]))
            shown = db.execute("SELECT at FROM shown WHERE participant = ? AND item = ?", (pid, item.id)).fetchone()
            db.execute("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (pid, item.id, item.sha256, canonical(answer), canonical(result), digest, elapsed_ms,
                        shown[0] if shown else None, time.time()))

    def import_answers(self, label: str, source: str, answers: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any]]]) -> int:
        """Answers collected elsewhere, as one imported rater (no token: they never see a page).
        ``answers``: (item id, answer, result). All or nothing."""
        items = self.items()
        rows = list(answers)
        with self.transaction() as db:
            cursor = db.execute("INSERT INTO participants (token_sha256, label, source, created_at) VALUES (NULL, ?, ?, ?)",
                                (label, source, time.time()))
            pid = int(cursor.lastrowid or 0)
            seen: set[str] = set()
            for position, (item_id, answer, result) in enumerate(rows):
                if item_id in seen:
                    raise StudyError(f"{source}: item {items[item_id].source_id} is rated twice by one rater")
                seen.add(item_id)
                db.execute("INSERT INTO assignments VALUES (?, ?, ?, 0)", (pid, item_id, position))
                db.execute("INSERT INTO answers VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, ?)",
                           (pid, item_id, items[item_id].sha256, canonical(answer), canonical(result), time.time()))
        return len(rows)

    # ------------------------------------------------------------ reading answers

    def answer_rows(self) -> list[dict[str, Any]]:
        """Every answer with its item and participant, in participant then answer order."""
        items = self.items()
        out = []
        query = ("SELECT a.participant, p.label, p.source, a.item, a.answer, a.result, a.image, a.elapsed_ms, a.shown_at, "
                 "a.answered_at, s.rotation FROM answers a JOIN participants p ON a.participant = p.id "
                 "JOIN assignments s ON s.participant = a.participant AND s.item = a.item ORDER BY a.participant, s.position")
        for pid, label, source, item_id, answer, result, image, elapsed, shown, answered, rotation in self._query(query):
            item = items[item_id]
            seconds = elapsed / 1000 if elapsed is not None else (answered - shown if shown is not None else None)
            out.append({"participant": pid, "label": label, "source": source, "item": item, "answer": json.loads(answer),
                        "result": json.loads(result), "image": image, "seconds": seconds, "rotation": rotation,
                        "answered_at": answered})
        return out

    def counts(self) -> dict[str, int]:
        return {"items": len(self.items()), "participants": int(self._query("SELECT COUNT(*) FROM participants")[0][0]),
                "answers": int(self._query("SELECT COUNT(*) FROM answers")[0][0])}
