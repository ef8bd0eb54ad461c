"""Report plots (matplotlib, Agg backend): the perturbation ladder and the layer sweep with mediation."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from vrforge.fileio import write_bytes_atomic
from vrforge.runners.reliance import perturb


def _save(figure: Any, path: Path) -> None:
    buffer = io.BytesIO()
    # A fixed Software entry keeps the bytes free of the matplotlib version.
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    write_bytes_atomic(path, buffer.getvalue())


def plot_ladder(report: dict[str, Any], path: Path) -> None:
    """VSS against strength per perturbation family (a line per question type); single-rung families as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = report["settings"]["perturbations"]
    families: dict[str, list[tuple[int | None, str]]] = {}
    for name in names:
        family, strength = perturb.split_name(name)
        families.setdefault(family, []).append((strength, name))
    graded = [f for f, rungs in families.items() if rungs[0][0] is not None]
    single = [rungs[0][1] for f, rungs in families.items() if rungs[0][0] is None]
    panels = len(graded) + (1 if single else 0)
    figure, axes = plt.subplots(1, max(panels, 1), figsize=(4 * max(panels, 1), 3.4), squeeze=False)
    types = list(report["per_type"])
    for axis, family in zip(axes[0], graded):
        for qtype in types:
            vss = report["per_type"][qtype]["vss"]
            points = [(s, vss[n]) for s, n in families[family] if vss.get(n) is not None]
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=qtype)
        axis.set_title(family)
        axis.set_xlabel({"blur": "radius (px)", "noise": "sigma (levels)", "occlusion": "occluded (%)"}.get(family, "strength"))
        axis.set_ylabel("VSS (JS divergence, bits)")
        axis.set_ylim(0, 1)
    if single:
        axis = axes[0][len(graded)]
        width = 0.8 / max(len(types), 1)
        for k, qtype in enumerate(types):
            vss = report["per_type"][qtype]["vss"]
            axis.bar([i + k * width for i in range(len(single))], [vss.get(n) or 0 for n in single], width, label=qtype)
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(single))], single)
        axis.set_title("whole-image")
        axis.set_ylim(0, 1)
    axes[0][0].legend(fontsize=7)
    figure.suptitle(f"Perturbation ladder: {report['model'].get('model')}")
    figure.tight_layout()
    _save(figure, path)
    plt.close(figure)


def plot_layers(report: dict[str, Any], path: Path) -> None:
    """Per question type: JS divergence with noise at each hidden index, and the mediation indirect effect."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(9, 3.4), squeeze=False)
    for qtype, entry in report["internals"].items():
        axes[0][0].plot(range(len(entry["layer_sweep"])), entry["layer_sweep"], marker="o", label=qtype)
        if "mediation" in entry:
            effects = entry["mediation"]["indirect_effect"]
            axes[0][1].plot(range(len(effects)), effects, marker="o", label=qtype)
    axes[0][0].set_title("noise at the visual tokens")
    axes[0][0].set_xlabel("hidden index (0 = LM input)")
    axes[0][0].set_ylabel("JS divergence from clean (bits)")
    axes[0][1].set_title("causal mediation (counterfactual patched in)")
    axes[0][1].set_xlabel("hidden index (0 = LM input)")
    axes[0][1].set_ylabel("indirect effect on P(cf answer)")
    axes[0][1].axhline(0, color="grey", linewidth=0.5)
    from matplotlib.ticker import MaxNLocator

    for axis in axes[0]:
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].legend(fontsize=7)
    figure.suptitle(f"Layer sweep: {report['model'].get('model')}")
    figure.tight_layout()
    _save(figure, path)
    plt.close(figure)
