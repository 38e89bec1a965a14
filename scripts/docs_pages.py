"""The manual's generated pages, written by mkdocs-gen-files at build time (mkdocs.yml):
the configuration reference from the schema, the command-line reference from the command
line, the input formats from the formats registry. Never edited by hand: `make docs`."""

import mkdocs_gen_files

from paramill import cli
from paramill import peek
from paramill import schema

PAGES = {
    "configuration.md": schema.reference_page,
    "cli.md": cli.reference_page,
    "formats.md": peek.formats_page,
}

for name, page in PAGES.items():
    with mkdocs_gen_files.open(name, "w") as out:
        out.write(page())
