"""Serving benchmarks: `searchengine serve` under load, the integrations, the encoder's lock."""
