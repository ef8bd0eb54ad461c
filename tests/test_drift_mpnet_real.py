"""Text-text MCD on the real all-mpnet-base-v2 (the split PyPI packages): paraphrase > related > unrelated.

The scripted drift tests use lookup embedders; this one runs the metric on the paper's own
model once, on real sentence pairs laid out as a text-first chain (originals at step 0, the
second text at step 2). Skipped, with the reason, only when the packages are not installed."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from vrforge.runners.drift import chain, metrics
from vrforge.runners.drift.mpnet import MISSING, part_files

pytestmark = pytest.mark.skipif(part_files() is None, reason=MISSING)

ORIGINALS = [
    "A red bicycle leans against a brick wall.",
    "Two children build a sandcastle on the beach.",
    "A cat sleeps on a windowsill in the sun.",
    "An old man reads a newspaper on a park bench.",
    "A bowl of green apples sits on a wooden table.",
    "A steam train crosses a stone bridge over a river.",
]
# The same scene in other words.
PARAPHRASES = [
    "A bike painted red is propped up against a wall of bricks.",
    "On the beach, a pair of kids are making a castle out of sand.",
    "In the sunshine, a cat is asleep on the window ledge.",
    "On a bench in the park, an elderly man is reading the paper.",
    "Green apples fill a bowl that stands on a table made of wood.",
    "Over a river, a steam locomotive is crossing a bridge built of stone.",
]
# The same subject, another scene.
RELATED = [
    "A mechanic repairs a flat bicycle tyre in a workshop.",
    "Children splash in the waves at the seaside.",
    "A dog chases a cat across the garden.",
    "A woman buys a newspaper at a kiosk.",
    "A farmer picks apples in an orchard.",
    "Passengers wait on a platform for the train.",
]
UNRELATED = [
    "The stock exchange closed lower after the interest rate decision.",
    "A violinist tunes her instrument before the concert.",
    "Snow covers the peaks of a mountain range at dawn.",
    "A chef slices onions in a busy restaurant kitchen.",
    "Astronauts float inside the space station.",
    "A spreadsheet lists quarterly tax figures.",
]


@pytest.fixture(scope="module")
def scorers():
    from vrforge.runners.drift.embed import SentenceEmbedder
    from vrforge.runners.drift.mpnet import mpnet_folder

    return metrics.Scorers(text=SentenceEmbedder(str(mpnet_folder()), device="cpu", local_files_only=True))


def _chain(root, seconds):
    ids = [f"s{i}.png" for i in range(len(ORIGINALS))]
    chain.write_captions(chain.text_file(root, chain.TEXT_FIRST, 0), list(zip(ids, ORIGINALS)))
    chain.image_folder(root, chain.TEXT_FIRST, 1).mkdir(parents=True)  # the image step between (not scored here)
    chain.write_captions(chain.text_file(root, chain.TEXT_FIRST, 2), list(zip(ids, seconds)))
    return root


def _mcd(tmp_path, name, seconds, scorers):
    summary, samples = metrics.score_pairs(_chain(tmp_path / name, seconds), scorers)
    assert set(summary["relations"]) == {"text-text"} and summary["relations"]["text-text"]["missing"] == 0
    return summary["relations"]["text-text"]["mcd"], [s["similarity"]["text-text"]["2"] for _, s in sorted(samples.items())]


def test_text_text_mcd_on_real_mpnet_orders_paraphrase_related_unrelated(tmp_path, scorers):
    para, para_each = _mcd(tmp_path, "paraphrase", PARAPHRASES, scorers)
    related, related_each = _mcd(tmp_path, "related", RELATED, scorers)
    unrelated, unrelated_each = _mcd(tmp_path, "unrelated", UNRELATED, scorers)
    assert para > related > unrelated
    assert para > 0.75 and unrelated < 0.25  # the real model, not a near-constant embedder
    # pair by pair too: every paraphrase is nearer its original than the related and unrelated texts are
    assert all(p > r > u for p, r, u in zip(para_each, related_each, unrelated_each))


def test_identical_text_scores_one_on_real_mpnet(tmp_path, scorers):
    mcd, each = _mcd(tmp_path, "identity", ORIGINALS, scorers)
    assert mcd == pytest.approx(1.0, abs=1e-4) and min(each) > 0.9999
