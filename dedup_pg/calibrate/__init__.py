"""Threshold calibration from the database's own documents (``dedup-pg calibrate``).

Fixed thresholds are a guess: a model change, a new kind of source or another
normaliser moves every score. What separates duplicates from the rest is read
from the data instead. A sample of recent arrivals is compared pairwise; each
document's *nearest neighbour* score is what a threshold acts on (an arrival is a
duplicate when its best match is close enough), and that distribution has two
modes on a de-duplicated news stream: reposts and light edits near identity, and
unrelated articles further away. The duplicate threshold goes at the upper edge
of the valley between them and the review band spans the valley floor; a
distribution without a clear second mode gets the current (or preset) thresholds
back, said as such.

Review outcomes are labelled pairs: a confirmed candidate is a duplicate, a
restored or dismissed one is not. Scoring each decided pair under every layer
gives precision and recall at each candidate threshold (biased towards hard pairs:
only pairs the engine flagged were ever decided).

Layers: ``simhash`` (Hamming distance of the stored 64-bit fingerprints; lower is
closer), ``containment`` (share of the smaller text's clauses found in the other,
as the engine's containment layer counts it), ``semantic`` (cosine of document
embeddings computed here for the sample with the chosen model).

The math has no I/O: ``scores`` (all-pairs distance matrices), ``valley`` (the
valley between two modes), ``layers`` (binning, suggested thresholds, band shares,
precision/recall, the report's dataclasses). ``sample`` reads the arrivals and the
review decisions, ``settings`` what is in force; ``run`` has :func:`calibrate`,
which puts them together; ``report`` (:func:`render_text`, :func:`to_json`) and
``plotting`` (:func:`plot`) show the result; ``audit`` has :func:`apply`, which
writes thresholds (each change recorded by the triggers on the settings tables),
:func:`revert`, which undoes an applied change set, and :func:`history`. Everything
public is importable from here.
"""

from __future__ import annotations

from ..errors import CalibrationError
from .audit import SETTING_NAMES, Change, apply, history, os_user, revert
from .layers import (
    LAYERS,
    SCALES,
    SIMHASH_MAX_DUPLICATE,
    SIMHASH_MAX_REVIEW,
    CalibrationReport,
    LayerReport,
    PRPoint,
    Scale,
    Thresholds,
    add_decisions,
    band_shares,
    layer_report,
    precision_recall,
    suggest,
)
from .plotting import plot
from .report import render_text, to_json
from .run import SEMANTIC_PRESETS, calibrate
from .sample import Decisions, Sample, import_labelled_pairs, read_decisions, read_sample
from .scores import (
    containment_scores,
    cosine_similarities,
    nearest_neighbours,
    popcount64,
    simhash_distances,
    upper_pairs,
)
from .settings import (
    default_model,
    effective_settings,
    model_row,
    simhash_distances_by_length,
    source_content_type,
)
from .valley import CLEAR_DEPTH, Valley, find_valley, smooth

__all__ = [
    "CLEAR_DEPTH",
    "LAYERS",
    "SCALES",
    "SEMANTIC_PRESETS",
    "SETTING_NAMES",
    "SIMHASH_MAX_DUPLICATE",
    "SIMHASH_MAX_REVIEW",
    "CalibrationError",
    "CalibrationReport",
    "Change",
    "Decisions",
    "LayerReport",
    "PRPoint",
    "Sample",
    "Scale",
    "Thresholds",
    "Valley",
    "add_decisions",
    "apply",
    "band_shares",
    "calibrate",
    "containment_scores",
    "cosine_similarities",
    "default_model",
    "effective_settings",
    "find_valley",
    "history",
    "import_labelled_pairs",
    "layer_report",
    "model_row",
    "nearest_neighbours",
    "os_user",
    "plot",
    "popcount64",
    "precision_recall",
    "read_decisions",
    "read_sample",
    "render_text",
    "revert",
    "simhash_distances",
    "simhash_distances_by_length",
    "smooth",
    "source_content_type",
    "suggest",
    "to_json",
    "upper_pairs",
]
