"""GenEval-style checks of a prompt's spec on one image, from an open-vocabulary detector's boxes.

The checks follow GenEval's ``evaluate_images.py``: for each required object, the detections of
its class above the threshold (one label per box, class-wise NMS) must number at least the
required count; the top ``count`` of them carry the colour (the colour named most often by the
colour classifier) and the position checks; an ``exclude`` entry fails at ``count`` or more
detections. Choices that differ from the public drift scorer, on purpose:

- **Position** uses GenEval's relation: the centre offset shrunk by 0.1 x the summed box sizes
  per axis, then divided by the offset's length, so the 0.5 cut is a direction (about 60° either
  side of the axis) at any image size. The public scorer compares the shrunk offset in pixels
  with 0.5, which calls two boxes half a pixel apart "left of".
- **Colour** is classified on the object's crop (CLIP zero-shot over GenEval's ten colours, or a
  pixel classifier), as GenEval does, rather than folded into the detector's query, which turns
  a colour error into a missing object.
- **Every prompt is scored and a missing image counts as a failure** (the public scorer stops
  after four prompts and drops what it cannot find).

Each failed check carries a reason and a failure kind: ``missing`` (nothing where the object
should be), ``misidentified`` (another vocabulary object detected instead), ``count``,
``colour``, ``position``; ``hallucinated`` marks objects outside the spec (it does not fail the
check, as in GenEval). ``style`` comes from the embeddings (see ``metrics``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from vrforge.runners.drift.inputs import GENEVAL_COLORS

POSITION_THRESHOLD = 0.1
NMS_IOU = 0.5
FAILURE_KINDS = ("missing", "misidentified", "count", "colour", "position", "hallucinated", "style")


@dataclass(frozen=True)
class Detection:
    label: str
    score: float
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels


class Detector(Protocol):
    def detect(self, images: Sequence[Image.Image], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        """For each image, its boxes labelled with one of that image's queries (class names)."""
        ...


class ColourClassifier(Protocol):
    def classify(self, crops: Sequence[Image.Image], classname: str) -> list[str]:
        """One of ``GENEVAL_COLORS`` per crop."""
        ...


@dataclass
class CheckResult:
    passed: bool
    reasons: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # failure kinds, in order of the requirements
    hallucinated: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reasons": self.reasons, "kinds": self.kinds, "hallucinated": self.hallucinated}


def relative_position(box_a: Sequence[float], box_b: Sequence[float], threshold: float = POSITION_THRESHOLD) -> set[str]:
    """Where A is relative to B (``left of`` / ``right of`` / ``above`` / ``below``), size-independent."""
    a, b = np.asarray(box_a, float).reshape(2, 2), np.asarray(box_b, float).reshape(2, 2)
    offset = a.mean(axis=0) - b.mean(axis=0)
    dims = np.abs(a[1] - a[0]) + np.abs(b[1] - b[0])
    revised = np.maximum(np.abs(offset) - threshold * dims, 0) * np.sign(offset)
    norm = float(np.linalg.norm(offset))
    if norm == 0 or np.all(np.abs(revised) < 1e-3):
        return set()
    dx, dy = revised / norm
    relations = set()
    if dx < -0.5:
        relations.add("left of")
    if dx > 0.5:
        relations.add("right of")
    if dy < -0.5:
        relations.add("above")
    if dy > 0.5:
        relations.add("below")
    return relations


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def nms(detections: Sequence[Detection], iou_threshold: float = NMS_IOU) -> list[Detection]:
    """Class-wise non-maximum suppression; the result is sorted by score (ties by box) for determinism."""
    ordered = sorted(detections, key=lambda d: (-d.score, d.label, d.box))
    kept: list[Detection] = []
    for det in ordered:
        if all(k.label != det.label or iou(k.box, det.box) <= iou_threshold for k in kept):
            kept.append(det)
    return kept


def spec_classes(spec: dict[str, Any]) -> list[str]:
    names = [req["class"] for req in spec["include"]] + [req["class"] for req in spec.get("exclude", [])]
    return list(dict.fromkeys(names))


