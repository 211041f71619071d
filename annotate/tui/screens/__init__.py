"""Screens of the coding app: the main coding screen and its modal helpers."""
