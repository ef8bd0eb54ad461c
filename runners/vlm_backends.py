"""Backends answering a TACIT five-way question (see ``vlm_choice``).

- ``LikelihoodBackend``: a transformers vision-language model scores each option's answer
  continuation (the letter by default) given the puzzle, the five option images and the
  question; the highest log-likelihood wins. Questions are scored in batches (``batch_size``;
  the runner batches a puzzle's rotations), left-padded, with position ids taken from the
  attention mask so a padded row scores as it would alone. When every continuation is one
  token, the prompt's last logits give all five scores; otherwise the prompt is run once and its
  KV cache is reused for the five continuations in one more pass (sum or per-token mean of the
  continuation's log-probabilities). ``processor_kwargs`` go to the processor (``max_pixels``
  for Qwen2-VL). The model's own code runs only with ``trust_remote_code=True``. Its loader
  (``load_vlm``) and prompt rendering (``chat_prompt``) serve the CF-Eval local judge too.
- ``load_vlm`` tries the Auto classes in order (``AutoModelForImageTextToText``, then, for
  families that register elsewhere such as InternVL with remote code, ``AutoModelForCausalLM``
  and ``AutoModel``), or the class a small registry (``MODEL_CLASSES``) names for the config's
  ``model_type``; every failure is reported on one line. Under data parallelism
  (``WORLD_SIZE`` > 1) ``device="auto"`` is this process's GPU (``LOCAL_RANK``), never a model
  spread over all GPUs.
- ``VLLMBackend`` (optional ``vllm`` extra, offline ``vllm.LLM``): one generated token with
  logprobs; the five option letters' log-probabilities are the scores (a letter outside the
  returned top logprobs scores -inf).
- ``OpenAIBackend``: any OpenAI-compatible chat endpoint through ``vrforge.openai_client``;
  images travel as base64 PNG data URLs and the letter is parsed from the text answer. A
  refusal or an empty answer is recorded as no answer; an endpoint that cannot be reached
  (after the client's retries) stops the run, which resumes later.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from vrforge.runners.vlm_choice import LETTERS, Answer, BackendError, Question, parse_choice, pil_image

_DTYPES = ("auto", "float32", "bfloat16", "float16")


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0]}" if text else exc.__class__.__name__


class LikelihoodBackend:
    """Option-letter log-likelihood with a local or hub transformers VLM."""

    def __init__(self, model: str, *, revision: str | None = None, dtype: str = "auto", device: str = "auto",
                 trust_remote_code: bool = False, local_files_only: bool = False,
                 answer_template: str = "{letter}", normalise: str = "mean", batch_size: int = 1,
                 processor_kwargs: dict[str, Any] | None = None) -> None:
        check_model_options(model, dtype)
        if batch_size < 1:
            raise BackendError(f"--batch-size must be at least 1, got {batch_size}")
        self.batch_size, self.processor_kwargs = batch_size, dict(processor_kwargs or {})
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
            trust_remote_code=self.trust_remote_code, local_files_only=self.local_files_only,
            processor_kwargs=self.processor_kwargs)
        self.continuations = [self.tokenizer(self.answer_template.format(letter=letter), add_special_tokens=False).input_ids
                              for letter in LETTERS]
        if not all(self.continuations):
            raise BackendError(f"--answer-template {self.answer_template!r} gives an empty continuation for some letter")
        self.model = loaded

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"backend": "likelihood", "model": self.model_id, "revision": self.revision,
                                     "dtype": self.dtype_name, "answer_template": self.answer_template,
                                     "normalise": self.normalise}
        if self.processor_kwargs:  # only when set, so folders made before the option still resume
            described["processor_kwargs"] = self.processor_kwargs
        return described

    def prompt_text(self, question: Question) -> str:
        """The chat-formatted prompt (the model's chat template; a plain USER/ASSISTANT layout without one)."""
        content: list[dict[str, str]] = []
        for kind, value in question.parts():
            content.append({"type": "image"} if kind == "image" else {"type": "text", "text": cast(str, value)})
        return chat_prompt(self.processor, [{"role": "user", "content": content}])

    def answer(self, question: Question) -> Answer:
        return self.answer_many([question])[0]

    def answer_many(self, questions: Sequence[Question]) -> list[Answer]:
        """Answers to several questions, scored ``batch_size`` at a time; a failing batch is retried one by one,
        so a failure stays with its question."""
        self.load()
        answers: list[Answer | None] = [None] * len(questions)
        decoded: list[tuple[int, list[Any]]] = []
        for k, question in enumerate(questions):
            try:
                decoded.append((k, [pil_image(png) for png in question.images()]))
            except (OSError, ValueError) as exc:  # PIL's decode errors: this puzzle's images only
                answers[k] = Answer(position=None, error=f"decode: {_error_line(exc)}", failed=True)
        for start in range(0, len(decoded), self.batch_size):
            chunk = decoded[start:start + self.batch_size]
            scored: Sequence[list[float] | BaseException]
            try:
                scored = self.score_questions([questions[k] for k, _ in chunk], [images for _, images in chunk])
            except (RuntimeError, ValueError, IndexError) as exc:  # e.g. out of memory or over the context
                if len(chunk) == 1:
                    answers[chunk[0][0]] = Answer(position=None, error=f"model: {_error_line(exc)}", failed=True)
                    continue
                one_by_one: list[list[float] | BaseException] = []
                for k, images in chunk:
                    try:
                        one_by_one.append(self.score_questions([questions[k]], [images])[0])
                    except (RuntimeError, ValueError, IndexError) as one:
                        one_by_one.append(one)
                scored = one_by_one
            for (k, _), scores in zip(chunk, scored):
                if isinstance(scores, BaseException):
                    answers[k] = Answer(position=None, error=f"model: {_error_line(scores)}", failed=True)
                    continue
                finite = [s if math.isfinite(s) else -math.inf for s in scores]
                best = max(range(len(finite)), key=lambda i: (finite[i], -i))  # ties go to the earlier letter
                answers[k] = Answer(position=best if math.isfinite(finite[best]) else None, scores=scores)
        return [a for a in answers if a is not None]

    def score_questions(self, questions: Sequence[Question], images: Sequence[list[Any]]) -> list[list[float]]:
        """Each question's option scores, in one batch: left padding, position ids from the attention mask,
        and for multi-token continuations one more pass over the prompt's KV cache."""
        torch = self._torch
        tokenizer = self.tokenizer
        side = getattr(tokenizer, "padding_side", "right")
        tokenizer.padding_side = "left"  # the last position is every row's last prompt token
        try:
            texts = [self.prompt_text(q) for q in questions]
            flat = [image for group in images for image in group]
            inputs = self.processor(images=flat, text=texts if len(texts) > 1 else texts[0], return_tensors="pt",
                                    padding=len(texts) > 1)
        finally:
            tokenizer.padding_side = side
        inputs = inputs.to(self.model.device, dtype=self.model.dtype)
        continuations = self.continuations[: len(questions[0].options)]
        mask = inputs.get("attention_mask")
        positions = None
        if mask is not None and len(questions) > 1 and _takes_position_ids(self.model):
            positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
            inputs["position_ids"] = positions
        with torch.inference_mode():
            single = all(len(c) == 1 for c in continuations)
            output = self.model(**inputs, use_cache=not single)
            last = torch.log_softmax(output.logits[:, -1].float(), dim=-1)
            if single:
                return [[float(last[row, c[0]]) for c in continuations] for row in range(len(questions))]
            cache = getattr(output, "past_key_values", None)
            if _takes_position_ids(self.model) and cache is not None:
                return self._continue_from_cache(cache, last, mask, positions, continuations)
        # Families with their own position scheme (multimodal rope): one full pass per question and continuation.
        plain = [self.processor(images=group, text=self.prompt_text(q), return_tensors="pt").to(
            self.model.device, dtype=self.model.dtype) for q, group in zip(questions, images)]
        return [self.score(one, continuations, one_pass=False) for one in plain]

    def _continue_from_cache(self, cache: Any, last: Any, mask: Any, positions: Any,
                             continuations: list[list[int]]) -> list[list[float]]:
        """The continuations' log-likelihoods from the prompt's KV cache: every (question, continuation) pair in one pass."""
        torch = self._torch
        rows, count = last.shape[0], len(continuations)
        width = max(len(c) for c in continuations)
        device = last.device
        ids = torch.zeros((count, width), dtype=torch.long, device=device)
        cont_mask = torch.zeros((count, width), dtype=torch.long, device=device)
        for k, c in enumerate(continuations):  # right-padded: causal attention keeps the padding out of earlier tokens
            ids[k, :len(c)] = torch.tensor(c, device=device)
            cont_mask[k, :len(c)] = 1
        cache.batch_repeat_interleave(count)
        prompt_mask = mask if mask is not None else torch.ones((rows, cache.get_seq_length()), dtype=torch.long, device=device)
        start = positions[:, -1] + 1 if positions is not None else torch.full((rows,), prompt_mask.shape[1], device=device)
        step = torch.arange(width, device=device)
        # transformers 5.3x renames the forward's past_key_values to cache; use whichever this model takes.
        import inspect

        cache_name = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        output = self.model(input_ids=ids.repeat(rows, 1),
                            attention_mask=torch.cat([prompt_mask.repeat_interleave(count, 0), cont_mask.repeat(rows, 1)], 1),
                            position_ids=(start.repeat_interleave(count)[:, None] + step[None, :]).long(),
                            use_cache=True, **{cache_name: cache})
        logp = torch.log_softmax(output.logits.float(), dim=-1)
        scores = []
        for row in range(rows):
            per_row = []
            for k, c in enumerate(continuations):
                total = float(last[row, c[0]]) + sum(float(logp[row * count + k, j - 1, c[j]]) for j in range(1, len(c)))
                per_row.append(total / len(c) if self.normalise == "mean" else total)
            scores.append(per_row)
        return scores

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

        content = [image_part(cast(bytes, value)) if kind == "image" else {"type": "text", "text": value}
                   for kind, value in question.parts()]
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


# model_type -> the transformers class to load it with, for families the Auto classes do not map
# to an image-text-to-text model (their remote code registers them under another Auto class).
MODEL_CLASSES: dict[str, str] = {
    "internvl_chat": "AutoModel",
    "minicpmv": "AutoModel",
    "molmo": "AutoModelForCausalLM",
}
AUTO_CLASSES = ("AutoModelForImageTextToText", "AutoModelForCausalLM", "AutoModel")


def load_vlm(model: str, *, revision: str | None = None, dtype: str = "auto", device: str = "auto",
             trust_remote_code: bool = False, local_files_only: bool = False,
             processor_kwargs: dict[str, Any] | None = None) -> tuple[Any, Any, Any]:
    """(processor, tokenizer, model in eval mode) of a transformers vision-language model; BackendError in one line."""
    import torch
    import transformers

    check_model_options(model, dtype)
    common = {"revision": revision, "trust_remote_code": trust_remote_code, "local_files_only": local_files_only}
    try:
        processor = transformers.AutoProcessor.from_pretrained(model, **common, **(processor_kwargs or {}))
    except Exception as exc:  # noqa: BLE001 - any loading failure is one line for the user
        raise BackendError(f"cannot load the processor of {model!r} ({_error_line(exc)})") from None
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
        if target == "cuda" and int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
            target = f"cuda:{int(os.environ.get('LOCAL_RANK', '0') or 0)}"  # data parallel: one GPU per process
        elif target == "cuda" and _has_accelerate():
            load["device_map"] = "auto"
    errors = []
    for name in model_classes(model, common):
        model_class = getattr(transformers, name, None)
        if model_class is None:
            continue
        try:
            loaded = model_class.from_pretrained(model, **load)
            break
        except Exception as exc:  # noqa: BLE001 - every class's failure is listed on one line
            errors.append(f"{name}: {_error_line(exc)}")
    else:
        raise BackendError(f"cannot load the model {model!r} ({'; '.join(errors) or 'no model class'})")
    if "device_map" not in load:
        try:
            cast(Any, loaded).to(target)
        except (RuntimeError, ValueError, AssertionError) as exc:
            raise BackendError(f"cannot move the model to {target!r} ({_error_line(exc)})") from None
    loaded.eval()
    return processor, tokenizer, loaded


def model_classes(model: str, common: dict[str, Any]) -> list[str]:
    """The transformers classes to try, in order: the registry's class for the config's model_type first."""
    import transformers

    try:
        model_type = transformers.AutoConfig.from_pretrained(model, **common).model_type
    except Exception:  # noqa: BLE001 - the model class's own error says more
        model_type = None
    named = MODEL_CLASSES.get(model_type or "")
    return [named] + [c for c in AUTO_CLASSES if c != named] if named else list(AUTO_CLASSES)


def _takes_position_ids(model: Any) -> bool:
    """Whether explicit 1-D position ids are safe: not for multimodal-rope families (Qwen2-VL), which derive theirs."""
    import inspect

    inner = getattr(model, "model", None)
    if hasattr(model, "get_rope_index") or hasattr(inner, "get_rope_index"):
        return False
    try:
        return "position_ids" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


class VLLMBackend:
    """Option letters scored from an offline vLLM engine's logprobs of the first answer token.

    ``engine`` is a ``vllm.LLM`` (built from ``model`` when not given); prompts go in as
    ``{"prompt": text, "multi_modal_data": {"image": [PIL images]}}`` with the model's chat
    template, and one token is generated with ``logprobs``; the five letters' log-probabilities
    are the scores.
    """

    def __init__(self, model: str, *, engine: Any = None, sampling_params: Any = None, logprobs: int = 20,
                 engine_kwargs: dict[str, Any] | None = None) -> None:
        self.model_id, self.logprobs = model, logprobs
        if engine is None:
            try:
                from vllm import LLM
            except ImportError:
                raise BackendError("--backend vllm needs vLLM (pip install 'vrforge[vllm]', CUDA only)") from None
            try:
                engine = LLM(model=model, **(engine_kwargs or {}))
            except Exception as exc:  # noqa: BLE001
                raise BackendError(f"cannot start vLLM with {model!r} ({_error_line(exc)})") from None
        if sampling_params is None:
            from vllm import SamplingParams

            sampling_params = SamplingParams(max_tokens=1, temperature=0.0, logprobs=logprobs)
        self.engine, self.sampling_params = engine, sampling_params
        tokenizer = engine.get_tokenizer()
        self.tokenizer = tokenizer
        self.letter_ids = []
        for letter in LETTERS:
            ids = tokenizer.encode(letter, add_special_tokens=False)
            if len(ids) != 1:
                raise BackendError(f"{model!r}: the letter {letter!r} is {len(ids)} tokens, not one")
            self.letter_ids.append(ids[0])

    def describe(self) -> dict[str, Any]:
        return {"backend": "vllm", "model": self.model_id, "logprobs": self.logprobs}

    def request(self, question: Question) -> dict[str, Any]:
        content = [{"type": "image"} if kind == "image" else {"type": "text", "text": value} for kind, value in question.parts()]
        text = self.tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                  add_generation_prompt=True)
        images = [pil_image(png) for png in question.images()]
        return {"prompt": text, "multi_modal_data": {"image": images}}

    def answer(self, question: Question) -> Answer:
        return self.answer_many([question])[0]

    def answer_many(self, questions: Sequence[Question]) -> list[Answer]:
        answers: list[Answer] = []
        requests: list[dict[str, Any] | Answer] = []
        for question in questions:
            try:
                requests.append(self.request(question))
            except (OSError, ValueError) as exc:
                requests.append(Answer(position=None, error=f"decode: {_error_line(exc)}", failed=True))
        ready = [r for r in requests if not isinstance(r, Answer)]
        outputs = iter(self.engine.generate(ready, self.sampling_params, use_tqdm=False) if ready else [])
        for request, question in zip(requests, questions):
            if isinstance(request, Answer):
                answers.append(request)
                continue
            top = next(outputs).outputs[0].logprobs[0]  # token id -> Logprob of the first generated position
            scores = [float(top[i].logprob) if i in top else -math.inf for i in self.letter_ids[: len(question.options)]]
            finite = [s for s in scores if math.isfinite(s)]
            best = max(range(len(scores)), key=lambda i: (scores[i], -i)) if finite else None
            answers.append(Answer(position=best, scores=scores))
        return answers


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
