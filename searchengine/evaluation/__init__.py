"""Measure sentence encoders: STS correlation, BEIR-style retrieval, embedding-space analysis."""
