"""The Textual coding app (`annotate code`): a thin layer over :mod:`annotate.coding.session`."""
