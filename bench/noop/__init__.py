"""Bench-only scheduled models whose handlers do nothing: what handling itself costs
(`python -m bench e2e`). Installed only under bench.settings."""
