"""The review loop: export pending drafts, import approve / reject / edit decisions, all or nothing."""

import csv
import dataclasses
import json

import pytest
from _cfworld_fixtures import fall, mirror, small_bank

from vrforge.cli import main
from vrforge.generators.cfworld.jsonl import read_scenarios, write_scenarios
from vrforge.schemas.cfworld import Provenance

HASH = "ab" * 32


def drafted(scenario):
    return dataclasses.replace(scenario, provenance=Provenance(kind="llm", model="m-1", prompt_hash=HASH,
                                                               review_status="needs_review", source="cfworld-draft"))


@pytest.fixture
def drafts(tmp_path):
    path = tmp_path / "drafts.jsonl"
    approved = dataclasses.replace(fall(), id="mechanics-approved-before")
    write_scenarios(path, [drafted(mirror()), drafted(fall()), approved])
    return path


def export(drafts, out):
    return main(["cfworld", "review-export", str(drafts), "--out", str(out)])


def review_import(drafts, decisions):
    return main(["cfworld", "review-import", str(drafts), str(decisions)])


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_export_lists_only_pending_scenarios_with_editable_fields(drafts, tmp_path, capsys):
    assert export(drafts, tmp_path / "review.jsonl") == 0
    rows = [json.loads(line) for line in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [fall().id, mirror().id]
    assert rows[0]["decision"] == "" and rows[0]["l3_prompt"] == fall().levels["l3"].prompt
    assert rows[0]["model"] == "m-1" and len(rows[0]["questions"]) == 9
    assert "2 scenario(s) pending review" in capsys.readouterr().out
    assert export(drafts, tmp_path / "review.csv") == 0
    with open(tmp_path / "review.csv", newline="") as handle:
        assert [r["id"] for r in csv.DictReader(handle)] == [fall().id, mirror().id]


def test_approve_reject_and_edit_keep_provenance(drafts, tmp_path, capsys):
    export(drafts, tmp_path / "review.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "review.jsonl").read_text().splitlines()]
    rows[0]["decision"] = "reject"
    rows[1]["decision"] = "Approve"
    rows[1]["l1_assessment_point"] = "The red tulips are reflected in the mirror."
    write_rows(tmp_path / "decisions.jsonl", rows)
    assert review_import(drafts, tmp_path / "decisions.jsonl") == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 approved, 1 rejected, 1 edited, 0 left pending"
    by_id = {s.id: s for s in read_scenarios(drafts)}
    approved = by_id[mirror().id]
    assert approved.provenance == Provenance(kind="llm", model="m-1", prompt_hash=HASH, review_status="approved",
                                             source="cfworld-draft", flags=("edited",))
    assert approved.levels["l1"].assessment_point == "The red tulips are reflected in the mirror."
    assert by_id[fall().id].provenance.review_status == "rejected"
    assert by_id[fall().id].levels == fall().levels


def test_csv_decisions_and_edit_keeps_the_scenario_pending(drafts, tmp_path):
    export(drafts, tmp_path / "review.csv")
    with open(tmp_path / "review.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        rows, columns = list(reader), reader.fieldnames
    rows[1]["decision"] = "edit"
    rows[1]["l2_prompt"] = rows[1]["l2_prompt"].replace("pitch black", "pitch  black and dull")
    with open(tmp_path / "decisions.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "reviewed.jsonl"
    assert main(["cfworld", "review-import", str(drafts), str(tmp_path / "decisions.csv"), "--out", str(out)]) == 0
    edited = {s.id: s for s in read_scenarios(out)}[mirror().id]
    assert edited.provenance.review_status == "needs_review" and edited.provenance.flags == ("edited",)
    assert "pitch black and dull" in edited.levels["l2"].prompt  # whitespace normalised


@pytest.mark.parametrize(("change", "message"), [
    (lambda rows: rows[0].update(decision="maybe"), "decision 'maybe' is not one of approve, reject, edit"),
    (lambda rows: rows[0].update(id="nope"), "row 1 (id=nope): no such scenario in the drafts"),
    (lambda rows: rows.append(dict(rows[0])), "decided twice"),
    (lambda rows: rows[0].update(decision="approve", counterfactual="Mirrors glow."), "field 'counterfactual' is read-only"),
    (lambda rows: rows[1].update(decision="approve", l3_prompt=rows[1]["l2_prompt"]), "the edit fails validation: leak"),
    (lambda rows: rows.append({"id": "mechanics-approved-before", "decision": "reject"}), "not pending review"),
])
def test_bad_decision_files_write_nothing(drafts, tmp_path, capsys, change, message):
    export(drafts, tmp_path / "review.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "review.jsonl").read_text().splitlines()]
    rows[0]["decision"] = "approve"
    change(rows)
    write_rows(tmp_path / "decisions.jsonl", rows)
    before = drafts.read_bytes()
    assert review_import(drafts, tmp_path / "decisions.jsonl") == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert drafts.read_bytes() == before


def test_malformed_or_missing_decision_file(drafts, tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "decision": \n', encoding="utf-8")
    assert review_import(drafts, tmp_path / "bad.jsonl") == 2
    assert "bad.jsonl:1: malformed JSON" in capsys.readouterr().err
    assert review_import(drafts, tmp_path / "absent.jsonl") == 2
    assert "absent.jsonl: no such file" in capsys.readouterr().err
    (tmp_path / "bad.csv").write_text("name,verdict\nx,approve\n", encoding="utf-8")
    assert review_import(drafts, tmp_path / "bad.csv") == 2
    assert "missing column(s): id, decision" in capsys.readouterr().err


def test_edits_are_validated_against_the_law_bank(drafts, tmp_path, capsys):
    laws_dir, _ = small_bank(tmp_path)
    rows = [{"id": mirror().id, "decision": "approve", "l3_prompt": mirror().levels["l3"].prompt + " It is a dark mirror."}]
    write_rows(tmp_path / "decisions.jsonl", rows)
    assert main(["cfworld", "review-import", str(drafts), str(tmp_path / "decisions.jsonl"), "--laws", str(laws_dir)]) == 2
    assert "leak (outcome terms): the L3 prompt contains 'dark mirror'" in capsys.readouterr().err
    assert review_import(drafts, tmp_path / "decisions.jsonl") == 0  # without the law's outcome terms the lexical rule passes it
