"""The models a chain runs: one interface, three kinds.

A chain model has ``caption(image) -> str`` and ``generate(text, seed) -> image``; the runner
calls ``caption_batch`` / ``generate_batch`` when a model has them (batched inference), the
single-item methods otherwise. ``describe()`` is what the manifest records about it.

- ``PairModel``: a captioner (``VlmCaptioner``: any transformers vision-language model loaded with
  the VLM runners' ``load_vlm``; or ``OpenAICaptioner``: any OpenAI-compatible chat endpoint) and a
  ``DiffusersGenerator`` (any diffusers text-to-image pipeline, loaded as ``vrforge run t2i`` does).
- A unified model: any object with the two methods, named as ``module:factory`` or
  ``path/to/file.py:factory`` (the factory is called with the JSON keyword arguments given).

Captioning decodes greedily (deterministic); generation gets one CPU ``torch.Generator`` per item,
seeded by the runner from the sample and step, so an image does not depend on the batch.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from vrforge.errors import UserError

DEFAULT_CAPTION_PROMPT = "Describe this image in one sentence."


class ChainModel(Protocol):
    def caption(self, image: Image.Image) -> str: ...

    def generate(self, text: str, seed: int) -> Image.Image: ...

    def describe(self) -> dict[str, Any]: ...


def caption_batch(model: Any, images: list[Image.Image]) -> list[str]:
    if hasattr(model, "caption_batch"):
        return list(model.caption_batch(images))
    return [model.caption(image) for image in images]


def generate_batch(model: Any, texts: list[str], seeds: list[int]) -> list[Image.Image]:
    if hasattr(model, "generate_batch"):
        return list(model.generate_batch(texts, seeds))
    return [model.generate(text, seed) for text, seed in zip(texts, seeds)]


def describe(model: Any) -> dict[str, Any]:
    return model.describe() if hasattr(model, "describe") else {"class": f"{type(model).__module__}.{type(model).__qualname__}"}


def _one_line(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{exc.__class__.__name__}: {first}" if first else exc.__class__.__name__


class VlmCaptioner:
    """Greedy captions from a transformers vision-language model (chat template when it has one)."""

    def __init__(self, model: str, *, prompt: str = DEFAULT_CAPTION_PROMPT, max_new_tokens: int = 77, dtype: str = "auto",
                 device: str = "auto", revision: str | None = None, local_files_only: bool = False,
                 trust_remote_code: bool = False) -> None:
        self.model_id, self.prompt, self.max_new_tokens = model, prompt, max_new_tokens
        self.options: dict[str, Any] = {"revision": revision, "dtype": dtype, "device": device, "local_files_only": local_files_only,
                        "trust_remote_code": trust_remote_code}
        self.model: Any = None

    def describe(self) -> dict[str, Any]:
        return {"captioner": "transformers", "model": self.model_id, "prompt": self.prompt,
                "max_new_tokens": self.max_new_tokens, "revision": self.options["revision"], "dtype": self.options["dtype"],
                "decoding": "greedy"}

    def load(self) -> None:
        if self.model is not None:
            return
        import torch

        from vrforge.runners.vlm_backends import chat_prompt, load_vlm
        from vrforge.runners.vlm_choice import BackendError

        self._torch = torch
        try:
            self.processor, self.tokenizer, self.model = load_vlm(self.model_id, **self.options)
        except BackendError as exc:
            raise UserError(str(exc)) from None
        self.tokenizer.padding_side = "left"  # generation continues from the right end of every row
        self.text = chat_prompt(self.processor, [{"role": "user", "content": [{"type": "image"},
                                                                              {"type": "text", "text": self.prompt}]}])

    def caption(self, image: Image.Image) -> str:
        return self.caption_batch([image])[0]

    def caption_batch(self, images: list[Image.Image]) -> list[str]:
        self.load()
        inputs = self.processor(images=[im.convert("RGB") for im in images], text=[self.text] * len(images),
                                padding=True, return_tensors="pt")
        inputs = inputs.to(self.model.device)
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with self._torch.inference_mode():
            output = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=pad)
        new = output[:, inputs["input_ids"].shape[1]:]
        return [" ".join(text.split()) for text in self.tokenizer.batch_decode(new, skip_special_tokens=True)]


class OpenAICaptioner:
    """Captions from an OpenAI-compatible chat endpoint (temperature 0, the run's seed, answers cached on disk)."""

    def __init__(self, base_url: str, model: str, *, prompt: str = DEFAULT_CAPTION_PROMPT, api_key_env: str = "OPENAI_API_KEY",
                 cache_dir: Path | None = None, timeout_s: float = 120.0, max_retries: int = 3, max_tokens: int | None = 200,
                 seed: int | None = None) -> None:
        from vrforge.openai_client import ChatClient, ChatConfig

        self.base_url, self.model_id, self.prompt, self.max_tokens = base_url, model, prompt, max_tokens
        config = ChatConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout_s=timeout_s,
                            max_retries=max_retries, temperature=0.0, max_tokens=max_tokens, seed=seed)
        self.client = ChatClient(config, cache_dir)

    def describe(self) -> dict[str, Any]:
        return {"captioner": "openai", "model": self.model_id, "prompt": self.prompt, "max_tokens": self.max_tokens}

    def caption(self, image: Image.Image) -> str:
        from vrforge.openai_client import ChatError, image_part

        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
        messages = [{"role": "user", "content": [image_part(buffer.getvalue()), {"type": "text", "text": self.prompt}]}]
        try:
            result = self.client.complete_text(messages)
        except ChatError as exc:
            if exc.kind in ("http", "timeout"):
                raise UserError(f"{self.base_url} did not answer ({exc}); finished steps are kept, run again to resume") from None
            return ""  # a refusal or an empty answer: the chain goes on with an empty description
        return " ".join(str(result.data.get("text", "")).split())


