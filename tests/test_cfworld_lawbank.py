"""The law bank and seed loaders: the package's own files, and every way a file can be wrong."""

import copy
from collections import Counter

import pytest
import yaml
from _cfworld_fixtures import BLOOD_LAW, FALL_LAW, MIRROR_LAW, fall, mirror, small_bank, write_bank

from vrforge.generators.cfworld import lawbank
from vrforge.generators.cfworld.lawbank import PHYSICS_SUBDOMAINS, LawBankError, load_laws, load_seed_scenarios, seed_problems
from vrforge.generators.cfworld.validation import default_embedder
from vrforge.schemas.cfworld import DOMAINS, Scenario

needs_laws = pytest.mark.skipif(not lawbank.LAWS_DIR.is_dir(), reason="the package has no laws/ folder yet")
needs_seeds = pytest.mark.skipif(not (lawbank.LAWS_DIR.is_dir() and lawbank.SEEDS_DIR.is_dir()),
                                 reason="the package has no laws/ and seeds/ folders yet")
needs_physics = pytest.mark.skipif(
    not ((lawbank.LAWS_DIR / "physics.yaml").is_file() and (lawbank.SEEDS_DIR / "physics.yaml").is_file()),
    reason="the package's physics laws and seeds (laws/physics.yaml, seeds/physics.yaml) are not there yet: counts are incomplete")


def _package_seed_records():
    """(file name, Scenario.to_dict() record) of every packaged seed, compact records expanded."""
    compact = {scenario.id: scenario for _, scenario, _ in lawbank.read_compact()}
    for path in sorted(lawbank.SEEDS_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for record in data["scenarios"]:
            yield path.name, (compact[record["id"]].to_dict() if data.get("format") == "compact" else record)


# ----------------------------------------------------------------------------- the package's files

@needs_laws
def test_package_laws_load_in_a_deterministic_order():
    laws = load_laws()
    assert laws and laws == load_laws()
    assert [(DOMAINS.index(law.domain), law.id) for law in laws] == sorted((DOMAINS.index(law.domain), law.id) for law in laws)


@needs_laws
@needs_physics
def test_package_law_bank_covers_every_domain_and_physics_subdomain():
    laws = load_laws()
    assert len(laws) >= 400
    assert set(Counter(law.domain for law in laws)) == set(DOMAINS)
    assert {law.subdomain for law in laws if law.domain == "physics"} == set(PHYSICS_SUBDOMAINS)


@needs_seeds
def test_every_package_seed_passes_validation():
    """All problems of all seeds at once, so the files can be fixed in one pass."""
    laws = {law.id: law for law in load_laws()}
    embed = default_embedder()  # the embedding check, when its packages are installed
    problems, accepted = [], []
    for name, record in _package_seed_records():
        seed = Scenario.from_dict(record)
        problems += [f"{name} {seed.id}: {p}" for p in seed_problems(seed, laws.get(seed.id), accepted, embed=embed)]
        accepted.append(seed)
    assert not problems, "\n".join(problems)
    seeds = load_seed_scenarios(embed=None)
    assert [s.id for s in seeds] == [s.id for s in sorted(accepted, key=lambda s: (DOMAINS.index(s.domain), s.id))]
    assert seeds == load_seed_scenarios(validate=False)


@needs_seeds
@needs_physics
def test_package_seed_counts():
    seeds = load_seed_scenarios(validate=False)  # the checks themselves are the test above
    assert len(seeds) >= 400
    assert {s.domain for s in seeds} == set(DOMAINS)


# ----------------------------------------------------------------------------- fixtures

def test_small_bank_loads_sorted_by_domain_then_id(tmp_path):
    laws_dir, seeds_dir = small_bank(tmp_path)
    laws = load_laws(laws_dir)
    assert [law.id for law in laws] == [FALL_LAW["id"], MIRROR_LAW["id"], BLOOD_LAW["id"]]
    assert laws[2].domain == "biology" and laws[0].outcome_terms == tuple(FALL_LAW["outcome_terms"])
    seeds = load_seed_scenarios(seeds_dir, laws)
    assert [s.id for s in seeds] == [FALL_LAW["id"], MIRROR_LAW["id"]]
    assert seeds[1] == mirror()


def _bank_with(tmp_path, mutate):
    records = [copy.deepcopy(MIRROR_LAW), copy.deepcopy(FALL_LAW)]
    data = {"domain": "physics", "laws": records}
    mutate(data)
    return write_bank(tmp_path / "bad", {"physics.yaml": data})


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d["laws"][0].pop("scene"), "physics.yaml: laws[0] (id=optics-mirrors-reflect): missing field(s): scene"),
    (lambda d: d["laws"][0].update(colour="red"), "unknown field(s): colour"),
    (lambda d: d["laws"][0].update(law="  "), "law must be a non-empty string"),
    (lambda d: d["laws"][0].update(outcome_terms=[]), "outcome_terms must be a non-empty list"),
    (lambda d: d["laws"][0].update(id="Optics_Mirror"), "id 'Optics_Mirror' is not kebab-case"),
    (lambda d: d["laws"][0].update(subdomain="acoustics"), "physics subdomain 'acoustics' is not one of mechanics"),
    (lambda d: d["laws"][0].update(id="mechanics-mirrors"), "does not start with its subdomain 'optics-'"),
    (lambda d: d["laws"][1].update(id=MIRROR_LAW["id"], subdomain="optics"), "duplicate id (also in physics.yaml)"),
    (lambda d: d.update(domain="alchemy"), "physics.yaml: domain 'alchemy' is not one of physics"),
    (lambda d: d.update(extra=1), "unknown top-level key(s): extra"),
])
def test_bad_law_files_give_one_line(tmp_path, mutate, message):
    with pytest.raises(LawBankError) as info:
        load_laws(_bank_with(tmp_path, mutate))
    text = str(info.value)
    assert message in text and "\n" not in text


