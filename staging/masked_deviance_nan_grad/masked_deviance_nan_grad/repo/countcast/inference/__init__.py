"""Serving side: exporting a night's ensemble and predicting with an export."""
