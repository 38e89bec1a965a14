# paramill: paraphrase corpora from bitext and news tweets. The manual: docs/.
# Rules live in rules/*.smk and call the `paramill` command line; no logic here.

from snakemake.utils import min_version

# the Snakemake pyproject.toml asks for (an older one fails here, saying which it needs)
min_version("9.27")

configfile: "config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"


container: CONTAINER  # used with --sdm apptainer only (docs/installation.md)

include: "rules/paths.smk"
include: "rules/bitext.smk"
include: "rules/pairs.smk"
include: "rules/nmt.smk"
include: "rules/filters.smk"
include: "rules/embed.smk"
include: "rules/twitter.smk"
include: "rules/lexicon.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        default_targets(),
        f"{RESULTS}/report/provenance.html",