def crop(image: Image.Image, box: Sequence[float]) -> Image.Image:
    width, height = image.size
    x0, y0 = max(0, int(np.floor(box[0]))), max(0, int(np.floor(box[1])))
    x1, y1 = min(width, max(x0 + 1, int(np.ceil(box[2])))), min(height, max(y0 + 1, int(np.ceil(box[3]))))
    return image.crop((x0, y0, x1, y1))


def check_spec(spec: dict[str, Any], image: Image.Image | None, detections: Sequence[Detection],
               colours: ColourClassifier | None, *, threshold: float = 0.1,
               hallucination_threshold: float | None = None) -> CheckResult:
    """Does ``image`` (with ``detections`` over the spec's classes and any vocabulary) satisfy ``spec``?"""
    if image is None:
        return CheckResult(False, ["no image at this step"], ["missing"])
    kept = [d for d in nms(detections) if d.score >= threshold]
    by_class: dict[str, list[Detection]] = {}
    for det in kept:
        by_class.setdefault(det.label, []).append(det)
    wanted = set(spec_classes(spec))
    others = sorted({d.label for d in kept if d.label not in wanted})
    result = CheckResult(True)

    def fail(reason: str, kind: str) -> None:
        result.passed = False
        result.reasons.append(reason)
        result.kinds.append(kind)

    matched: list[list[Detection] | None] = []
    for req in spec["include"]:
        name, count = req["class"], req.get("count", 1)
        found = by_class.get(name, [])
        if len(found) < count:
            if found:
                fail(f"expected {count} {name}, found {len(found)}", "count")
            elif others:
                fail(f"no {name}; found {', '.join(others)} instead", "misidentified")
            else:
                fail(f"no {name}", "missing")
            matched.append(None)
            continue
        found = found[:count]
        if "color" in req:
            if colours is None:
                raise ValueError("a spec with colours needs a colour classifier")
            named = colours.classify([crop(image, d.box) for d in found], name)
            if named.count(req["color"]) < count:
                fail(f"expected {req['color']} {name}, found {', '.join(named)}", "colour")
        if "position" in req:
            relation, target = req["position"]
            reference = matched[target]
            if reference is None:
                fail(f"no {spec['include'][target]['class']} for {name} to be {relation}", "missing")
            elif not all(relation in relative_position(d.box, r.box) for d in found for r in reference):
                fail(f"{name} not {relation} {spec['include'][target]['class']}", "position")
        matched.append(found)
    for req in spec.get("exclude", []):
        name, limit = req["class"], req.get("count", 1)
        found = by_class.get(name, [])
        if len(found) >= limit:
            fail(f"expected fewer than {limit} {name}, found {len(found)}", "count")
    cut = threshold if hallucination_threshold is None else hallucination_threshold
    result.hallucinated = sorted({d.label for d in kept if d.label not in wanted and d.score >= cut})
    return result


# --------------------------------------------------------------------------- colour classifiers

# Reference colours in sRGB; the pixel classifier takes the nearest in CIELAB.
_REFERENCE_RGB = {
    "red": (220, 30, 30), "orange": (245, 140, 20), "yellow": (240, 220, 30), "green": (40, 160, 50),
    "blue": (30, 70, 220), "purple": (130, 50, 170), "pink": (245, 150, 190), "brown": (120, 75, 35),
    "black": (15, 15, 15), "white": (245, 245, 245),
}


def _lab(rgb: np.ndarray) -> np.ndarray:
    srgb = rgb / 255.0
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


