"""The diffusers runners on a tiny random-weight Stable Diffusion pipeline (64 px, 2 steps, offline)."""

import os

os.environ["OMP_NUM_THREADS"] = "1"  # torch's default threads on a busy small machine make tiny runs far slower

import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("diffusers")
pytest.importorskip("accelerate")
torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from PIL import Image  # noqa: E402
from shared_data import external  # noqa: E402

from vrforge import registry  # noqa: E402
from vrforge.cli import main  # noqa: E402
from vrforge.registry import get_task  # noqa: E402
from vrforge.runners import diffusion  # noqa: E402
from vrforge.runners.diffusion import (  # noqa: E402
    MANIFEST_FILE,
    CallSettings,
    ModelSpec,
    RunConfig,
    generate_items,
    item_seed,
    load_pipeline,
)
from vrforge.runners.items import cfworld_items, tacit_instruction  # noqa: E402

CF_WORLD_RELEASE = external("cf-world")
BASE = ["--steps", "2", "--size", "64", "--local-files-only", "--quiet"]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny Stable Diffusion pipeline with random weights, saved once per session."""
    from vrforge.bench.gpu_t2i import build_pipeline

    work = tmp_path_factory.mktemp("tiny-sd")
    build_pipeline("sd15", work / "build", tiny=True).save_pretrained(work / "pipe")
    return work / "pipe"


def _scenario(sid: str, prompts: tuple[str, str, str]) -> dict:
    levels = {lv: {"prompt": p, "assessment_point": f"point {lv}"} for lv, p in zip(("l1", "l2", "l3"), prompts)}
    return {"id": sid, "domain": "physics", "subdomain": "optics", "law": "", "counterfactual": "if light bent upwards",
            "levels": levels, "questions": [], "provenance": {"kind": "manual"}}


@pytest.fixture(scope="session")
def prompts_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("prompts") / "scenarios.jsonl"
    scenarios = [_scenario("physics-optics-0001", ("a red cat", "a blue dog", "the ball")),
                 _scenario("physics-optics-0002", ("a lamp", "a lake at dawn", "snow on a roof"))]
    path.write_text("".join(json.dumps(s) + "\n" for s in scenarios), encoding="utf-8")
    return path


def run_cli(*argv: str) -> int:
    return main(["run", *map(str, argv)])


@pytest.fixture(scope="module")
def t2i_run(tiny_model, prompts_file, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("t2i") / "out"
    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, "--batch-size", "3", *BASE) == 0
    return out


def _outputs(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.png"))}


def _pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def test_item_seed_is_stable_and_63_bit():
    assert item_seed(0, "a/l1") == item_seed(0, "a/l1")
    assert len({item_seed(0, "a/l1"), item_seed(1, "a/l1"), item_seed(0, "a/l2")}) == 3
    assert 0 <= item_seed(123, "maze-hard-0042") < 2**63


def test_generation_size_keeps_the_input_aspect_in_multiples_of_16():
    size = diffusion.generation_size
    assert size(CallSettings(), None) is None  # the pipeline's default
    assert size(CallSettings(size=64), None) == (64, 64)
    assert size(CallSettings(width=96, height=64), (1000, 10)) == (96, 64)
    assert size(CallSettings(), (1024, 341)) == (1024, 336)
    assert size(CallSettings(size=512), (1024, 341)) == (512, 176)
    with pytest.raises(diffusion.RunError, match="together"):
        CallSettings(width=64).validate()


def test_t2i_layout_and_manifest(t2i_run, tiny_model, prompts_file):
    files = _outputs(t2i_run)
    assert sorted(files) == [f"physics-optics-000{s}/{lv}.png" for s in (1, 2) for lv in ("l1", "l2", "l3")]
    for data in files.values():
        assert Image.open(io.BytesIO(data)).size == (64, 64)
    assert not list(t2i_run.rglob("*.tmp")) and not list(t2i_run.glob(".manifest-part-*"))

    manifest = json.loads((t2i_run / MANIFEST_FILE).read_text())
    assert manifest["model"]["source"] == "local" and manifest["model"]["path"] == str(tiny_model.resolve())
    assert manifest["model"]["loader"] == "AutoPipelineForText2Image"
    assert manifest["pipeline_class"] == "StableDiffusionPipeline"
    assert manifest["pipeline_arguments"]["num_inference_steps"] == 2
    assert manifest["pipeline_arguments"]["guidance_scale"] == 7.5  # the pipeline's default, recorded
    assert manifest["size"] == {"width": None, "height": None, "size": 64}
    assert manifest["dtype"] == "float32"  # auto on the CPU
    assert {"torch", "diffusers", "transformers", "accelerate", "vrforge", "python"} <= set(manifest["versions"])
    assert manifest["versions"]["diffusers"]
    items = manifest["items"]
    assert [i["id"] for i in items] == [f"physics-optics-000{s}/{lv}" for s in (1, 2) for lv in ("l1", "l2", "l3")]
    assert all(i["seed"] == item_seed(0, i["id"]) and i["status"] == "generated" for i in items)
    assert items[1]["prompt"] == "a blue dog" and items[1]["output"] == "physics-optics-0001/l2.png"
    assert items[1]["size"] == [64, 64] and items[1]["seconds"] > 0
    (run,) = manifest["runs"]
    assert run["generated"] == 6 and run["skipped_existing"] == 0 and run["batch_size"] == 3 and not run["failures"]
    assert manifest["counts"] == {"items": 6, "done": 6, "missing": 0}


def test_same_seeds_same_images_whatever_the_batch_size(tiny_model, prompts_file, t2i_run, tmp_path):
    # float64: the per-item generators make the noise batch-independent; float64 keeps the
    # batched convolutions' last-bit differences far below one PNG level, so bytes compare.
    pipe, _ = load_pipeline(ModelSpec(str(tiny_model), local_files_only=True), "t2i", torch.float64)
    pipe.set_progress_bar_config(disable=True)
    items = cfworld_items(prompts_file)
    settings = CallSettings(steps=2, size=64)
    fixed = diffusion.fixed_call_arguments(pipe, settings)
    for batch_size in (1, 3):
        generate_items(pipe, items, tmp_path / f"b{batch_size}", seed=0, batch_size=batch_size, settings=settings,
                       fixed_arguments=fixed, progress=False)
    one, three = _outputs(tmp_path / "b1"), _outputs(tmp_path / "b3")
    assert len(one) == 6 and one == three
    assert len(set(one.values())) == 6  # different items, different seeds, different images

    # fp32 through the command line: batch size 1 against the module's batch-3 run.
    out = tmp_path / "fp32-b1"
    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, "--batch-size", "1", *BASE) == 0
    for name, data in _outputs(out).items():
        assert np.abs(_pixels(data) - _pixels(_outputs(t2i_run)[name])).max() <= 1


def test_resume_regenerates_only_missing_outputs(t2i_run, tiny_model, prompts_file, tmp_path):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(t2i_run, out)
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.rglob("*.png")}
    removed = out / "physics-optics-0002" / "l1.png"
    old = before.pop(removed)[1]
    removed.unlink()
    (out / "physics-optics-0002" / ".l2.png.tmp").write_bytes(b"partial")  # as a kill mid-write would leave

    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, "--batch-size", "3", *BASE) == 0
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in before} == before  # untouched
    assert np.abs(_pixels(removed.read_bytes()) - _pixels(old)).max() <= 1  # same seed, same picture
    assert not list(out.rglob("*.tmp"))
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert [(r["generated"], r["skipped_existing"]) for r in manifest["runs"]] == [(6, 0), (1, 5)]
    status = {i["id"]: i["status"] for i in manifest["items"]}
    assert status.pop("physics-optics-0002/l1") == "generated" and set(status.values()) == {"existing"}

    # Nothing left to do: no pipeline call at all.
    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, *BASE) == 0
    assert json.loads((out / MANIFEST_FILE).read_text())["runs"][-1]["generated"] == 0

    # The same folder with other settings is refused, not mixed.
    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, "--seed", "1", *BASE) == 2


class _FailingPipeline:
    """Wraps a pipeline and raises from the given call on, as a crash or a kill in mid-run would;
    ``max_batch`` rejects lists longer than that, like an editing pipeline that takes one image per call."""

    def __init__(self, pipe, fail_on_call: int, error: BaseException | None = None, max_batch: int | None = None) -> None:
        self.pipe, self.fail_on_call, self.calls = pipe, fail_on_call, 0
        self.error = error or RuntimeError("CUDA out of memory (simulated)")
        self.max_batch = max_batch

    def to(self, *args, **kwargs):
        return self

    def __call__(self, prompt, generator, num_inference_steps=50, height=None, width=None, output_type="pil"):
        self.calls += 1
        if self.fail_on_call and self.calls >= self.fail_on_call:
            raise self.error
        if self.max_batch is not None and len(prompt) > self.max_batch:
            raise ValueError(f"this pipeline takes {self.max_batch} image per call, got {len(prompt)}")
        return self.pipe(prompt=prompt, generator=generator, num_inference_steps=num_inference_steps, height=height,
                         width=width, output_type=output_type)


def _config(out: Path, batch_size: int = 2, **changes) -> RunConfig:
    config = RunConfig(kind="t2i", spec=ModelSpec("tiny"), out=out, settings=CallSettings(steps=2, size=64),
                       batch_size=batch_size, progress=False)
    return replace(config, **changes)


@pytest.fixture(scope="module")
def tiny_pipe(tiny_model):
    pipe, info = load_pipeline(ModelSpec(str(tiny_model), local_files_only=True), "t2i", torch.float32)
    pipe.set_progress_bar_config(disable=True)
    return pipe, info


def test_a_killed_first_run_leaves_its_settings_and_other_settings_are_refused(tiny_pipe, prompts_file, tmp_path):
    pipe, info = tiny_pipe
    items, out = cfworld_items(prompts_file), tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        diffusion.run(_config(out), items, pipe=_FailingPipeline(pipe, 2, KeyboardInterrupt()), model_info=info)
    assert len(_outputs(out)) == 2  # the first batch
    manifest = json.loads((out / MANIFEST_FILE).read_text())  # written before the first image
    assert manifest["settings"]["seed"] == 0 and manifest["runs"][-1]["completed"] is False

    with pytest.raises(diffusion.RunError, match=r"seed: 0 -> 1"):
        diffusion.run(_config(out, seed=1), items, pipe=pipe, model_info=info)
    with pytest.raises(diffusion.RunError, match=r"call_arguments\.num_inference_steps: 2 -> 3"):
        diffusion.run(_config(out, settings=CallSettings(steps=3, size=64)), items, pipe=pipe, model_info=info)
    with pytest.raises(diffusion.RunError, match=r"inputs\.prompts_sha256"):
        diffusion.run(_config(out, input_settings={"prompts_sha256": "another"}), items, pipe=pipe, model_info=info)
    assert len(_outputs(out)) == 2  # nothing mixed in

    manifest = diffusion.run(_config(out), items, pipe=pipe, model_info=info)
    assert [r["completed"] for r in manifest["runs"]] == [False, True]
    assert manifest["counts"]["done"] == 6 and len(_outputs(out)) == 6

    (out / MANIFEST_FILE).unlink()  # outputs whose settings nobody recorded are not resumed
    with pytest.raises(diffusion.RunError, match="no run_manifest.json"):
        diffusion.run(_config(out), items, pipe=pipe, model_info=info)


def test_inputs_and_their_defaults_are_settings(tiny_model, prompts_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, "--levels", "l1", "--limit", "1", *BASE) == 0
    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, "--levels", "l1", *BASE) == 0  # --limit grows
    assert len(_outputs(out)) == 2
    assert run_cli("t2i", prompts_file, "--model", tiny_model, "--out", out, "--levels", "l1", "l2", *BASE) == 2
    assert "inputs.levels" in capsys.readouterr().err
    edited = tmp_path / "edited.jsonl"
    edited.write_text(prompts_file.read_text().replace("a red cat", "a red fox"))
    assert run_cli("t2i", edited, "--model", tiny_model, "--out", out, "--levels", "l1", *BASE) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "inputs.prompts_sha256" in err and len(_outputs(out)) == 2


def test_tacit_input_resolution_default_is_recorded_and_compared(built, tiny_model, tmp_path, capsys, monkeypatch):
    out = tmp_path / "gen"
    one = ["--tasks", "maze", "--difficulties", "easy", "--limit", "1", "--strength", "0.5"]
    assert run_cli("tacit-generate", built, "--model", tiny_model, "--out", out, *one, *BASE) == 0
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["inputs"]["input_resolution"] == 1024 and manifest["settings"]["inputs"]["input_resolution"] == 1024
    assert manifest["items"][0]["input_resolution"] == 1024
    assert run_cli("tacit-generate", built, "--model", tiny_model, "--out", out, "--input-resolution", "512", *one, *BASE) == 2
    assert "inputs.input_resolution: 1024 -> 512" in capsys.readouterr().err
    monkeypatch.setitem(registry._TASKS, "maze", replace(get_task("maze"), instruction="Draw the route."))
    assert run_cli("tacit-generate", built, "--model", tiny_model, "--out", out, *one, *BASE) == 2
    assert "inputs.instructions_sha256" in capsys.readouterr().err


def test_a_pipeline_that_rejects_batches_falls_back_to_one_image_per_call(tiny_pipe, prompts_file, t2i_run, tmp_path):
    pipe, info = tiny_pipe
    single = _FailingPipeline(pipe, fail_on_call=0, max_batch=1)
    manifest = diffusion.run(_config(tmp_path / "out", batch_size=3), cfworld_items(prompts_file), pipe=single, model_info=info)
    assert single.calls == 7  # the rejected batch of 3, then six single calls
    assert "ValueError" in manifest["runs"][-1]["batch_fallback"] and "batch of 3" in manifest["runs"][-1]["batch_fallback"]
    assert manifest["counts"]["done"] == 6
    reference = _outputs(t2i_run)
    for name, data in _outputs(tmp_path / "out").items():
        assert np.abs(_pixels(data) - _pixels(reference[name])).max() <= 1


def test_a_failed_run_leaves_complete_files_only(tiny_model, prompts_file, tmp_path):
    pipe, info = load_pipeline(ModelSpec(str(tiny_model), local_files_only=True), "t2i", torch.float32)
    pipe.set_progress_bar_config(disable=True)
    items = cfworld_items(prompts_file)
    failing = _FailingPipeline(pipe, fail_on_call=2)
    with pytest.raises(RuntimeError, match="simulated"):
        diffusion.run(_config(tmp_path / "out"), items, pipe=failing, model_info=info)
    files = _outputs(tmp_path / "out")
    assert sorted(files) == ["physics-optics-0001/l1.png", "physics-optics-0001/l2.png"]  # the first batch, complete
    assert all(Image.open(io.BytesIO(d)).size == (64, 64) for d in files.values())
    assert not list((tmp_path / "out").rglob("*.tmp"))
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert manifest["runs"][-1]["failures"] == ["RuntimeError: CUDA out of memory (simulated)"]
    assert manifest["counts"] == {"items": 6, "done": 2, "missing": 4}

    # The rerun completes the remaining four with two pipeline calls (batch size 2).
    counting = _FailingPipeline(pipe, fail_on_call=0)
    diffusion.run(_config(tmp_path / "out"), items, pipe=counting, model_info=info)
    assert counting.calls == 2 and len(_outputs(tmp_path / "out")) == 6


def test_a_failed_write_leaves_no_partial_file(tiny_model, prompts_file, tmp_path, monkeypatch):
    pipe, info = load_pipeline(ModelSpec(str(tiny_model), local_files_only=True), "t2i", torch.float32)
    pipe.set_progress_bar_config(disable=True)

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(diffusion.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        diffusion.run(_config(tmp_path / "out"), cfworld_items(prompts_file)[:2], pipe=pipe, model_info=info)
    assert not _outputs(tmp_path / "out") and not list((tmp_path / "out").rglob("*.tmp"))


def test_tacit_img2img_outputs_are_read_by_the_scorer(built, tiny_model, tmp_path):
    from vrforge.runners.scoring import score_generative

    out = tmp_path / "gen"
    rc = run_cli("tacit-generate", built, "--model", tiny_model, "--out", out, "--input-resolution", "512",
                 "--strength", "0.5", "--batch-size", "2", *BASE)
    assert rc == 0
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.png"))
    assert names == [f"model_output/maze/{d}/maze_{d}_{i:04d}.png" for d in ("easy", "hard", "medium") for i in range(3)]
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["pipeline_class"] == "StableDiffusionImg2ImgPipeline"
    assert manifest["model"]["loader"] == "AutoPipelineForImage2Image"
    assert manifest["pipeline_arguments"]["strength"] == 0.5
    first = manifest["items"][0]
    assert first["id"] == "maze-easy-0000" and first["prompt"] == get_task("maze").instruction
    assert first["task"] == "maze" and first["difficulty"] == "easy" and first["index"] == 0
    assert max(first["generated_size"]) == 64 and all(v % 16 == 0 for v in first["generated_size"])

    # Each answer has its puzzle's size (aspect kept for the verifier).
    from vrforge.runners.items import tacit_items

    for item in tacit_items(built, resolution=512):
        assert Image.open(out / item.output).size == item.image.load().size

    report = score_generative(built, out, config_resolution=1024)
    summary = report.summary
    assert summary["overall"]["n"] == 9 and summary["missing"]["total"] == 0
    assert all(not s["missing"] for s in report.samples)


def test_every_registered_task_has_its_own_instruction():
    from vrforge.registry import all_tasks

    instructions = [tacit_instruction(spec.name) for spec in all_tasks()]
    assert all(len(text) > 20 for text in instructions) and len(set(instructions)) == len(instructions)
    assert "Solve the puzzle" in tacit_instruction("a_future_task")


@pytest.mark.skipif(not CF_WORLD_RELEASE.is_dir(), reason=f"the official CF-World release is absent at {CF_WORLD_RELEASE}")
def test_official_release_folder_gives_items():
    items = cfworld_items(CF_WORLD_RELEASE, levels=["l2"], limit=3)
    assert len(items) == 3 and all(i.id.endswith("/l2") and i.output.endswith("/l2.png") and i.prompt for i in items)


@pytest.mark.parametrize(("case", "needle"), [
    ("missing model", "no such model folder"),
    ("not a pipeline folder", "not a diffusers pipeline folder"),
    ("empty prompts", "holds no scenarios"),
    ("unknown dtype", "unknown dtype 'fp8'"),
    ("bad call kwargs", "--call-kwargs is not valid JSON"),
    ("unknown class", "is not a diffusers pipeline class"),
    ("wrong kwarg", "takes no not_an_argument"),
])
def test_bad_input_is_one_line_and_exit_2(case, needle, tiny_model, prompts_file, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    argv = ["t2i", prompts_file, "--model", tiny_model, "--out", tmp_path / "out", *BASE]
    if case == "missing model":
        argv[3] = tmp_path / "no-such-model"
    elif case == "not a pipeline folder":
        argv[3] = tmp_path
    elif case == "empty prompts":
        argv[1] = empty
    elif case == "unknown dtype":
        argv += ["--dtype", "fp8"]
    elif case == "bad call kwargs":
        argv += ["--call-kwargs", "{steps: 2"]
    elif case == "unknown class":
        argv += ["--pipeline-class", "NoSuchPipeline"]
    elif case == "wrong kwarg":
        argv += ["--call-kwargs", '{"not_an_argument": 1}']
    assert run_cli(*argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("vrforge run t2i: error: ") and needle in err
    assert not list((tmp_path / "out").rglob("*.png"))


def test_gpu_bench_smoke_on_cpu(tmp_path):
    from vrforge.bench.gpu_t2i import main

    results = tmp_path / "gpu_t2i.json"
    assert main(["--tiny", "--prompts", "2", "--batch-size", "2", "--results", str(results), "--work", str(tmp_path / "w")]) == 0
    report = json.loads(results.read_text())
    assert report["arch"] == "sdxl" and report["tiny"] and report["size"] == 64 and report["runner"]["images_written"] == 2
    assert report["plain"]["images_per_second"] > 0 and report["runner"]["images_per_second"] > 0
    assert report["ratio"] == pytest.approx(report["runner"]["images_per_second"] / report["plain"]["images_per_second"], rel=1e-3)
    assert len(list((tmp_path / "w" / "plain").glob("*.png"))) == 2


def test_hub_id_from_the_cache_records_the_commit(tiny_model, prompts_file, tmp_path, monkeypatch):
    """A hub id resolves through the hub cache (offline here); the manifest names the snapshot's commit."""
    import shutil

    import huggingface_hub.constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--vrforge--tiny-sd"
    shutil.copytree(tiny_model, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))

    out = tmp_path / "out"
    assert run_cli("t2i", prompts_file, "--model", "vrforge/tiny-sd", "--out", out, "--levels", "l1", *BASE) == 0
    model = json.loads((out / MANIFEST_FILE).read_text())["model"]
    assert model["source"] == "hub" and model["id"] == "vrforge/tiny-sd" and model["commit"] == commit
    assert run_cli("t2i", prompts_file, "--model", "vrforge/no-such-model", "--out", tmp_path / "o2", *BASE) == 2


