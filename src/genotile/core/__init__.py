"""Bit planes, encodings, metrics, tile plans and histograms: the algebra every workload shares (numpy only)."""