class PixelColourClassifier:
    """The named colour nearest (CIELAB) to the median of the crop's central half: no model, for drawn scenes."""

    def classify(self, crops: Sequence[Image.Image], classname: str) -> list[str]:
        names = list(_REFERENCE_RGB)
        references = _lab(np.array([_REFERENCE_RGB[n] for n in names], float))
        out = []
        for piece in crops:
            pixels = np.asarray(piece.convert("RGB"), float)
            h, w = pixels.shape[:2]
            centre = pixels[h // 4: max(h // 4 + 1, 3 * h // 4), w // 4: max(w // 4 + 1, 3 * w // 4)]
            median = np.median(centre.reshape(-1, 3), axis=0)
            out.append(names[int(np.argmin(np.linalg.norm(references - _lab(median), axis=1)))])
        return out


class ClipColourClassifier:
    """GenEval's colour check: CLIP zero-shot over "a photo of a {colour} {object}" on the object's crop."""

    def __init__(self, clip: Any) -> None:
        self.clip = clip
        self._prompts: dict[str, np.ndarray] = {}

    def classify(self, crops: Sequence[Image.Image], classname: str) -> list[str]:
        if not crops:
            return []
        if classname not in self._prompts:
            self._prompts[classname] = self.clip.embed_texts([f"a photo of a {c} {classname}" for c in GENEVAL_COLORS])
        scores = self.clip.embed_images(list(crops)) @ self._prompts[classname].T
        return [GENEVAL_COLORS[int(i)] for i in np.argmax(scores, axis=1)]


# --------------------------------------------------------------------------- OWLv2


class Owlv2Detector:
    """OWLv2 (``Owlv2ForObjectDetection``) through transformers: text queries "a photo of a {class}"."""

    def __init__(self, model: str = "google/owlv2-base-patch16-ensemble", *, device: str = "auto",
                 local_files_only: bool = False, threshold: float = 0.1, batch_size: int = 8) -> None:
        self.model_id, self.device_name, self.local_files_only = model, device, local_files_only
        self.threshold, self.batch_size = threshold, batch_size
        self.model: Any = None

    def describe(self) -> dict[str, Any]:
        return {"detector": "owlv2", "model": self.model_id, "threshold": self.threshold, "query": "a photo of a {class}"}

    def load(self) -> None:
        if self.model is not None:
            return
        import torch
        from transformers import Owlv2ForObjectDetection, Owlv2Processor

        from vrforge.runners.drift.embed import load_error, resolve_device

        self._torch = torch
        self.device = resolve_device(self.device_name)
        try:
            self.processor = Owlv2Processor.from_pretrained(self.model_id, local_files_only=self.local_files_only)
            self.model = Owlv2ForObjectDetection.from_pretrained(self.model_id, local_files_only=self.local_files_only)
        except Exception as exc:  # noqa: BLE001 - one line for the user
            raise load_error("detector", self.model_id, exc) from None
        self.model.to(self.device).eval()

    def detect(self, images: Sequence[Image.Image], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        self.load()
        torch = self._torch
        out: list[list[Detection]] = []
        for start in range(0, len(images), self.batch_size):
            batch = [img.convert("RGB") for img in images[start:start + self.batch_size]]
            names = [list(q) for q in queries[start:start + self.batch_size]]
            texts = [[f"a photo of a {n}" for n in q] for q in names]
            inputs = self.processor(text=texts, images=batch, return_tensors="pt").to(self.device)
            with torch.inference_mode():
                outputs = self.model(**inputs)
            # (height, width): OWLv2 pads to a square and its post-processing scales by the longer side.
            sizes = [(img.size[1], img.size[0]) for img in batch]
            results = self.processor.image_processor.post_process_object_detection(outputs, threshold=self.threshold,
                                                                                   target_sizes=sizes)
            for img, q, res in zip(batch, names, results):
                width, height = img.size
                dets = []
                for score, label, box in zip(res["scores"].tolist(), res["labels"].tolist(), res["boxes"].tolist()):
                    x0, y0, x1, y1 = (max(0.0, box[0]), max(0.0, box[1]), min(float(width), box[2]), min(float(height), box[3]))
                    if x1 > x0 and y1 > y0 and 0 <= label < len(q):
                        dets.append(Detection(q[label], round(float(score), 6), (x0, y0, x1, y1)))
                out.append(dets)
        return out


def vocabulary(path: Path | None) -> list[str]:
    """The object names queried besides the spec's (GenEval's 80 names, one a line), for misidentified/hallucinated."""
    if path is None:
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