@pytest.mark.slow
def test_two_processes_split_the_items_and_merge_one_manifest(tiny_model, prompts_file, t2i_run, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "out"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "vrforge.cli",
               "run", "t2i", str(prompts_file), "--model", str(tiny_model), "--out", str(out), "--batch-size", "3", *BASE]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["runs"][-1]["processes"] == 2 and manifest["runs"][-1]["generated"] == 6
    assert [i["process"] for i in manifest["items"]] == [0, 0, 0, 1, 1, 1]
    assert not list(out.glob(".manifest-part-*")) and not list(out.rglob("*.tmp"))
    single = _outputs(t2i_run)
    for name, data in _outputs(out).items():
        assert np.abs(_pixels(data) - _pixels(single[name])).max() <= 1
    assert sorted(_outputs(out)) == sorted(single)


def test_several_images_per_prompt(tiny_model, prompts_file, t2i_run, tmp_path):
    out = tmp_path / "out"
    argv = ["t2i", prompts_file, "--model", tiny_model, "--out", out, "--levels", "l1", "--limit", "1", *BASE]
    assert run_cli(*argv, "--images-per-prompt", "3") == 0
    assert sorted(_outputs(out)) == [f"physics-optics-0001/l1_{k}.png" for k in range(3)]
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert [i["id"] for i in manifest["items"]] == ["physics-optics-0001/l1", "physics-optics-0001/l1/1", "physics-optics-0001/l1/2"]
    assert [i["sample"] for i in manifest["items"]] == [0, 1, 2] and manifest["settings"]["inputs"]["images_per_prompt"] == 3
    images = _outputs(out)
    assert len(set(images.values())) == 3  # three seeds, three pictures
    # Image 0 has the one-image run's seed, so the same picture.
    single = _outputs(t2i_run)["physics-optics-0001/l1.png"]
    assert np.abs(_pixels(images["physics-optics-0001/l1_0.png"]) - _pixels(single)).max() <= 1
    assert run_cli(*argv, "--images-per-prompt", "2") == 2  # another layout: refused
