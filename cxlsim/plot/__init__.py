"""Plotly figures: transfer curves, heat maps, topology pictures."""
