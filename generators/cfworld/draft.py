"""Draft CF-World scenarios from the law bank with an LLM, and accept only what the code checks pass.

For each selected law the drafter sends one chat request (a system prompt that explains the
three levels, the assessment-point rules and the judge-question dimensions; the law and,
when the seeds have one, a curated example in the user message) to any OpenAI-compatible
endpoint, asking for JSON that follows ``answer_schema()``. The shared client
(``vrforge.openai_client``) retries malformed or incomplete answers, timeouts and server
errors with backoff, caches every validated answer by a hash of (model, messages, schema,
sampling parameters) so a rerun costs nothing, and counts tokens.

Every answer becomes a Scenario (id = the law's id; provenance kind ``llm``, the model,
``prompt_hash`` = sha256 of the messages, review status ``needs_review``; question weights
set by dimension: visual integrity 3, assessment point 15, logic consistency 8) and goes
through ``validate_scenario`` against the law, the seeds and the drafts so far. Accepted
scenarios go to ``drafts.jsonl``; rejected ones to ``rejections.jsonl`` with their reasons
(``kind`` = ``validation``, or the client's error kind: refusal, malformed, invalid,
timeout). An HTTP error (bad key, unknown model, server down) stops the run instead:
it would fail every law the same way. Both files are rewritten atomically after each law,
so an interrupted run leaves whole files, and a rerun skips every law already in either
file (``--retry-rejected`` drafts the rejected ones again).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from vrforge.errors import UserError
from vrforge.generators.cfworld.jsonl import read_records, read_scenarios, write_records, write_scenarios
from vrforge.generators.cfworld.lawbank import Law, load_seed_scenarios
from vrforge.generators.cfworld.validation import validate_scenario
from vrforge.schemas.cfworld import DIMENSIONS, DOMAINS, LEVELS, Level, Provenance, Question, Scenario

WEIGHTS = {"visual_integrity": 3.0, "assessment_point": 15.0, "logic_consistency": 8.0}
SCHEMA_NAME = "cfworld_scenario"
SOURCE = "cfworld-draft"
DRAFTS = "drafts.jsonl"
REJECTIONS = "rejections.jsonl"

SYSTEM_PROMPT = """\
You write scenarios for CF-World, a benchmark that tests whether text-to-image models can draw \
a world where one law of nature or society is changed. You get one law, its changed \
(counterfactual) version and a scene; you answer with three prompts, three assessment points \
and nine judge questions, as JSON following the given schema.

