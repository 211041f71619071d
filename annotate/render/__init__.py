"""Rendering: results as a terminal table, Markdown, CSV or JSON, fitted to the width without
splitting a word; the consoles and the one output writer; untrusted text shown safely."""
