# paramill: paraphrase corpora from bitext and news tweets. See README.md.
# Rules live in rules/*.smk and call the `paramill` command line; no logic here.

configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/bitext.smk"


rule all:
    default_target: True
    input:
        f"{RESULTS}/bitext/stats.json",
