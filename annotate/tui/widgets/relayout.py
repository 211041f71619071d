"""Re-measuring a widget whose content changed size."""

from __future__ import annotations

from textual.widget import Widget


def remeasure(widget: Widget) -> None:
    """Lay ``widget`` out again with its new content height.

    ``refresh(layout=True)`` alone is not enough when a layout is already pending from
    earlier in the same frame: Textual then keeps the box model it measured before the
    change (its cache key does not move), so a block of turns that grew is drawn with its
    old height and the turns at its end, those right before the item, are cut off.
    """
    widget._layout_updates += 1  # the box model's cache key (Textual 8 has no public way)
    widget.refresh(layout=True)
