"""Backends answering a TACIT five-way question (see ``vlm_choice``).

- ``LikelihoodBackend``: a transformers vision-language model (``AutoProcessor`` +
  ``AutoModelForImageTextToText``, LLaVA as the fallback class) scores each option's answer
  continuation (the letter by default) given the puzzle, the five option images and the
  question; the highest log-likelihood wins. When every continuation is one token, one forward
  pass gives all five scores; otherwise each continuation is scored on its own pass, as the sum
  or per-token mean of its tokens' log-probabilities. The model's own code runs only with
  ``trust_remote_code=True``. Its loader (``load_vlm``) and prompt rendering (``chat_prompt``)
  serve the CF-Eval local judge too.
- ``OpenAIBackend``: any OpenAI-compatible chat endpoint through ``vrforge.openai_client``;
  images travel as base64 PNG data URLs and the letter is parsed from the text answer. A
  refusal or an empty answer is recorded as no answer; an endpoint that cannot be reached
  (after the client's retries) stops the run, which resumes later.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vrforge.runners.vlm_choice import LETTERS, Answer, BackendError, Question, parse_choice, pil_image

_DTYPES = ("auto", "float32", "bfloat16", "float16")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0]}" if text else exc.__class__.__name__


class LikelihoodBackend:
    """Option-letter log-likelihood with a local or hub transformers VLM."""

    def __init__(self, model: str, *, revision: str | None = None, dtype: str = "auto", device: str = "auto",
                 trust_remote_code: bool = False, local_files_only: bool = False,
                 answer_template: str = "{letter}", normalise: str = "mean") -> None:
        check_model_options(model, dtype)
        if normalise not in ("mean", "sum"):
            raise BackendError(f"normalise must be 'mean' or 'sum', got {normalise!r}")
        if "{letter}" not in answer_template:
            raise BackendError(f"--answer-template must contain {{letter}}, got {answer_template!r}")
        self.model_id, self.revision, self.dtype_name, self.device = model, revision, dtype, device
        self.trust_remote_code, self.local_files_only = trust_remote_code, local_files_only
        self.answer_template, self.normalise = answer_template, normalise
        self.model: Any = None

    def load(self) -> None:
        """Load processor and model (on the first question, so a run with nothing left to ask loads nothing)."""
        if self.model is not None:
            return
        import torch

        self._torch = torch
        self.processor, self.tokenizer, loaded = load_vlm(
            self.model_id, revision=self.revision, dtype=self.dtype_name, device=self.device,
            trust_remote_code=self.trust_remote_code, local_files_only=self.local_files_only)
        self.continuations = [self.tokenizer(self.answer_template.format(letter=letter), add_special_tokens=False).input_ids
                              for letter in LETTERS]
        if not all(self.continuations):
            raise BackendError(f"--answer-template {self.answer_template!r} gives an empty continuation for some letter")
        self.model = loaded

    def describe(self) -> dict[str, Any]:
        return {"backend": "likelihood", "model": self.model_id, "revision": self.revision, "dtype": self.dtype_name,
                "answer_template": self.answer_template, "normalise": self.normalise}

    def prompt_text(self, question: Question) -> str:
        """The chat-formatted prompt (the model's chat template; a plain USER/ASSISTANT layout without one)."""
        content: list[dict[str, str]] = []
        for kind, value in question.parts():
            content.append({"type": "image"} if kind == "image" else {"type": "text", "text": value})
        return chat_prompt(self.processor, [{"role": "user", "content": content}])

    def answer(self, question: Question) -> Answer:
        self.load()
        try:
            images = [pil_image(value) for kind, value in question.parts() if kind == "image"]
        except (OSError, ValueError) as exc:  # PIL's decode errors: this puzzle's images only
            return Answer(position=None, error=f"decode: {_first_line(exc)}", failed=True)
        try:
            inputs = self.processor(images=images, text=self.prompt_text(question), return_tensors="pt")
            inputs = inputs.to(self.model.device, dtype=self.model.dtype)
            scores = self.score(inputs, self.continuations[: len(question.options)])
        except (RuntimeError, ValueError, IndexError) as exc:  # e.g. out of memory or over the context on this puzzle
            return Answer(position=None, error=f"model: {_first_line(exc)}", failed=True)
        finite = [s if math.isfinite(s) else -math.inf for s in scores]
        best = max(range(len(finite)), key=lambda k: (finite[k], -k))  # ties go to the earlier letter
        return Answer(position=best if math.isfinite(finite[best]) else None, scores=scores)

    def score(self, inputs: Any, continuations: list[list[int]], *, one_pass: bool = True) -> list[float]:
        """Log-likelihood of each continuation after the prompt (per-token mean or sum)."""
        torch = self._torch
        with torch.inference_mode():
            if one_pass and all(len(c) == 1 for c in continuations):
                logits = self.model(**inputs).logits[0, -1].float()
                logp = torch.log_softmax(logits, dim=-1)
                return [float(logp[c[0]]) for c in continuations]
            return [self._score_one(inputs, c) for c in continuations]

    def _score_one(self, inputs: Any, continuation: list[int]) -> float:
        torch = self._torch
        ids = inputs["input_ids"]
        extra = torch.tensor([continuation], dtype=ids.dtype, device=ids.device)
        extended = {}
        for key, value in inputs.items():
            if torch.is_tensor(value) and value.shape[:2] == ids.shape and key != "input_ids":
                # Per-token side inputs (attention mask, token types) grow with the text: 1 for the mask, 0 otherwise.
                fill = torch.ones if key == "attention_mask" else torch.zeros
                value = torch.cat([value, fill((1, len(continuation)), dtype=value.dtype, device=value.device)], dim=1)
            extended[key] = value
        extended["input_ids"] = torch.cat([ids, extra], dim=1)
        logits = self.model(**extended).logits[0].float()
        start = ids.shape[1] - 1  # the logits at position t predict token t + 1
        logp = torch.log_softmax(logits[start:start + len(continuation)], dim=-1)
        total = float(logp.gather(1, extra[0].unsqueeze(1)).sum())
        return total / len(continuation) if self.normalise == "mean" else total


class OpenAIBackend:
    """A parsed letter from any OpenAI-compatible chat endpoint."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", cache_dir: str | Path | None = None,
                 timeout_s: float = 120.0, max_retries: int = 3, max_tokens: int | None = None, seed: int | None = None) -> None:
        from vrforge.openai_client import ChatClient, ChatConfig

        self.base_url, self.model_id, self.max_tokens = base_url, model, max_tokens
        config = ChatConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout_s=timeout_s,
                            max_retries=max_retries, temperature=0.0, max_tokens=max_tokens, seed=seed)
        self.client = ChatClient(config, Path(cache_dir) if cache_dir else None)

    def describe(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.model_id, "max_tokens": self.max_tokens}

    def messages(self, question: Question) -> list[dict[str, Any]]:
        from vrforge.openai_client import image_part

        content = [image_part(value) if kind == "image" else {"type": "text", "text": value} for kind, value in question.parts()]
        return [{"role": "user", "content": content}]

    def answer(self, question: Question) -> Answer:
        from vrforge.openai_client import ChatError

        try:
            result = self.client.complete_text(self.messages(question))
        except ChatError as exc:
            if exc.concerns_every_request:
                raise BackendError(f"{self.base_url} did not answer ({exc})") from None
            if exc.kind == "refusal":  # the model's own answer: no letter, counted wrong
                return Answer(position=None, error=str(exc))
            # "HTTP 400: <the server's reason>" or "<kind>: <reason>": the part before the colon groups the counts.
            error = exc.message if exc.kind == "http" and exc.message.startswith("HTTP") else f"{exc.kind}: {exc.message}"
            return Answer(position=None, error=error, failed=True)
        text = str(result.data.get("text", ""))
        return Answer(position=parse_choice(text, len(question.options)), raw=text)


def check_model_options(model: str, dtype: str) -> None:
    """The checks that need no loading: a known dtype, and a path-looking model that is a folder."""
    if dtype not in _DTYPES:
        raise BackendError(f"--dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    if model.startswith(("/", "./", "../", "~")) and not Path(model).expanduser().is_dir():
        raise BackendError(f"no such model folder: {model}")


def load_vlm(model: str, *, revision: str | None = None, dtype: str = "auto", device: str = "auto",
             trust_remote_code: bool = False, local_files_only: bool = False) -> tuple[Any, Any, Any]:
    """(processor, tokenizer, model in eval mode) of a transformers vision-language model; BackendError in one line."""
    import torch
    import transformers

    check_model_options(model, dtype)
    common = {"revision": revision, "trust_remote_code": trust_remote_code, "local_files_only": local_files_only}
    try:
        processor = transformers.AutoProcessor.from_pretrained(model, **common)
    except Exception as exc:  # noqa: BLE001 - any loading failure is one line for the user
        raise BackendError(f"cannot load the processor of {model!r} ({_first_line(exc)})") from None
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is None:
        raise BackendError(f"{model!r}: its processor has no tokenizer (not a vision-language model?)")

    load: dict[str, Any] = dict(common)
    torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
    # transformers renamed torch_dtype to dtype (4.56); older releases only know the old name.
    load["dtype" if _transformers_at_least(transformers.__version__, (4, 56)) else "torch_dtype"] = torch_dtype
    target = device
    if target == "auto":
        target = "cuda" if torch.cuda.is_available() else "cpu"
        if target == "cuda" and _has_accelerate():
            load["device_map"] = "auto"
    model_class = getattr(transformers, "AutoModelForImageTextToText", None) or transformers.LlavaForConditionalGeneration
    try:
        loaded = model_class.from_pretrained(model, **load)
    except Exception as exc:  # noqa: BLE001
        raise BackendError(f"cannot load the model {model!r} ({_first_line(exc)})") from None
    if "device_map" not in load:
        try:
            loaded.to(target)
        except (RuntimeError, ValueError, AssertionError) as exc:
            raise BackendError(f"cannot move the model to {target!r} ({_first_line(exc)})") from None
    loaded.eval()
    return processor, tokenizer, loaded


def chat_prompt(processor: Any, messages: list[dict[str, Any]]) -> str:
    """Chat messages (content as lists of ``{"type": "image"}`` / ``{"type": "text"}`` parts) as the prompt text:
    the model's chat template, or a plain ``ROLE: ...`` / ``ASSISTANT:`` layout when it has none."""
    if getattr(processor, "chat_template", None):
        return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    image_token = getattr(processor, "image_token", None) or "<image>"
    lines = []
    for message in messages:
        body = "\n".join(image_token if part["type"] == "image" else part["text"] for part in message["content"])
        lines.append(f"{message['role'].upper()}: {body}")
    return "\n".join(lines) + "\nASSISTANT:"


def _transformers_at_least(version: str, wanted: tuple[int, int]) -> bool:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts) >= wanted


def _has_accelerate() -> bool:
    try:
        import accelerate  # noqa: F401
    except ImportError:
        return False
    return True
