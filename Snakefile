# paramill: paraphrase corpora from bitext and news tweets. See README.md.
# Rules live in rules/*.smk and call the `paramill` command line; no logic here.

configfile: "config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/bitext.smk"
include: "rules/nmt.smk"
include: "rules/filters.smk"
include: "rules/embed.smk"
include: "rules/twitter.smk"
include: "rules/lexicon.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        f"{RESULTS}/bitext/stats.json",
        f"{RESULTS}/nmt/backtranslation.json",
        optional_targets(),
        f"{WORK}/nmt/en-cs/ct2",
        expand(f"{RESULTS}/corpus/{{selection}}/datasheet.md", selection=selection_names()),
        expand(f"{RESULTS}/embed/{{model}}/sts.tsv", model=list(config["embed"]["models"])),
        f"{RESULTS}/report/bitext_outcomes.png",
        f"{RESULTS}/report/provenance.html",
