"""Probes inside a transformers VLM: does the answer depend on the visual tokens, and where?

Plain torch forward hooks, on three kinds of site:

- ``encoder``: the vision encoder's output as it enters the projector (a forward pre-hook on the
  projector: ``multi_modal_projector`` in LLaVA-style models, ``visual.merger`` in Qwen2-VL);
- ``projector``: the projector's output (the visual tokens the language model receives);
- hidden index ``i`` of the language model at the visual-token positions: 0 is the input of the
  first decoder layer, ``i >= 1`` the output of decoder layer ``i - 1`` (as in ``hidden_states``).

Noise is calibrated: its standard deviation is ``noise_scale`` times the standard deviation of
the clean activations at that site (the clean run of the same item), drawn from a seeded torch
generator. The layer sweep adds it at one hidden index at a time (one batch row per index) and
records the Jensen-Shannon divergence of the answer distribution from the clean one.

Causal mediation: the counterfactual image's hidden states at the visual-token positions are
patched into the original run at one hidden index (one batch row per index, plus a row patched
at every index); the indirect effect at index i is P_patched(counterfactual answer) -
P_original(counterfactual answer), the total effect P_counterfactual - P_original of the same.
Patching needs the two runs' visual tokens at the same positions; otherwise it is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vrforge.errors import UserError
from vrforge.runners.reliance.backends import Request, TransformersScorer
from vrforge.runners.reliance.metrics import js_divergence

PROJECTOR_NAMES = ("multi_modal_projector", "visual.merger", "mm_projector", "connector")


class InternalsError(UserError):
    """The model's layout is not one the probes know, or two runs cannot be aligned: one line."""


@dataclass
class Sites:
    projector: Any
    layers: Any  # the language model's decoder layers (a ModuleList)
    image_token_id: int


def locate(model: Any) -> Sites:
    """The projector, the language model's decoder layers and the image token id of a VLM."""
    modules = dict(model.named_modules())
    projector = next((m for name, m in modules.items() for key in PROJECTOR_NAMES if name == key or name.endswith("." + key)), None)
    layers = next((m for name, m in modules.items() if name.endswith("language_model.layers")), None)
    if layers is None:
        layers = next((m for name, m in modules.items() if name.endswith("model.layers") and "vision" not in name
                       and "visual" not in name), None)
    config = model.config
    token = getattr(config, "image_token_id", None)
    token = getattr(config, "image_token_index", None) if token is None else token
    if projector is None or layers is None or token is None:
        missing = [what for what, found in (("projector", projector), ("decoder layers", layers), ("image token id", token))
                   if found is None]
        raise InternalsError(f"{type(model).__name__}: cannot find its {', '.join(missing)} (internals know LLaVA- and "
                             "Qwen2-VL-style models)")
    return Sites(projector=projector, layers=layers, image_token_id=int(token))