def test_duplicate_id_across_files_and_bad_yaml(tmp_path):
    other = {"domain": "biology", "laws": [dict(BLOOD_LAW, id=MIRROR_LAW["id"], subdomain="optics")]}
    folder = write_bank(tmp_path / "dup", {"physics.yaml": {"domain": "physics", "laws": [MIRROR_LAW]}, "biology.yaml": other})
    with pytest.raises(LawBankError, match=r"duplicate id \(also in"):
        load_laws(folder)
    broken = tmp_path / "yaml"
    broken.mkdir()
    (broken / "physics.yaml").write_text("domain: physics\nlaws: [\n  - {id: x\n", encoding="utf-8")
    with pytest.raises(LawBankError, match=r"physics.yaml: malformed YAML at line \d+"):
        load_laws(broken)
    (broken / "physics.yaml").write_text("- just a list\n", encoding="utf-8")
    with pytest.raises(LawBankError, match="expected a mapping with a 'laws:' list"):
        load_laws(broken)
    with pytest.raises(LawBankError, match="no such folder"):
        load_laws(tmp_path / "absent")


def test_bad_seeds_give_one_line(tmp_path):
    laws_dir, _ = small_bank(tmp_path)
    laws = load_laws(laws_dir)

    def seeds_error(records):
        folder = write_bank(tmp_path / "s", {"physics.yaml": {"scenarios": records}})
        with pytest.raises(LawBankError) as info:
            load_seed_scenarios(folder, laws)
        return str(info.value)

    unknown = mirror().to_dict() | {"id": "optics-unknown-law"}
    assert "scenarios[0] (id=optics-unknown-law): no law with this id" in seeds_error([unknown])
    changed = mirror().to_dict() | {"counterfactual": "Mirrors glow."}
    assert "counterfactual differs from the law's" in seeds_error([changed])
    llm = mirror().to_dict()
    llm["provenance"] = llm["provenance"] | {"kind": "llm", "review_status": "needs_review"}
    assert "provenance must be kind manual, review_status approved" in seeds_error([llm])
    leaky = mirror().to_dict()
    leaky["levels"]["l3"] = dict(leaky["levels"]["l2"])
    assert "leak (outcome terms)" in seeds_error([leaky])
    assert "duplicate seed id" in seeds_error([mirror().to_dict(), mirror().to_dict()])
    assert "schema: " in seeds_error([{"id": "x"}])
    assert load_seed_scenarios(write_bank(tmp_path / "ok", {"p.yaml": {"scenarios": [fall().to_dict()]}}), laws) == [fall()]
