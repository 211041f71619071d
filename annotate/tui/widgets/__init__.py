"""Widgets of the coding app; each draws part of a coding session."""
