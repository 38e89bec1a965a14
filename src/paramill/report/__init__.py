"""Figures and tables for `snakemake --report`: plots of stage outcomes, provenance summaries."""
