"""The histograms with the thresholds marked, as a PNG (``--plot``; matplotlib)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import CalibrationError
from .layers import CalibrationReport
from .valley import smooth


def plot(report: CalibrationReport, path: str | Path, title: str | None = None) -> Path:
    """Histograms per layer (all pairs, log scale; nearest neighbours with the
    smoothed curve), suggested thresholds as solid lines, current ones dashed.
    Needs matplotlib (extra ``calibrate``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise CalibrationError(
            "the plot needs matplotlib: pip install 'pg-text-dedup[calibrate]' (in a checkout: pip install '.[calibrate]')"
        ) from exc
    layers = list(report.layers.values())
    fig, axes = plt.subplots(len(layers), 2, figsize=(11, 3.2 * len(layers)), squeeze=False)
    for row, layer in zip(axes, layers, strict=True):
        scale = layer.scale()
        centers = scale.centers()
        width = 1.0 if layer.lower_is_closer else float(scale.edges[1] - scale.edges[0])
        for ax, counts, what in (
            (row[0], layer.pair_counts, f"all {len(layer.pair_scores):,} pairs"),
            (
                row[1],
                layer.nn_counts,
                f"nearest neighbour of each of {len(layer.nn_scores):,} documents",
            ),
        ):
            ax.bar(centers, counts, width=width * 0.9, color="#7a9cc6", edgecolor="none")
            if counts is layer.nn_counts:
                ax.plot(centers, smooth(counts, scale.sigma), color="#333333", lw=1)
            else:
                ax.set_yscale("log")
            for t, style, label in (
                (layer.suggested, "-", "suggested"),
                (layer.current, "--", f"current ({layer.current_from})"),
            ):
                ax.axvline(
                    t.duplicate, color="#c0392b", ls=style, lw=1.2, label=f"{label} duplicate"
                )
                ax.axvline(t.review, color="#e67e22", ls=style, lw=1.2, label=f"{label} review")
            ax.set_title(f"{layer.layer}: {what}", fontsize=9)
            ax.set_xlabel(f"{layer.unit}" + (" (lower = closer)" if layer.lower_is_closer else ""))
            if layer.lower_is_closer:
                nz = np.nonzero(counts)[0]
                hi = float(centers[nz].max()) + 1 if len(nz) else 64
                ax.set_xlim(-0.5, max(hi, layer.suggested.review + 2))
            else:
                nz = np.nonzero(counts)[0]
                lo = float(centers[nz].min()) - 0.02 if len(nz) else 0
                ax.set_xlim(max(0.0, min(lo, layer.current.review - 0.05)), 1.005)
        row[1].legend(fontsize=7, loc="upper left" if not layer.lower_is_closer else "upper right")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