def _first(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


def _replace_first(output: Any, value: Any) -> Any:
    return (value, *output[1:]) if isinstance(output, tuple) else value


class Probe:
    """Hooks on one model for the duration of a ``with`` block; ``edit(index, tensor) -> tensor`` changes hidden index i."""

    def __init__(self, scorer: TransformersScorer) -> None:
        scorer.load()
        self.scorer = scorer
        self.model = scorer.model
        self.sites = locate(self.model)
        self.torch = scorer.torch

    @property
    def n_hidden(self) -> int:
        return len(self.sites.layers) + 1

    def run(self, inputs: Any, n_options: int, *, hidden: dict[int, Callable[[Any], Any]] | None = None,
            encoder: Callable[[Any], Any] | None = None, projector: Callable[[Any], Any] | None = None) -> list[list[float]]:
        """Answer distributions with the given edits applied (each edit gets the site's tensor and returns the new one)."""
        handles = []
        try:
            if encoder is not None:
                def pre(module, args, kwargs):
                    if args:
                        return (encoder(args[0]), *args[1:]), kwargs
                    key = next(iter(kwargs))
                    return args, {**kwargs, key: encoder(kwargs[key])}
                handles.append(self.sites.projector.register_forward_pre_hook(pre, with_kwargs=True))
            if projector is not None:
                handles.append(self.sites.projector.register_forward_hook(
                    lambda module, args, output: _replace_first(output, projector(_first(output)))))
            for index, edit in (hidden or {}).items():
                handles.append(self._hidden_hook(index, edit))
            return self.scorer.forward_probs(inputs, n_options)
        finally:
            for handle in handles:
                handle.remove()

    def _hidden_hook(self, index: int, edit: Callable[[Any], Any]) -> Any:
        layers = self.sites.layers
        if not 0 <= index < self.n_hidden:
            raise InternalsError(f"hidden index {index} out of range 0..{self.n_hidden - 1}")
        if index == 0:
            def pre(module, args, kwargs):
                if args:
                    return (edit(args[0]), *args[1:]), kwargs
                return args, {**kwargs, "hidden_states": edit(kwargs["hidden_states"])}
            return layers[0].register_forward_pre_hook(pre, with_kwargs=True)
        return layers[index - 1].register_forward_hook(lambda module, args, output: _replace_first(output, edit(_first(output))))

    def capture(self, inputs: Any) -> dict[int, Any]:
        """Every hidden index's states (clones), from one forward pass."""
        states: dict[int, Any] = {}

        def keep(index: int) -> Callable[[Any], Any]:
            def edit(tensor: Any) -> Any:
                states[index] = tensor.detach().clone()
                return tensor
            return edit

        self.run(inputs, 2, hidden={i: keep(i) for i in range(self.n_hidden)})
        return states

    def visual_positions(self, inputs: Any) -> Any:
        return inputs["input_ids"] == self.sites.image_token_id

    # ------------------------------------------------------------------------- the probes

    def site_effects(self, request: Request, *, noise_scale: float, seed: int) -> dict[str, float]:
        """JS divergence from the clean answer when the encoder output / projector output is zeroed or noised."""
        inputs = self.scorer.encode([request])
        n = request.n_options
        clean = self.run(inputs, n)[0]

        def edited(site: str, edit: Callable[[Any], Any]) -> list[float]:
            return (self.run(inputs, n, encoder=edit) if site == "encoder" else self.run(inputs, n, projector=edit))[0]

        out = {}
        for site in ("encoder", "projector"):
            out[f"{site}_zero"] = js_divergence(clean, edited(site, lambda t: self.torch.zeros_like(t)))
            out[f"{site}_noise"] = js_divergence(clean, edited(site, self._noiser(noise_scale, seed)))
        return out

    def _noiser(self, scale: float, seed: int, mask: Any = None) -> Callable[[Any], Any]:
        torch = self.torch

        def edit(tensor: Any) -> Any:
            generator = torch.Generator(device="cpu").manual_seed(seed)
            noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32).to(tensor.device, tensor.dtype)
            selected = tensor[mask] if mask is not None else tensor
            sigma = float(selected.float().std()) if selected.numel() > 1 else 0.0
            noise = noise * (scale * sigma)
            if mask is not None:
                noise = noise * mask.unsqueeze(-1).to(noise.dtype)
            return tensor + noise
        return edit

    def layer_sweep(self, request: Request, *, noise_scale: float, seed: int) -> list[float]:
        """JS divergence from the clean answer with calibrated noise at the visual tokens of hidden index i, for every i."""
        n_rows = self.n_hidden
        inputs = self.scorer.encode([request] * (n_rows + 1))
        positions = self.visual_positions(inputs)
        torch = self.torch
        edits = {}
        for index in range(n_rows):
            row = torch.zeros_like(positions)
            row[index + 1] = positions[index + 1]  # row 0 stays clean
            edits[index] = self._noiser(noise_scale, seed + index, row)
        probs = self.run(inputs, request.n_options, hidden=edits)
        return [js_divergence(probs[0], probs[index + 1]) for index in range(n_rows)]

    def mediation(self, request: Request, counterfactual: Request, cf_answer: int) -> dict[str, Any]:
        """Indirect effect on P(counterfactual answer) of patching the counterfactual's visual states at each hidden index."""
        n = request.n_options
        original_inputs = self.scorer.encode([request])
        cf_inputs = self.scorer.encode([counterfactual])
        self.check_alignment(original_inputs, cf_inputs)
        cf_states = self.capture(cf_inputs)
        cf_probs = self.run(cf_inputs, n)[0]
        n_rows = self.n_hidden + 2  # row 0 clean, rows 1..n_hidden one index each, the last every index
        inputs = self.scorer.encode([request] * n_rows)
        positions = self.visual_positions(inputs)
        torch = self.torch

        def patcher(index: int) -> Callable[[Any], Any]:
            def edit(tensor: Any) -> Any:
                rows = torch.zeros(n_rows, dtype=torch.bool, device=tensor.device)
                rows[index + 1] = True
                rows[-1] = True
                where = positions & rows.unsqueeze(1)
                patched = tensor.clone()
                donor = cf_states[index][0].to(tensor.dtype)
                for row in torch.nonzero(rows).flatten().tolist():
                    patched[row, where[row]] = donor[positions[row]]
                return patched
            return edit

        probs = self.run(inputs, n, hidden={i: patcher(i) for i in range(self.n_hidden)})
        base = probs[0][cf_answer]
        return {"total_effect": cf_probs[cf_answer] - base,
                "indirect_effect": [probs[i + 1][cf_answer] - base for i in range(self.n_hidden)],
                "all_layers_js_to_counterfactual": js_divergence(probs[-1], cf_probs),
                "original": probs[0], "counterfactual": cf_probs, "patched_all": probs[-1]}

    def check_alignment(self, original: Any, counterfactual: Any) -> None:
        a, b = self.visual_positions(original), self.visual_positions(counterfactual)
        if a.shape != b.shape or not bool((a == b).all()):
            raise InternalsError(f"token alignment: the original run has {int(a.sum())} visual tokens and the counterfactual "
                                 f"{int(b.sum())} (or at other positions); patching needs them aligned (give both images one size)")