class DiffusersGenerator:
    """Text-to-image with any diffusers pipeline, one CPU generator per item."""

    def __init__(self, model: str, *, steps: int | None = None, guidance: float | None = None, size: int | None = None,
                 dtype: str = "auto", device: str = "auto", revision: str | None = None, variant: str | None = None,
                 local_files_only: bool = False, trust_remote_code: bool = False, progress: bool = False) -> None:
        from vrforge.runners.diffusion import CallSettings, ModelSpec, RunError, model_source

        self.spec = ModelSpec(model=model, revision=revision, variant=variant, local_files_only=local_files_only,
                              trust_remote_code=trust_remote_code)
        self.settings = CallSettings(steps=steps, guidance=guidance, size=size)
        try:
            self.settings.validate()
            model_source(self.spec)
        except RunError as exc:
            raise UserError(str(exc)) from None
        self.dtype_name, self.device_name, self.progress = dtype, device, progress
        self.pipe: Any = None
        self.info: dict[str, Any] = {"id": model}

    def describe(self) -> dict[str, Any]:
        return {"generator": "diffusers", "model": self.info, "steps": self.settings.steps, "guidance": self.settings.guidance,
                "size": self.settings.size, "dtype": self.dtype_name}

    def load(self) -> None:
        if self.pipe is not None:
            return
        import torch

        from vrforge.runners.diffusion import RunError, fixed_call_arguments, generation_size, load_pipeline, resolve_dtype
        from vrforge.runners.drift.embed import resolve_device

        self._torch = torch
        device = resolve_device(self.device_name)
        try:
            self.pipe, self.info = load_pipeline(self.spec, "t2i", resolve_dtype(self.dtype_name, device), progress=self.progress)
            self.arguments = fixed_call_arguments(self.pipe, self.settings)
        except RunError as exc:
            raise UserError(str(exc)) from None
        self.pipe.to(device)
        self.pipe.set_progress_bar_config(disable=True)
        size = generation_size(self.settings, None)
        if size is not None:
            self.arguments["width"], self.arguments["height"] = size

    def generate(self, text: str, seed: int) -> Image.Image:
        return self.generate_batch([text], [seed])[0]

    def generate_batch(self, texts: list[str], seeds: list[int]) -> list[Image.Image]:
        self.load()
        generators = [self._torch.Generator("cpu").manual_seed(s) for s in seeds]
        with self._torch.inference_mode():
            return list(self.pipe(prompt=list(texts), generator=generators, **self.arguments).images)


class PairModel:
    """A captioner and a generator behind the chain interface."""

    def __init__(self, captioner: Any, generator: Any) -> None:
        self.captioner, self.generator = captioner, generator

    def describe(self) -> dict[str, Any]:
        return {"kind": "pair", "captioner": describe(self.captioner), "generator": describe(self.generator)}

    def load(self) -> None:
        for part in (self.captioner, self.generator):
            if hasattr(part, "load"):
                part.load()

    def caption(self, image: Image.Image) -> str:
        return caption_batch(self.captioner, [image])[0]

    def caption_batch(self, images: list[Image.Image]) -> list[str]:
        return caption_batch(self.captioner, images)

    def generate(self, text: str, seed: int) -> Image.Image:
        return generate_batch(self.generator, [text], [seed])[0]

    def generate_batch(self, texts: list[str], seeds: list[int]) -> list[Image.Image]:
        return generate_batch(self.generator, texts, seeds)


def load_unified(target: str, kwargs: dict[str, Any] | None = None) -> Any:
    """``module:factory`` or ``file.py:factory`` called with ``kwargs``: an object with caption and generate."""
    module_name, _, attribute = target.rpartition(":")
    if not module_name or not attribute:
        raise UserError(f"--unified must be module:factory or file.py:factory, got {target!r}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise UserError(f"no such file: {module_name}")
            spec = importlib.util.spec_from_file_location(f"vrforge_unified_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise UserError(f"cannot load {module_name} as a Python module")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        factory = getattr(module, attribute)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise UserError(f"cannot import {target} ({_one_line(exc)})") from None
    try:
        model = factory(**(kwargs or {}))
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"{target} failed to build the model ({_one_line(exc)})") from None
    missing = [m for m in ("caption", "generate") if not callable(getattr(model, m, None))]
    if missing:
        raise UserError(f"{target} gave a {type(model).__name__} without {' and '.join(missing)}()")
    return model


def sequence_of_images(value: Sequence[Any], expected: int, what: str) -> list[Image.Image]:
    """A model's batch output checked: one PIL image per input."""
    images = list(value)
    if len(images) != expected or not all(isinstance(im, Image.Image) for im in images):
        raise UserError(f"the model's {what} gave {len(images)} outputs for {expected} inputs, or not PIL images")
    return images
