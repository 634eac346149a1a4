"""Measurements, apart from the product: benchmarks, LoCoMo replays, load generation."""
