"""Image generation and editing runners through diffusers: ``vrforge run t2i`` and ``vrforge run tacit-generate``.

This module is the logic (loading, call arguments, the generation loop, the manifest);
``vrforge.commands.run`` parses the command line and reads the items.

- **Loading.** Any diffusers pipeline from a hub id or a local folder with ``from_pretrained``
  (``AutoPipelineForText2Image`` / ``AutoPipelineForImage2Image``, falling back to
  ``DiffusionPipeline``, which loads the class named in ``model_index.json``; or a class named
  with ``--pipeline-class``). Remote code (``trust_remote_code``, ``custom_pipeline``) only when
  the user passes the flag.
- **Seeds.** Every item has its own ``torch.Generator`` seeded from sha256(run seed, item id)
  and created on the CPU, and the pipeline gets the list of generators: an item's starting
  noise does not depend on the batch size, the number of processes or the device. (Batched
  kernels may still differ in the last bits between batch sizes on some backends.)
- **Resume and atomic writes.** An item whose output file exists is skipped. Every image is
  written under a hidden temporary name in its folder and renamed, in a background thread so
  PNG encoding overlaps the next batch; an interrupted or failed run leaves only complete files.
- **Several GPUs.** ``accelerate launch -m vrforge.cli run ...`` (or any accelerate launcher):
  the items still to do are split between processes with ``PartialState.split_between_processes``;
  each process writes only its items and a manifest part; the main process merges the parts.
- **Manifest.** ``run_manifest.json`` in the output folder (``runners/outputs.py``): model (id,
  revision, resolved commit), pipeline class, call arguments, dtype, package versions, per-item
  seed, output, status and time, and one entry per run. It is written before the first image,
  so a run killed at any point leaves its settings behind. The settings include the inputs with
  their resolved defaults (levels, input resolution, the dataset's config hash) and sha256 of
  every prompt or instruction; a folder made with other settings is refused with the
  differences named, rather than mixed. ``--limit`` and the task/difficulty selection are not
  settings: a larger run may extend a smaller one.
- **Pipelines that take one image at a time.** When a batch of several items raises, the
  items are retried one by one; if that works the run goes on at batch size 1, once, and the
  run entry records the fallback and its cause.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vrforge import fileio
from vrforge.errors import UserError, first_line
from vrforge.fileio import temporary_path, write_bytes_atomic
from vrforge.runners.items import GenerationItem
from vrforge.runners.outputs import SettingsMismatch, check_settings

KINDS = ("t2i", "tacit-generate")
DTYPE_NAMES = ("auto", "bf16", "fp16", "fp32")
MANIFEST_FILE = "run_manifest.json"
MANIFEST_VERSION = 2  # 2: settings hold the inputs; written before the first output
SIZE_MULTIPLE = 16  # latent sizes of SD, SDXL, Flux and Qwen-Image pipelines all divide this
PNG_COMPRESS_LEVEL = 1  # model outputs are photographic: higher levels cost time for a few percent
PACKAGES = ("torch", "diffusers", "transformers", "accelerate", "vrforge")


class RunError(UserError):
    """A user mistake (missing model folder, unknown dtype, settings that clash): one line for the user."""


# --------------------------------------------------------------------------- seeds, dtypes, files


def item_seed(run_seed: int, item_id: str) -> int:
    """A 63-bit seed from sorted JSON of (run seed, item id), never Python's ``hash()``."""
    key = json.dumps({"item": item_id, "seed": run_seed}, sort_keys=True, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") >> 1


def resolve_dtype(name: str, device_type: str):
    """``auto`` is bf16 on CUDA and fp32 elsewhere."""
    import torch

    if name not in DTYPE_NAMES:
        raise RunError(f"unknown dtype {name!r} (choose from {', '.join(DTYPE_NAMES)})")
    if name == "auto":
        name = "bf16" if device_type == "cuda" else "fp32"
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def write_png_atomic(path: Path, image) -> None:
    """Encode, then write under a hidden name in the same folder and rename; never leaves a partial file."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    write_bytes_atomic(path, buffer.getvalue())


def write_json_atomic(path: Path, data: Any) -> None:
    fileio.write_json_atomic(path, data, ensure_ascii=False)


def package_versions() -> dict[str, str | None]:
    from importlib import metadata

    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class ModelSpec:
    model: str  # hub id (org/name) or a local pipeline folder
    revision: str | None = None
    variant: str | None = None
    local_files_only: bool = False
    trust_remote_code: bool = False
    custom_pipeline: str | None = None
    pipeline_class: str = "auto"  # or a diffusers class name such as StableDiffusionInstructPix2PixPipeline


def model_source(spec: ModelSpec) -> tuple[str, Path | None]:
    """("local", folder) or ("hub", None); a path that does not exist is an error, not a hub id."""
    path = Path(spec.model).expanduser()
    if path.exists():
        if not (path / "model_index.json").is_file():
            raise RunError(f"{spec.model} is not a diffusers pipeline folder (no model_index.json)")
        if spec.revision:
            raise RunError("--revision applies to hub ids, not to a local folder")
        return "local", path.resolve()
    looks_like_path = spec.model.startswith((".", "/", "~")) or spec.model.count("/") != 1 or "\\" in spec.model
    if looks_like_path:
        raise RunError(f"no such model folder: {spec.model}")
    return "hub", None


def load_pipeline(spec: ModelSpec, kind: str, torch_dtype, progress: bool = True) -> tuple[Any, dict[str, Any]]:
    """The pipeline (on the CPU, in ``torch_dtype``) and what the manifest records about it."""
    import diffusers
    from packaging.version import Version

    source, folder = model_source(spec)
    # diffusers 0.42 renamed torch_dtype to dtype (the old name still works, with a warning)
    dtype_keyword = "dtype" if Version(diffusers.__version__).release >= (0, 42) else "torch_dtype"
    kwargs: dict[str, Any] = {dtype_keyword: torch_dtype, "local_files_only": spec.local_files_only}
    for name in ("revision", "variant", "custom_pipeline"):
        if getattr(spec, name):
            kwargs[name] = getattr(spec, name)
    if spec.trust_remote_code:
        kwargs["trust_remote_code"] = True

    auto = diffusers.AutoPipelineForText2Image if kind == "t2i" else diffusers.AutoPipelineForImage2Image
    if spec.pipeline_class != "auto":
        loader = getattr(diffusers, spec.pipeline_class, None)
        if not (inspect.isclass(loader) and issubclass(loader, diffusers.DiffusionPipeline)):
            raise RunError(f"--pipeline-class {spec.pipeline_class!r} is not a diffusers pipeline class")
        loaders: list[Any] = [loader]
    elif spec.custom_pipeline:
        loaders = [diffusers.DiffusionPipeline]
    else:  # the auto class picks the task's variant (img2img of a text-to-image model); others load as named
        loaders = [auto, diffusers.DiffusionPipeline]
    target = str(folder) if folder is not None else spec.model
    errors = []
    for loader in loaders:
        try:
            with _loading_bars(progress):
                pipe = loader.from_pretrained(target, **kwargs)
            break
        except Exception as exc:  # noqa: BLE001 - the cause is reported on one line below
            errors.append(f"{loader.__name__}: {exc.__class__.__name__}: {first_line(exc)}")
    else:
        raise RunError(f"cannot load {spec.model} ({'; '.join(errors)})")
    if kind == "tacit-generate" and "image" not in _call_parameters(pipe):
        raise RunError(f"{type(pipe).__name__} takes no input image; choose an image-to-image or editing pipeline")
    info = {
        "id": spec.model, "source": source, "path": str(folder) if folder else None,
        "revision": spec.revision, "commit": _hub_commit(spec) if source == "hub" else None,
        "variant": spec.variant, "loader": loader.__name__, "pipeline_class": type(pipe).__name__,
        "trust_remote_code": spec.trust_remote_code, "custom_pipeline": spec.custom_pipeline,
    }
    return pipe, info


@contextmanager
def _loading_bars(enabled: bool) -> Iterator[None]:
    """diffusers' and transformers' loading bars, off for a quiet run (their switches are global: restored after)."""
    from diffusers.utils import logging as diffusers_logging
    from transformers.utils import logging as transformers_logging

    switches = [m for m in (diffusers_logging, transformers_logging) if not enabled and m.is_progress_bar_enabled()]
    for module in switches:
        module.disable_progress_bar()
    try:
        yield
    finally:
        for module in switches:
            module.enable_progress_bar()


def _hub_commit(spec: ModelSpec) -> str | None:
    """The commit the cached snapshot came from (its folder name), looked up without network."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(spec.model, "model_index.json", revision=spec.revision)
    except Exception:  # noqa: BLE001 - provenance is best effort; loading already succeeded
        return None
    if not isinstance(found, str):
        return None
    parts = Path(found).parts
    return parts[parts.index("snapshots") + 1] if "snapshots" in parts else None


# --------------------------------------------------------------------------- call arguments


@dataclass(frozen=True)
class CallSettings:
    """What the user sets on every pipeline call; None leaves the pipeline's default."""

    steps: int | None = None
    guidance: float | None = None
    width: int | None = None
    height: int | None = None
    size: int | None = None  # t2i: a square; image input: the longer side, aspect kept
    strength: float | None = None
    negative_prompt: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        for name in ("steps", "width", "height", "size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise RunError(f"--{name} must be positive, got {value}")
        for name in ("width", "height", "size"):
            value = getattr(self, name)
            if value is not None and value % 8:
                raise RunError(f"--{name} must be a multiple of 8, got {value}")
        if (self.width is None) != (self.height is None):
            raise RunError("give --width and --height together (or --size)")
        if self.strength is not None and not 0 < self.strength <= 1:
            raise RunError(f"--strength must be in (0, 1], got {self.strength}")
        reserved = {"prompt", "image", "generator", "output_type", "num_images_per_prompt"} & set(self.extra)
        if reserved:
            raise RunError(f"--call-kwargs cannot set {', '.join(sorted(reserved))} (the runner sets them per item)")


_SETTING_PARAMETERS = {"steps": "num_inference_steps", "guidance": "guidance_scale", "strength": "strength",
                       "negative_prompt": "negative_prompt"}


def _call_parameters(pipe) -> dict[str, inspect.Parameter]:
    """The named parameters of the pipeline's call. A catch-all ``**kwargs`` does not count: diffusers
    pipelines use it for deprecated arguments and drop anything else silently."""
    return {name: p for name, p in inspect.signature(pipe.__call__).parameters.items()
            if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}


def fixed_call_arguments(pipe, settings: CallSettings) -> dict[str, Any]:
    """The call arguments shared by every batch; a setting the pipeline does not take is an error."""
    parameters = _call_parameters(pipe)
    arguments: dict[str, Any] = {}
    for setting, parameter in _SETTING_PARAMETERS.items():
        value = getattr(settings, setting)
        if value is None:
            continue
        if parameter not in parameters:
            raise RunError(f"{type(pipe).__name__} takes no {parameter} (set by --{setting.replace('_', '-')})")
        arguments[parameter] = value
    unknown = sorted(k for k in settings.extra if k not in parameters)
    if unknown:
        raise RunError(f"{type(pipe).__name__} takes no {', '.join(unknown)} (from --call-kwargs)")
    arguments.update(settings.extra)
    if "output_type" in parameters:
        arguments["output_type"] = "pil"
    return arguments


def effective_call_arguments(pipe, fixed: dict[str, Any]) -> dict[str, Any]:
    """The fixed arguments plus the pipeline's defaults for the settings left unset (for the manifest)."""
    parameters = _call_parameters(pipe)
    effective = {k: v for k, v in fixed.items() if k != "negative_prompt" or v}
    for parameter in _SETTING_PARAMETERS.values():  # the size is recorded apart, and per item
        if parameter not in effective and parameter in parameters:
            default = parameters[parameter].default
            if default is not inspect.Parameter.empty and isinstance(default, int | float | str | type(None)):
                effective[parameter] = default
    return effective


def generation_size(settings: CallSettings, input_size: tuple[int, int] | None) -> tuple[int, int] | None:
    """(width, height) to generate at; None leaves the pipeline's default (text-to-image only)."""
    if settings.width and settings.height:
        return settings.width, settings.height
    if input_size is None:
        return (settings.size, settings.size) if settings.size else None
    width, height = input_size
    if settings.size:  # the longer side becomes --size, aspect kept
        scale = settings.size / max(width, height)
        return _multiple(width * scale), _multiple(height * scale)
    return _multiple(width), _multiple(height)


def _multiple(value: float) -> int:
    return max(SIZE_MULTIPLE, int(round(value / SIZE_MULTIPLE)) * SIZE_MULTIPLE)


# --------------------------------------------------------------------------- the generation loop


@dataclass
class ProcessResult:
    """What one process did; merged into the manifest by the main process."""

    process: int
    generated: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    failure: str | None = None
    batch_fallback: str | None = None  # why the run went on at batch size 1


def _batches(items: Sequence[GenerationItem], batch_size: Callable[[], int], key: Callable[[GenerationItem], Any]) -> Iterator[list]:
    """Consecutive items, at most ``batch_size()`` (read per batch), sharing ``key`` (images of one size go together)."""
    batch: list = []
    for item in items:
        if batch and (len(batch) >= batch_size() or key(batch[0]) != key(item)):
            yield batch
            batch = []
        batch.append(item)
    if batch:
        yield batch


class _Writer:
    """PNG encoding and atomic writes in background threads, at most two batches behind the pipeline."""

    def __init__(self, threads: int = 2) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="png-writer")
        self.pending: list[list[Future]] = []

    def submit(self, jobs: list[tuple[Path, Any]]) -> None:
        self.pending.append([self.pool.submit(write_png_atomic, path, image) for path, image in jobs])
        while len(self.pending) > 2:
            for future in self.pending.pop(0):
                future.result()

    def close(self) -> None:
        """Finish every submitted write (complete items are kept even when the run fails), then re-raise a write error."""
        try:
            for batch in self.pending:
                for future in batch:
                    future.result()
        finally:
            self.pending = []
            self.pool.shutdown(wait=True)


def generate_items(pipe, items: Sequence[GenerationItem], out_dir: Path, *, seed: int, batch_size: int,
                   settings: CallSettings, fixed_arguments: dict[str, Any], process: int = 0,
                   progress: bool = True, progress_desc: str = "generate",
                   result: ProcessResult | None = None) -> ProcessResult:
    """Generate ``items`` (all still to do) with ``pipe`` into ``out_dir``; returns what was written.

    The pipeline is called with one CPU generator per item. Input images are resized to the
    generation size; outputs of image-conditioned items are resized back to the input's size
    so the answer keeps the puzzle's aspect ratio. Finished items are appended to ``result``
    as they are written, so a caller still knows them when a later batch raises.
    """
    import torch
    from tqdm import tqdm

    parameters = _call_parameters(pipe)
    result = result if result is not None else ProcessResult(process=process)
    inputs: dict[str, Any] = {}

    def input_image(item: GenerationItem):
        if item.id not in inputs:
            assert item.image is not None  # image-conditioned items carry their input
            inputs[item.id] = item.image.load()
        return inputs[item.id]

    def size_of(item: GenerationItem):
        return generation_size(settings, input_image(item).size if item.image is not None else None)

    writer = _Writer()
    bar = tqdm(total=len(items), desc=progress_desc, unit="img", disable=not progress, dynamic_ncols=True)
    started = time.perf_counter()
    current_size = [batch_size]

    def generate(batch: list[GenerationItem]) -> None:
        t0 = time.perf_counter()
        size = size_of(batch[0])
        seeds = [item_seed(seed, item.id) for item in batch]
        arguments = dict(fixed_arguments)
        arguments["prompt"] = [item.prompt for item in batch]
        arguments["generator"] = [torch.Generator("cpu").manual_seed(s) for s in seeds]
        if "negative_prompt" in arguments:
            arguments["negative_prompt"] = [arguments["negative_prompt"]] * len(batch)
        originals = None
        if batch[0].image is not None:
            originals = [input_image(item) for item in batch]
            arguments["image"] = [img.resize(size) if img.size != size else img for img in originals]
        if size is not None and ("height" in parameters and "width" in parameters):
            arguments["width"], arguments["height"] = size
        images = pipe(**arguments).images
        if len(images) != len(batch):
            raise RuntimeError(f"{type(pipe).__name__} returned {len(images)} images for {len(batch)} prompts")
        jobs, generated_sizes = [], []
        for k, (item, image) in enumerate(zip(batch, images)):
            image = _to_pil(image)
            generated_sizes.append(list(image.size))
            if originals is not None and image.size != originals[k].size:
                image = image.resize(originals[k].size)
            jobs.append((out_dir / item.output, image))
        writer.submit(jobs)
        seconds = (time.perf_counter() - t0) / len(batch)
        for item, s, (_, image), generated_size in zip(batch, seeds, jobs, generated_sizes):
            result.generated.append({**item.info, "id": item.id, "seed": s, "output": item.output, "prompt": item.prompt,
                                     "status": "generated", "seconds": round(seconds, 4), "process": process,
                                     "size": list(image.size), "generated_size": generated_size})
            inputs.pop(item.id, None)
        bar.update(len(batch))

    try:
        for batch in _batches(items, lambda: current_size[0], size_of):
            try:
                generate(batch)
            except Exception as exc:
                # Some pipelines take one image per call (an editing pipeline's list input fails):
                # the batch is retried item by item, and the rest of the run keeps size 1.
                if len(batch) == 1 or result.batch_fallback is not None:
                    raise
                for item in batch:
                    generate([item])
                result.batch_fallback = f"batch of {len(batch)} failed ({exc.__class__.__name__}: {first_line(exc)})"
                current_size[0] = 1
    finally:
        bar.close()
        writer.close()
        result.seconds = time.perf_counter() - started
    return result


def _to_pil(image):
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.convert("RGB") if image.mode != "RGB" else image
    import numpy as np

    array = np.asarray(image)
    if array.dtype != np.uint8:
        array = (np.clip(array, 0, 1) * 255).round().astype(np.uint8)
    return Image.fromarray(array).convert("RGB")


# --------------------------------------------------------------------------- a whole run


@dataclass
class RunConfig:
    kind: str
    spec: ModelSpec
    out: Path
    settings: CallSettings
    dtype: str = "auto"
    seed: int = 0
    batch_size: int = 4
    progress: bool = True
    inputs: dict[str, Any] = field(default_factory=dict)  # where the items came from, for the manifest
    input_settings: dict[str, Any] = field(default_factory=dict)  # the inputs that determine outputs (compared on resume)
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def run(config: RunConfig, items: Sequence[GenerationItem], pipe=None, model_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """Generate every item whose output is missing; returns the merged manifest (main process) or {}.

    ``pipe``/``model_info`` skip loading (benchmarks pass a pipeline built in memory).
    """
    if config.batch_size < 1:
        raise RunError(f"--batch-size must be at least 1, got {config.batch_size}")
    if config.kind not in KINDS:
        raise RunError(f"unknown run kind {config.kind!r}")
    config.settings.validate()
    state = _process_state()
    torch_dtype = resolve_dtype(config.dtype, state.device.type)
    out = config.out
    previous = _read_manifest(out / MANIFEST_FILE)

    t0 = time.perf_counter()
    if pipe is None:
        pipe, model_info = load_pipeline(config.spec, config.kind, torch_dtype, progress=config.progress)
    assert model_info is not None  # loaded with the pipeline, or given with it
    pipe = pipe.to(state.device)
    if hasattr(pipe, "set_progress_bar_config"):
        pipe.set_progress_bar_config(disable=True)
    load_seconds = time.perf_counter() - t0
    fixed = fixed_call_arguments(pipe, config.settings)
    settings_record = {
        "kind": config.kind, "model": {k: model_info[k] for k in ("id", "revision", "variant", "pipeline_class")},
        "call_arguments": _jsonable(fixed), "size": _jsonable(_size_settings(config.settings)),
        "dtype": dtype_name(torch_dtype), "seed": config.seed, "inputs": _jsonable(config.input_settings),
    }
    try:
        check_settings(out, previous.get("settings") if previous else None, settings_record)
    except SettingsMismatch as exc:
        raise RunError(str(exc)) from None

    todo = []
    for item in items:
        path = out / item.output
        temporary_path(path).unlink(missing_ok=True)  # left by a run killed mid-write
        if not path.is_file():
            todo.append(item)
    if previous is None and len(todo) < len(items):
        found = next(item.output for item in items if item not in todo)
        raise RunError(f"{out} holds outputs ({found}, ...) but no {MANIFEST_FILE} saying how they were made; "
                       "use another --out or move them away")
    if state.is_main_process:  # the settings are on disk before the first image, whatever happens next
        write_json_atomic(out / MANIFEST_FILE, _merge_manifest(
            config, items, previous, [], model_info, settings_record, torch_dtype, fixed, pipe, 0.0,
            state.num_processes, len(items) - len(todo), completed=False))
    # Every process lists the outputs before any of them writes, so all split the same list.
    state.wait_for_everyone()
    with state.split_between_processes(todo) as mine:
        desc = "generate" if state.num_processes == 1 else f"generate (process 0 of {state.num_processes})"
        failure = None
        result = ProcessResult(process=state.process_index)
        try:
            generate_items(pipe, mine, out, seed=config.seed, batch_size=config.batch_size, settings=config.settings,
                           fixed_arguments=fixed, process=state.process_index,
                           progress=config.progress and state.is_main_process, progress_desc=desc, result=result)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded in the manifest, then re-raised
            failure = exc
            result.failure = f"{exc.__class__.__name__}: {first_line(exc)}"
    write_json_atomic(out / f".manifest-part-{state.process_index}.json", result.__dict__)
    state.wait_for_everyone()
    manifest: dict[str, Any] = {}
    if state.is_main_process:
        parts = [_read_manifest(out / f".manifest-part-{k}.json") or {} for k in range(state.num_processes)]
        manifest = _merge_manifest(config, items, previous, parts, model_info, settings_record, torch_dtype,
                                   fixed, pipe, load_seconds, state.num_processes, len(items) - len(todo))
        write_json_atomic(out / MANIFEST_FILE, manifest)
        for k in range(state.num_processes):
            (out / f".manifest-part-{k}.json").unlink(missing_ok=True)
    if failure is not None:
        raise failure
    return manifest


def _process_state():
    """accelerate's view of the launched processes, refusing a launch it does not see as distributed."""
    import torch
    from accelerate import PartialState

    launched = int(os.environ.get("WORLD_SIZE", "1") or 1)
    # Without CUDA, accelerate forms a process group only when told to use the CPU (gloo).
    state = PartialState(cpu=True) if launched > 1 and not torch.cuda.is_available() else PartialState()
    if launched != state.num_processes:
        raise RunError(f"launched as {launched} processes but accelerate sees {state.num_processes}; "
                       "start the run with `accelerate launch` or torchrun")
    return state


def _size_settings(settings: CallSettings) -> dict[str, Any]:
    return {"width": settings.width, "height": settings.height, "size": settings.size}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RunError(f"cannot read {path} ({exc.__class__.__name__}); move it away to start the folder afresh") from None
    return data if isinstance(data, dict) else None


def _merge_manifest(config: RunConfig, items: Sequence[GenerationItem], previous: dict[str, Any] | None,
                    parts: list[dict[str, Any]], model_info: dict[str, Any], settings_record: dict[str, Any],
                    torch_dtype, fixed: dict[str, Any], pipe, load_seconds: float, processes: int,
                    skipped: int, completed: bool = True) -> dict[str, Any]:
    earlier = {entry["id"]: entry for entry in (previous or {}).get("items", [])}
    now = {entry["id"]: entry for part in parts for entry in part.get("generated", [])}
    entries = []
    for item in items:
        done = (config.out / item.output).is_file()
        if item.id in now and done:
            entries.append(now[item.id])
        elif done:
            old = earlier.get(item.id) or {**item.info, "id": item.id, "seed": item_seed(config.seed, item.id),
                                             "output": item.output, "prompt": item.prompt}
            entries.append({**old, "status": "existing"})
        else:
            entries.append({**item.info, "id": item.id, "seed": item_seed(config.seed, item.id), "output": item.output,
                            "prompt": item.prompt, "status": "missing"})
    generated = sum(len(p.get("generated", [])) for p in parts)
    wall = max((p.get("seconds", 0.0) for p in parts), default=0.0)
    this_run = {
        "started": config.started,
        "completed": completed,
        "generated": generated, "skipped_existing": skipped, "processes": processes, "batch_size": config.batch_size,
        "load_seconds": round(load_seconds, 3), "generate_seconds": round(wall, 3),
        "images_per_second": round(generated / wall, 4) if wall > 0 else None,
        "failures": [p["failure"] for p in parts if p.get("failure")],
        "batch_fallback": next((p["batch_fallback"] for p in parts if p.get("batch_fallback")), None),
        "limit": config.inputs.get("limit"),
    }
    return {
        "format_version": MANIFEST_VERSION,
        "kind": config.kind,
        "settings": settings_record,
        "model": model_info,
        "pipeline_class": type(pipe).__name__,
        "pipeline_arguments": _jsonable(effective_call_arguments(pipe, fixed)),
        "size": _jsonable(_size_settings(config.settings)),
        "dtype": dtype_name(torch_dtype),
        "seed": config.seed,
        "seed_derivation": "sha256 of sorted JSON {item: id, seed: run seed}, first 8 bytes >> 1; one CPU torch.Generator per item",
        "versions": package_versions(),
        "inputs": config.inputs,
        "counts": {"items": len(items), "done": sum(e["status"] != "missing" for e in entries),
                   "missing": sum(e["status"] == "missing" for e in entries)},
        "runs": [*(previous or {}).get("runs", []), this_run],
        "items": entries,
    }