Levels (all three show the SAME scene; reuse the scene's words):
- l1, factual: "Draw <scene>." The real law holds. Do not add the counterfactual.
- l2, explicit counterfactual: "If <counterfactual premise>, draw <scene>. <One sentence that \
states the visible outcome of the changed law>."
- l3, implicit counterfactual: "If <counterfactual premise>, draw <scene>." Exactly the l2 \
prompt without its outcome sentence. It must not state, name or hint at the outcome: none of \
the outcome words of l2 or of the assessment point may appear in it, and none of the listed \
outcome terms.

Assessment points: one visible fact a judge can check in the picture. One declarative \
sentence, at most 25 words, no second fact joined by "and", ";" or a second sentence, nothing \
that needs sound, smell, taste, touch or weight. l1: the fact under the real law. l2 and l3: \
the same fact under the changed law (the same text for both).

Judge questions: for each level, exactly one question per dimension, each a yes/no question \
about the picture with scoring criteria ("1.0 = ..., 0.5 = ..., 0.0 = ..."):
- visual_integrity (weight 3): is the picture clean and free of artefacts and distortions?
- assessment_point (weight 15): does the picture show this level's assessment point?
- logic_consistency (weight 8): does the rest of the scene follow this level's law \
consistently (no part obeying the other law)?
"""


class DraftError(UserError, ValueError):
    """The drafting run cannot start or go on; the message is one line."""


def answer_schema() -> dict[str, Any]:
    """The JSON Schema of the LLM's answer (strict structured-output compatible: every property required)."""
    level = {"type": "object", "additionalProperties": False, "required": ["prompt", "assessment_point"],
             "properties": {"prompt": {"type": "string"}, "assessment_point": {"type": "string"}}}
    question = {"type": "object", "additionalProperties": False, "required": ["level", "dimension", "question", "criteria"],
                "properties": {"level": {"type": "string", "enum": list(LEVELS)},
                               "dimension": {"type": "string", "enum": list(DIMENSIONS)},
                               "question": {"type": "string"}, "criteria": {"type": "string"}}}
    return {"type": "object", "additionalProperties": False, "required": ["levels", "questions"],
            "properties": {"levels": {"type": "object", "additionalProperties": False, "required": list(LEVELS),
                                      "properties": {name: level for name in LEVELS}},
                           "questions": {"type": "array", "items": question}}}


def check_answer(data: dict[str, Any]) -> None:
    """Structural completeness beyond the schema; raises ValueError so the client asks again."""
    for name in LEVELS:
        for part in ("prompt", "assessment_point"):
            if not data["levels"][name][part].strip():
                raise ValueError(f"{name}.{part} is empty")
    present = Counter((q["level"], q["dimension"]) for q in data["questions"] if q["question"].strip())
    missing = [f"{lv}/{dim}" for lv in LEVELS for dim in DIMENSIONS if not present[(lv, dim)]]
    if missing:
        raise ValueError(f"no question for {', '.join(missing)}")


def example_for(law: Law, seeds: Iterable[Scenario]) -> Scenario | None:
    """A curated scenario to show the model: same subdomain first, then same domain (never the law's own)."""
    candidates = [s for s in seeds if s.id != law.id and s.domain == law.domain]
    same = [s for s in candidates if s.subdomain == law.subdomain]
    chosen = sorted(same or candidates, key=lambda s: s.id)
    return chosen[0] if chosen else None


def _answer_of(scenario: Scenario) -> dict[str, Any]:
    return {"levels": {name: scenario.levels[name].to_dict() for name in LEVELS},
            "questions": [{"level": q.level, "dimension": q.dimension, "question": q.question, "criteria": q.criteria}
                          for q in scenario.questions]}


def build_messages(law: Law, example: Scenario | None = None) -> list[dict[str, str]]:
    lines = [
        f"Domain: {law.domain} / {law.subdomain}",
        f"Law: {law.law}",
        f"Counterfactual law: {law.counterfactual}",
        f"Scene: {law.scene}",
        f"Visible fact under the real law: {law.factual_outcome}",
        f"Visible fact under the counterfactual law: {law.counterfactual_outcome}",
        f"Outcome terms the l3 prompt must not contain: {'; '.join(law.outcome_terms)}",
    ]
    if example is not None:
        lines += ["", f"A curated example for another law ({example.law} -> {example.counterfactual}):",
                  json.dumps(_answer_of(example), ensure_ascii=False, sort_keys=True)]
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def prompt_hash(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def scenario_from_answer(law: Law, data: dict[str, Any], model: str, digest: str) -> Scenario:
    levels = {name: Level(" ".join(data["levels"][name]["prompt"].split()),
                          " ".join(data["levels"][name]["assessment_point"].split())) for name in LEVELS}
    questions = tuple(
        Question(level=q["level"], dimension=q["dimension"], question=" ".join(q["question"].split()),
                 criteria=" ".join(q["criteria"].split()), weight=WEIGHTS[q["dimension"]], generator_model=model)
        for q in sorted(data["questions"], key=lambda q: (LEVELS.index(q["level"]), DIMENSIONS.index(q["dimension"])))
    )
    return Scenario(id=law.id, domain=law.domain, subdomain=law.subdomain, law=law.law, counterfactual=law.counterfactual,
                    levels=levels, questions=questions,
                    provenance=Provenance(kind="llm", model=model, prompt_hash=digest, review_status="needs_review",
                                          source=f"{SOURCE}:{law.id}"))


@dataclass
class DraftReport:
    selected: int = 0
    skipped: int = 0
    accepted: list[str] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)  # reason kind -> count
    usage: dict[str, int] = field(default_factory=dict)
    stopped: str = ""  # why the run stopped early ("" when it finished)

    def line(self, out: Path) -> str:
        reasons = ", ".join(f"{kind} {n}" for kind, n in sorted(self.rejected.items())) or "none"
        u = self.usage
        return (f"{self.selected} laws: {len(self.accepted)} accepted, {sum(self.rejected.values())} rejected ({reasons}), "
                f"{self.skipped} already done; {u.get('prompt_tokens', 0)} prompt + {u.get('completion_tokens', 0)} "
                f"completion tokens in {u.get('requests', 0)} requests, {u.get('cache_hits', 0)} cache hits; written to {out}")


def _reason_kind(reason: str) -> str:
    """'leak (lexical): ...' -> 'leak', 'near-duplicate of x' -> 'near-duplicate'."""
    return reason.split(":")[0].split(" (")[0].split(" of ")[0]


def draft_laws(laws: list[Law], client: Any, out: Path, *, seeds: Sequence[Scenario] = (), existing: Sequence[Scenario] = (),
               retry_rejected: bool = False, limit: int | None = None, progress: bool = False,
               embed: Any = None) -> DraftReport:
    """Draft the given laws into ``out``/drafts.jsonl and ``out``/rejections.jsonl (resumable)."""
    from vrforge.openai_client import ChatError

    drafts_path, rejections_path = out / DRAFTS, out / REJECTIONS
    drafts = read_scenarios(drafts_path)
    rejections = read_records(rejections_path)
    selected_ids = {law.id for law in laws}
    if retry_rejected:
        rejections = [r for r in rejections if r.get("law_id") not in selected_ids]
        write_records(rejections_path, rejections, key="law_id")
    done = {s.id for s in drafts} | {str(r.get("law_id")) for r in rejections}
    todo = [law for law in laws if law.id not in done]
    report = DraftReport(selected=len(laws), skipped=len(laws) - len(todo))
    if limit is not None:
        todo = todo[:limit]
    schema = answer_schema()
    for law in tqdm(todo, desc="drafting", unit="law", disable=not progress, file=sys.stderr):
        messages = build_messages(law, example_for(law, seeds))
        digest = prompt_hash(messages)
        record: dict[str, Any] = {"law_id": law.id, "model": client.config.model, "prompt_hash": digest}
        try:
            result = client.complete_json(messages, schema, SCHEMA_NAME, validate=check_answer)
        except ChatError as exc:
            if exc.kind == "http":
                report.stopped = f"{law.id}: {exc} (stopped; a rerun resumes here)"
                break
            rejections.append(record | {"kind": exc.kind, "reasons": [exc.message], "scenario": None})
            report.rejected[exc.kind] += 1
            write_records(rejections_path, rejections, key="law_id")
            continue
        scenario = scenario_from_answer(law, result.data, result.model or client.config.model, digest)
        others = [*seeds, *existing, *(s for s in drafts if s.provenance.review_status != "rejected")]
        reasons = validate_scenario(scenario, law, others, embed=embed)
        if reasons:
            rejections.append(record | {"kind": "validation", "reasons": reasons, "scenario": scenario.to_dict(),
                                        "request_hash": result.request_hash})
            report.rejected.update({_reason_kind(r) for r in reasons})
            write_records(rejections_path, rejections, key="law_id")
        else:
            drafts.append(scenario)
            report.accepted.append(law.id)
            write_scenarios(drafts_path, drafts)
    if not drafts_path.exists():
        write_scenarios(drafts_path, drafts)
    if not rejections_path.exists():
        write_records(rejections_path, rejections, key="law_id")
    report.usage = client.usage_dict()
    return report


# ----------------------------------------------------------------------------- CLI entry

def select_laws(laws: list[Law], domain: str | None, law_ids: list[str] | None) -> list[Law]:
    if domain is not None and domain not in DOMAINS:
        raise DraftError(f"unknown domain {domain!r} (one of {', '.join(DOMAINS)})")
    known = {law.id for law in laws}
    unknown = sorted(set(law_ids or ()) - known)
    if unknown:
        raise DraftError(f"unknown law id(s): {', '.join(unknown)}")
    return [law for law in laws if (domain is None or law.domain == domain) and (not law_ids or law.id in law_ids)]


def seed_examples(folder: str | None, laws: list[Law]) -> list[Scenario]:
    """The curated seeds as examples and duplicate references (schema and law match only: drafting needs no more)."""
    path = Path(folder) if folder is not None else None
    if path is None and not (Path(__file__).resolve().parent / "seeds").is_dir():
        return []
    return load_seed_scenarios(path, laws, validate=False)



__all__ = ["answer_schema", "build_messages", "draft_laws", "scenario_from_answer", "seed_examples", "DraftReport"]
