"""Sweeps: a grid of settings over scenarios, variants and seeds, one resumable row per run."""
