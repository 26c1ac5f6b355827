"""Plotly figures and the HTML run report."""
