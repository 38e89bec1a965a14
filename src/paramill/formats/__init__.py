"""On-disk layouts of input data: one module per layout (``csvfile``, ``moses``, ``paranmt``,
...), the registry that finds them by name (:mod:`paramill.formats.registry`), the rows
their readers give (:mod:`paramill.formats.rows`) and what the readers share
(:mod:`paramill.formats.reading`). docs/architecture.md: how to add a layout."""
