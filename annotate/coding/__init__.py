"""Coding: a coder's session over a sample (what to show next, answers, revisits), without any UI,
and the reproducible samples (and seeds) the coders work through."""
