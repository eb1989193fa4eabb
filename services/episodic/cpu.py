"""Sizes from which the layer's CPU-bound work (text analysis, segmentation) leaves the event loop.

The move itself is :func:`hindsight.runtime.offload.off_loop`, shared by every layer.

A hop to a thread costs about 0.2 ms here (measured, see docs/episodic.md), while analysing text
costs about 1 µs per character and segmenting a turn about 0.1 ms (0.4 ms with 512-d vectors): work
smaller than the thresholds below runs inline, where the hop would cost more than the wait it saves.
Threads still share the GIL, but the loop gets it back every switch interval (5 ms) instead of
waiting for the whole batch.
"""

from __future__ import annotations

MIN_CHARS = 2048
"""Text to analyse (in all) from which analysis runs in a thread: about 2 ms of work."""
MIN_TURNS = 8
"""Turns from which segmentation (similarities, cuts, rule extraction) runs in a thread."""
