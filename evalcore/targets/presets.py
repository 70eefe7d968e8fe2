"""Named starting points for a configuration: what a newcomer runs without configuring anything."""

from __future__ import annotations

from typing import NamedTuple

from evalcore.targets.target_config import TargetConfig


class Preset(NamedTuple):
    """A configuration with a name and a line saying what it is."""

    name: str
    label: str
    config: TargetConfig


# No embedding index to build and no model to call: a first campaign finishes in seconds.
QUICK_START = Preset("quick", "quick start (BM25 keyword retrieval, extractive answers)",
                     TargetConfig.of(retriever="bm25", generator="extractive"))
DEFAULTS = Preset("default", "default configuration (hybrid retrieval, extractive answers)", TargetConfig())
PRESETS = {preset.name: preset for preset in (QUICK_START, DEFAULTS)}
